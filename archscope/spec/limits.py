"""Input limits, stated once. Bad input is refused before any work is done on it.

Each bound is far above any real model or machine (the comment names the largest real value it
must admit, and the largest among the presets in model_specs/), and far below what would make
archscope hang, exhaust memory or crash in torch. Who enforces them: `fields.convert` checks
every integer key (YAML, --set, config.json) against INT_LIMITS, every number against
FLOAT_LIMITS and every list against LIST_LIMITS; `yaml_shape.check_yaml` checks the YAML limits
before a document is built; `ModelSpec.validate` checks LAYER_PICKS_MAX before the per-layer
plan is made; archscope/cli/options.py turns the option limits into the ranges `--help` shows;
archscope/reads.py reads input files within the file limits. Raising a bound is a one-line
change here; tests/spec/test_hostile_specs.py checks the presets all fit.
"""

from __future__ import annotations

from archscope.errors import MESSAGE_MAX, QUOTE_MAX, quote

WHERE = "archscope/spec/limits.py"  # named in every message that cites a limit

# The largest value each integer spec key admits (keyed by the field name, wherever it sits).
INT_LIMITS: dict[str, int] = {
    # Decoder layers: the deepest public decoders have ~128 (Llama 3.1 405B: 126; presets:
    # GPT-3 175B, 96); DeepNet trained 1,000. Work is per layer (the plan, the estimators,
    # `show`'s meta-device build: ~4 ms a layer), so 4,096 would make `show` take ~20 s.
    "n_layers": 1_024,
    "mtp_layers": 1_024,  # MTP modules: decoder layers too
    # Residual width: the widest public decoders are ~20K (Llama 3.1 405B: 16,384; MT-NLG:
    # 20,480; presets: GPT-3, 12,288).
    "d_model": 65_536,
    # Vocabulary: 2**22 (~4.2M); the largest public vocabulary is Gemma 3's 262,144 (presets:
    # Llama 3, 128,256).
    "vocab_size": 4_194_304,
    # Context: 2**27 tokens (134M); the longest public context is Llama 4 Scout's 10M (presets:
    # DeepSeek-V2, 163,840). A window and RoPE's original context are contexts too.
    "max_seq_len": 134_217_728,
    "original_max_seq_len": 134_217_728,
    "window": 134_217_728,  # Gemma 2/3, Mistral: 4,096
    "chunk": 134_217_728,  # Llama 4: 8,192
    "temperature_floor": 134_217_728,  # Llama 4's floor_scale, in tokens: 8,192
    "temperature_offset": 134_217_728,  # a position offset: Llama 4's 1, Ministral 3's 0
    "topk": 134_217_728,  # keys a sparse-attention indexer selects: DeepSeek-V3.2, 2,048
    # Heads: public decoders have at most 128 query heads (DeepSeek-V3, Llama 3.1 405B;
    # presets: DeepSeek-V2, 128 query heads; GPT-3, 96 KV heads).
    "n_heads": 1_024,
    "n_kv_heads": 1_024,
    # Per-head widths: the widest public heads are 256 (Gemma; presets: 128, and MLA's
    # qk_nope 128 / qk_rope 64 / v 128).
    "head_dim": 4_096,
    "qk_nope_head_dim": 4_096,
    "qk_rope_head_dim": 4_096,
    "v_head_dim": 4_096,
    # MLA's low ranks are below d_model (DeepSeek-V3: q 1,536, kv 512; presets: the same).
    "q_lora_rank": 65_536,
    "kv_lora_rank": 65_536,
    # FFN hidden sizes: 2**20; the widest public is PaLM's 73,728 (Llama 3.1 405B: 53,248;
    # presets: GPT-3's d_ff 49,152, Mixtral's d_expert 14,336).
    "d_ff": 1_048_576,
    "d_expert": 1_048_576,
    # Experts: the most in a public decoder is Kimi K2's 384 (DeepSeek-V3: 256; presets:
    # DeepSeek-V2, 160 routed and 2 shared, 8 groups of which 3 are eligible).
    "n_experts": 16_384,
    "n_shared_experts": 1_024,
    "n_group": 16_384,
    "topk_group": 16_384,
    # Experts per token: public MoEs use at most 8 (DeepSeek-V3, Kimi K2; presets: Granite 8).
    "top_k": 1_024,
    # The shared experts' width (Granite 4.0-H's shared_intermediate_size: 1,024 in h-tiny).
    "d_shared": 1_048_576,
    # The routed experts' latent width (Nemotron-H's moe_latent_size), below d_model.
    "d_latent": 1_048_576,
    # State mixers (Mamba-2: Nemotron-H's 128 heads of 64 with d_state 128 and 8 groups;
    # Gated DeltaNet: Qwen3-Next's 16 key / 32 value heads of 128; convs of 4 taps; scans in
    # chunks of 64 to 256 tokens).
    "d_state": 65_536,
    "n_groups": 1_024,
    "n_key_heads": 1_024,
    "n_value_heads": 1_024,
    "key_head_dim": 4_096,
    "value_head_dim": 4_096,
    "conv_kernel": 1_024,
    "chunk_size": 1_048_576,
    "width": 65_536,  # the short conv's channels (LFM2: hidden_size), d_model's bound
    "d_inner": 262_144,  # Mamba-1's inner width (Falcon-Mamba 7B: 8,192; 4 x d_model's bound)
    "lru_width": 65_536,  # RecurrentGemma's LRU width (9B: 4,096), d_model's bound
    "dt_rank": 65_536,  # Mamba-1's dt projection rank (Falcon-Mamba 7B: 256)
    "block_size": 1_048_576,  # lightning attention's blocks (MiniMax-01: 256), as chunk_size
    # A layer index in `layers[K].select`: below n_layers (checked against the model later).
    "select": 1_024,
    # shared blocks (spec/shared_blocks.py): a layer index, as `select`; blocks and adapter
    # rank bounded as layers and widths
    "at": 1_024,
    "copies": 1_024,
    "adapter_rank": 1_048_576,
}
# An integer key missing from INT_LIMITS (a field added later): still far from any overflow.
FALLBACK_INT_MAX = 2**31 - 1

# The most entries a list key admits.
LIST_LIMITS: dict[str, int] = {
    # Per-layer overrides: one per layer, as a spec whose every layer differs needs (OpenELM:
    # 36 layers, all different); presets use at most 1.
    "layers": 1_024,
    "select": 1_024,  # indices in one override's list: at most every layer
    "at": 1_024,  # the layers that run a shared block: at most every layer
}
# Layers picked by all the `layers` overrides together: each layer patched 16 times at the
# largest n_layers (presets: 48, GPT-3's "1::2"). Bounds the plan's work to ~16K patches.
LAYER_PICKS_MAX = 16_384

# YAML documents (specs, --set values, claims files).
YAML_BYTES_MAX = 1_048_576  # 1 MiB; the largest preset is 2.4 KB, the largest claims file 56 KB
# Nested mappings/lists: presets nest 4 deep (layers -> list -> override -> ffn), claims
# files 4. Checked on the event stream, before the document is composed, so libyaml's
# recursive composer never sees a deep document (it overflows the C stack at ~40,000).
YAML_DEPTH_MAX = 64
# Nodes with aliases expanded (an alias counts as a copy of what it names, as the conversion
# walks it): presets have ~100, the largest claims file ~4,900. Stops "billion laughs".
YAML_NODES_MAX = 100_000
EXTENDS_MAX = 16  # `extends` chain length; presets use 0 or 1

# Numbers (floats): |value| within [smallest, largest] unless it is 0 (whether 0, or a sign, is
# allowed is each class's own `validate`). A float past these is no model's, and past them
# torch's fp32 and bf16 overflow or underflow (e.g. RoPE's theta ** (-2i/d) for theta 1e300).
FLOAT_LIMITS: dict[str, tuple[float, float]] = {
    # Ling's KDA forget-gate floor (bailing_hybrid: a negative log-decay bound, -5 by default;
    # its sign is KimiDeltaSpec.validate's)
    "gate_lower_bound": (1e-6, 1e6),
    "theta": (1.0, 1e12),  # RoPE's base: presets 10,000 to 10,000,000 (Qwen3-Next)
    # RoPE scaling: factors 8 to 40 (presets), YaRN's betas 1 and 32, mscale 0.707 and 1
    "factor": (1e-3, 1e4), "low_freq_factor": (1e-3, 1e4), "high_freq_factor": (1e-3, 1e4),
    "beta_fast": (1e-3, 1e4), "beta_slow": (1e-3, 1e4),
    "mscale": (1e-3, 1e3), "mscale_all_dim": (1e-3, 1e3),
    # Granite's multipliers: 0.0078125 (attention) to 73.3 (embedding); logits 1 to 16
    "embedding": (1e-6, 1e6), "attention": (1e-6, 1e6), "residual": (1e-6, 1e6),
    "logits": (1e-6, 1e6),
    "skip": (1e-6, 1e6),  # MiniMax-01's DeepNorm alpha: 3.56
    # Falcon-H1's µP multipliers (the published 0.5B's: 0.24 to 5.7), around each sublayer and
    # over Mamba-2's in_proj outputs
    "attention_in": (1e-6, 1e6), "attention_out": (1e-6, 1e6), "mixer_in": (1e-6, 1e6),
    "mixer_out": (1e-6, 1e6), "ffn_gate": (1e-6, 1e6), "ffn_out": (1e-6, 1e6),
    "proj_multipliers": (1e-6, 1e6),
    "eps": (1e-12, 1.0),  # norms: 1e-6 and 1e-5
    "dt_limit_min": (1e-12, 1e6), "dt_limit_max": (1e-12, 1e6),  # Mamba-2's dt clamp: 0.001
    "dt_bc_norm_eps": (1e-12, 1.0),  # Mamba-1's dt/B/C norms (Falcon-Mamba, Jamba): 1e-6
    "limit": (1e-3, 1e6),  # gpt-oss's SwiGLU clamp: 7
    "scaling_factor": (1e-6, 1e6),  # DeepSeek's routed_scaling_factor: 1 to 16
    "temperature_scale": (1e-6, 1e6),  # Llama 4's attention temperature: 0.1
    "rotary_fraction": (1e-3, 1.0),  # partial RoPE: 0.25, 0.5
    # LongRoPE (Phi-4-mini): per-pair factors 1 to ~60, an attention factor ~1.19
    "short_factor": (1e-3, 1e4), "long_factor": (1e-3, 1e4), "attention_factor": (1e-3, 1e3),
    "softcap": (1e-3, 1e6),  # Gemma 2's logit soft caps: 50 (attention), 30 (final)
    "clip_qkv": (1e-3, 1e6),  # OLMo's and DBRX's q/k/v clamp: 8
    "jitter_eps": (1e-6, 1.0),  # Phi-3.5-MoE's sparsemixer: 0.01
}
FALLBACK_FLOAT = (1e-30, 1e30)  # a number key missing from FLOAT_LIMITS (a field added later)

# --- Command-line options: archscope/cli/options.py makes each a range `--help` shows.
# Context lengths (--seq-len, --context, --prompt-len, --new-tokens): the longest context a
# spec admits (max_seq_len above). Past a model's own context, compare and fit compute and flag
# it, profile refuses it and generate stops there.
CONTEXT_MAX = INT_LIMITS["max_seq_len"]
# Sequences in a batch (--batch): 2**20; serving engines batch a few hundred to a few thousand
# (vLLM's max_num_seqs: 256 to 1,024).
BATCH_MAX = 1_048_576
# GPUs (--n-gpus): 2**20; the largest clusters hold ~10**5.
GPUS_MAX = 1_048_576
# Tensor / expert parallel ranks (--tp, --ep): one fast domain holds 8 to 72 GPUs (NVL72).
RANKS_MAX = 1_024
# `plan` builds every rank's layers in turn, ~30 ms each on meta (deepseek-v3 --tp 8 --ep 8,
# 61 layers: 488 in 18 s): --tp x n_layers at most this (fit --tp prices any split instead).
PLAN_LAYERS_MAX = 1_024
# `profile --tp N` on the CPU starts N processes, each with its copy of torch and its shards:
# ranks may share a CPU, this many each at most.
CPU_RANKS_PER_CPU = 4
# Timed runs of profile (--repeats) and untimed ones before them (--warmup).
REPEATS_MAX = 1_000
WARMUP_MAX = 100
SEED_MAX = 2**64 - 1  # --seed: what torch's generators take
# Sampling (generate): temperature 0 (greedy) to 100 (past ~10 the draw is all but uniform);
# top-k at most a vocabulary.
TEMPERATURE_MAX = 100.0
TOP_K_MAX = INT_LIMITS["vocab_size"]
# A chat template is a program (jinja2): one that runs longer than this is refused.
CHAT_TEMPLATE_SECONDS = 5.0
# A prompt's characters (as given, or as the chat template renders it): a context of 2**24
# tokens at the usual ~4 characters a token, far beyond any command line (~2 MB).
PROMPT_CHARS_MAX = 16_777_216

# --- Input files (archscope/reads.py): regular files only, at most these bytes.
# check-claims documents: the explainers are 20 to 120 KB; extraction is linear, ~1 s per MB.
DOCUMENT_BYTES_MAX = 8 * 1024 * 1024
# A checkpoint's JSON (model.safetensors.index.json: DeepSeek-V3's is 9 MB for 91K tensors;
# generation_config.json: a few hundred bytes).
CHECKPOINT_JSON_BYTES_MAX = 64 * 1024 * 1024
# report --data: profile and benchmark records (a few KB each; the largest committed, 60 KB).
DATA_JSON_BYTES_MAX = 16 * 1024 * 1024
# JSON nesting: config.json nests 3 deep (text_config -> rope_parameters), records 4. Checked
# before parsing: Python's json module recurses and fails near 1,000 levels.
JSON_DEPTH_MAX = 64

# Messages (defined in archscope/errors.py, which every InputError can use): a quoted bad
# value is cut to QUOTE_MAX characters with "...", a whole message to MESSAGE_MAX.
__all__ = ["WHERE", "INT_LIMITS", "FLOAT_LIMITS", "LIST_LIMITS", "LAYER_PICKS_MAX",
           "YAML_BYTES_MAX", "YAML_DEPTH_MAX", "YAML_NODES_MAX", "EXTENDS_MAX", "QUOTE_MAX",
           "MESSAGE_MAX", "field_name", "int_limit_error", "float_limit_error",
           "list_limit_error"]


def field_name(key: str) -> str:
    """`layers[2].attention.n_heads` -> `n_heads`; `layers[0].select[3]` -> `select`."""
    last = key.rsplit(".", 1)[-1]
    return last.split("[", 1)[0]


def int_limit_error(key: str, value: int) -> str | None:
    """Why integer `value` at `key` is out of range, or None when it fits."""
    limit = INT_LIMITS.get(field_name(key), FALLBACK_INT_MAX)
    if -limit <= value <= limit:
        return None
    bound = f"{limit:,}" if value > 0 else f"-{limit:,}"
    return f"{quote(value)} is beyond the limit {bound} ({WHERE})"


def float_limit_error(key: str, value: float) -> str | None:
    """Why finite number `value` at `key` is out of range, or None when it fits (0 always)."""
    low, high = FLOAT_LIMITS.get(field_name(key), FALLBACK_FLOAT)
    if value == 0 or low <= abs(value) <= high:
        return None
    side = f"beyond the limit {high:g}" if abs(value) > high else f"below the limit {low:g}"
    return f"{quote(value)} is {side} in magnitude ({WHERE})"


def list_limit_error(key: str, length: int) -> str | None:
    limit = LIST_LIMITS.get(field_name(key))
    if limit is None or length <= limit:
        return None
    return f"{length:,} entries is beyond the limit {limit:,} ({WHERE})"
