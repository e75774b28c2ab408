"""Spec -> HF config.json: the spec's structure (never its name) picks the transformers class,
each written as its difference from Llama (the other direction is `hf_import`).

The output is read back with `hf_import` and compared with the spec; SpecError names the key
when that class would build a different network. What HF's schema cannot hold (name, source,
notes, a different spelling) goes under one extra key.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from archscope.errors import SpecError
from archscope.spec.hf_bamba import write_bamba
from archscope.spec.fields import from_mapping, to_mapping
from archscope.spec.hf_deepseek import write_deepseek_v2, write_deepseek_v3
from archscope.spec.hf_gemma3 import write_gemma3_text
from archscope.spec.hf_glm4_moe import write_glm4_moe
from archscope.spec.hf_gpt_oss import write_gpt_oss
from archscope.spec.hf_granitemoehybrid import write_granitemoehybrid
from archscope.spec.hf_import import EXTRA_KEY, READERS, mapping_from_raw
from archscope.spec.hf_keys import CLASS_OF
from archscope.spec.hf_llama4 import llama4_structure, to_llama4_text
from archscope.spec.hf_nemotron_h import write_nemotron_h
from archscope.spec.hf_qwen3_next import write_qwen3_next
from archscope.spec.hf_writers_base import HF_ACT, to_base, without
from archscope.spec.resolved import differences
from archscope.spec.schema import ModelSpec

# FFN kinds that no class written here has after a mixer in the same layer: kind -> why
_NO_HF_CLASS = {"relu2": "a squared-ReLU MLP in a layer with a mixer (transformers' NemotronH "
                         "builds one only as a layer of its own: `mixer: none`)"}


# a hybrid's class by its state mixer: Nemotron-H's layers are single blocks (a mixer or an
# FFN, never both); Granite 4.0-H's and Qwen3-Next's have both
_HYBRID = {"mamba2": ("granitemoehybrid", "nemotron_h"), "gated_deltanet": ("qwen3_next",) * 2}


def model_family(spec: ModelSpec) -> str:
    """The spec's architectural family: the transformers `model_type` it exports as, read off
    its structure (never its name), e.g. 'llama', 'gpt2', 'deepseek_v2', 'nemotron_h'."""
    return _family(spec)


def _family(s: ModelSpec) -> str:
    if s.mixer is not None or any(layer.attention is None or layer.ffn is None
                                  for layer in s.plan):
        single = any(layer.attention is None and layer.state is None or layer.ffn is None
                     for layer in s.plan)
        if not single and s.mixer.kind == "mamba2" and any(
                layer.attention and layer.attention.rotary_fraction for layer in s.plan):
            return "bamba"  # the one Mamba-2 hybrid whose attention rotates part of each head
        return _HYBRID[s.mixer.kind if s.mixer else "mamba2"][single]
    moe = [layer.ffn for layer in s.plan if layer.is_moe]
    mla = any(layer.attention.kind == "mla" for layer in s.plan)
    if s.position.kind == "learned" and s.norm.kind == "layernorm" and s.ffn.kind == "mlp":
        return "gpt2"  # GPT-3 too: transformers has no GPT-3 class
    if any(layer.attention.sinks for layer in s.plan):
        return "gpt_oss"  # only GptOss's attention has sinks
    if llama4_structure(s):  # adjacent-pair RoPE, chunks, L2 QK-norm, temperature, input weights
        return "llama4_text"
    if any(f.routing.method == "noaux_tc" or f.routing.scoring == "sigmoid" for f in moe) or \
            any(layer.attention.rotary_fraction for layer in s.plan):
        # sigmoid noaux_tc routers: DeepseekV3 (MLA), Glm4Moe (GQA, also the one partial RoPE)
        return "deepseek_v3" if mla else "glm4_moe"
    if (s.norm.position == "sandwich" or s.norm.unit_offset
            or any(layer.position != s.position for layer in s.plan)):
        return "gemma3_text"  # only Gemma 3's class has these (before multipliers: Granite's)
    if mla or any(f.shared_experts for f in moe):
        return "deepseek_v2"
    if any(layer.attention.fused_qkv or layer.ffn.fused_gate_up for layer in s.plan):
        return "phi3"  # only Phi-3's class fuses them (a spec with one fusion: the check names it)
    if s.norm.position == "output" or s.attention.qk_norm == "full":
        return "olmo2"
    if s.attention.qk_norm == "head":
        return "qwen3_moe" if moe else "qwen3"
    if any(not layer.attention.rope for layer in s.plan):
        return "smollm3"  # Llama + NoPE layers: only SmolLM3's class turns RoPE off per layer
    if moe:
        return "granitemoe" if s.multipliers else "mixtral"
    if s.multipliers:
        return "granite"
    if s.attention.bias and not s.attention.has_out_bias:
        return "qwen2"
    return "mistral" if any(layer.window for layer in s.plan) else "llama"


def _to_llama(s: ModelSpec) -> dict:
    a, f = s.attention, s.ffn
    # GeGLU is LlamaMLP's gated form with Gemma's activation (it reads back as swiglu with
    # gelu_tanh, the same network: see resolved._SAME_NETWORK; the extra key keeps `geglu`)
    act = "gelu_pytorch_tanh" if f.kind == "geglu" else HF_ACT[f.activation]
    return {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias, "intermediate_size": f.d_ff,
            "hidden_act": act, "mlp_bias": f.bias}


def _to_mistral(s: ModelSpec) -> dict:
    return {**without(_to_llama(s), "attention_bias", "mlp_bias"),
            "sliding_window": s.attention.window}


def _to_moe(s: ModelSpec) -> dict:
    return {"num_local_experts": s.ffn.n_experts, "num_experts_per_tok": s.ffn.top_k,
            "intermediate_size": s.ffn.d_expert}


def _to_mixtral(s: ModelSpec) -> dict:
    return {**_to_mistral(s), **_to_moe(s)}


def _to_granite(s: ModelSpec) -> dict:
    m = s.mults
    return {**_to_llama(s), "embedding_multiplier": m.embedding, "residual_multiplier": m.residual,
            "attention_multiplier": m.attention or 1 / math.sqrt(s.attention.qk_head_dim),
            "logits_scaling": m.logits}


def _to_granitemoe(s: ModelSpec) -> dict:
    return {**without(_to_granite(s), "mlp_bias"), **_to_moe(s)}


def _windows(s: ModelSpec) -> dict:
    """Qwen2/Qwen3's per-layer sliding window, as both layer_types and the older keys."""
    windows = [layer.window for layer in s.plan]
    window = next((w for w in windows if w is not None), None)
    return {"use_sliding_window": window is not None, "sliding_window": window,
            "max_window_layers": next((i for i, w in enumerate(windows) if w), s.n_layers),
            "layer_types": [layer.layer_type for layer in s.plan]}


def _to_qwen2(s: ModelSpec) -> dict:
    return {**without(_to_llama(s), "attention_bias", "mlp_bias"), **_windows(s)}


def _to_qwen3(s: ModelSpec) -> dict:  # Qwen2's windows, Llama's attention_bias (o_proj too)
    return {**without(_to_llama(s), "mlp_bias"), **_windows(s)}


def _to_qwen3_moe(s: ModelSpec) -> dict:
    """Qwen3's keys + the MoE's; dense layers as mlp_only_layers (decoder_sparse_step 1), and
    one window for every layer (Qwen3Moe has no layer_types)."""
    moe = next(layer.ffn for layer in s.plan if layer.is_moe)
    dense = [layer.index for layer in s.plan if not layer.is_moe]
    window = next((layer.window for layer in s.plan if layer.window), None)
    a = s.attention
    out = {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim, "attention_bias": a.bias,
           "hidden_act": HF_ACT[moe.activation], "num_experts": moe.n_experts,
           "num_experts_per_tok": moe.top_k, "moe_intermediate_size": moe.d_expert,
           "norm_topk_prob": moe.routing.normalize, "decoder_sparse_step": 1,
           "mlp_only_layers": dense, "use_sliding_window": window is not None,
           "sliding_window": window}
    if dense:  # else Qwen3MoeConfig's default, which no layer uses
        out["intermediate_size"] = s.plan[dense[0]].ffn.d_ff
    return out


def _to_smollm3(s: ModelSpec) -> dict:
    """Llama's keys + which layers rotate (no_rope_layers, 1 = RoPE) and the windowed layers
    as layer_types (SmolLM3's window: one size, on the layers marked sliding_attention)."""
    windows = [layer.window for layer in s.plan]
    window = next((w for w in windows if w is not None), None)
    # As Phi-3's: the class's default token ids (pad 128004) are out of range in a smaller
    # vocabulary, where nn.Embedding refuses the padding row; a spec has none, so say none.
    return {**_to_llama(s), "bos_token_id": None, "eos_token_id": None, "pad_token_id": None,
            "no_rope_layers": [int(layer.attention.rope) for layer in s.plan],
            "use_sliding_window": window is not None, "sliding_window": window,
            "layer_types": [layer.layer_type for layer in s.plan]}


def _to_olmo2(s: ModelSpec) -> dict:  # Llama's keys; the norms are implied by the class
    return without(_to_llama(s), "mlp_bias")


def _to_phi3(s: ModelSpec) -> dict:  # Mistral's keys; the fusions are implied by the class
    # A spec has no token ids, and Phi3Config's defaults (pad 32000, Phi-3's vocabulary) are
    # out of range below 32,001 tokens, where nn.Embedding refuses the padding row: say none.
    return {**_to_mistral(s), "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


def _to_gpt2(s: ModelSpec) -> dict:
    return {"vocab_size": s.vocab_size, "n_embd": s.d_model, "n_layer": s.n_layers,
            "n_head": s.attention.n_heads, "n_positions": s.max_seq_len, "n_inner": s.ffn.d_ff,
            "activation_function": HF_ACT[s.ffn.activation],
            "layer_norm_epsilon": s.norm.eps, "tie_word_embeddings": s.tie_embeddings}


WRITERS = {  # model_type: (HF architecture, writer)
    "llama": ("LlamaForCausalLM", _to_llama),
    "mistral": ("MistralForCausalLM", _to_mistral),
    "mixtral": ("MixtralForCausalLM", _to_mixtral),
    "qwen2": ("Qwen2ForCausalLM", _to_qwen2),
    "qwen3": ("Qwen3ForCausalLM", _to_qwen3),
    "qwen3_moe": ("Qwen3MoeForCausalLM", _to_qwen3_moe),
    "olmo2": ("Olmo2ForCausalLM", _to_olmo2),
    "smollm3": ("SmolLM3ForCausalLM", _to_smollm3),
    "phi3": ("Phi3ForCausalLM", _to_phi3),
    "granite": ("GraniteForCausalLM", _to_granite),
    "granitemoe": ("GraniteMoeForCausalLM", _to_granitemoe),
    "granitemoehybrid": ("GraniteMoeHybridForCausalLM", write_granitemoehybrid),
    "bamba": ("BambaForCausalLM", write_bamba),
    "deepseek_v2": ("DeepseekV2ForCausalLM", write_deepseek_v2),
    "deepseek_v3": ("DeepseekV3ForCausalLM", write_deepseek_v3),
    "glm4_moe": ("Glm4MoeForCausalLM", write_glm4_moe),
    "gpt_oss": ("GptOssForCausalLM", write_gpt_oss),
    "gemma3_text": ("Gemma3ForCausalLM", write_gemma3_text),
    "llama4_text": ("Llama4ForCausalLM", to_llama4_text),
    "gpt2": ("GPT2LMHeadModel", _to_gpt2),
    "nemotron_h": ("NemotronHForCausalLM", write_nemotron_h),
    "qwen3_next": ("Qwen3NextForCausalLM", write_qwen3_next),
}
# every model type is both read and written, except those read as another class (kimi_k2) or
# as a wrapper's text model (gemma3, llama4): they are written as that class
assert WRITERS.keys() == READERS.keys() - CLASS_OF.keys() - {"gemma3", "llama4"}


def spec_to_hf_config(spec: ModelSpec) -> dict:
    """The config.json (current `rope_parameters` layout) of the HF class that builds `spec`.

    Raises SpecError naming the key when that class would build a different network.
    """
    _check_ffn_kinds(spec)
    model_type = _family(spec)
    arch, writer = WRITERS[model_type]
    try:
        cfg = {"model_type": model_type, "architectures": [arch], **writer(spec)}
        back = from_mapping(ModelSpec, mapping_from_raw(cfg, model_type, spec.name, spec.source))
    except SpecError as err:
        raise SpecError(f"cannot be written as transformers' {model_type} config ({arch}): "
                        f"{err.detail}", where=spec.name, key=err.key) from None
    for key, layer, ours, theirs in differences(spec, back):
        at = "the model" if layer is None else f"layer {layer}"
        raise SpecError(f"transformers' {model_type} config ({arch}) cannot express this: "
                        f"{at} would get {theirs!r} instead of {ours!r}", where=spec.name, key=key)
    cfg[EXTRA_KEY] = {"name": spec.name, "source": spec.source,
                      **_diff(without(to_mapping(spec), "extends"), to_mapping(back))}
    return cfg


def _check_ffn_kinds(spec: ModelSpec) -> None:
    """Refuse, naming the key, an FFN kind that no class written here builds."""
    for layer in spec.plan:
        if layer.mixer is None or layer.ffn is None:
            continue
        if (what := _NO_HF_CLASS.get(layer.ffn.kind)) is not None:
            top = layer.ffn.kind == spec.ffn.kind
            raise SpecError(f"kind '{layer.ffn.kind}'{'' if top else f' (layer {layer.index})'} "
                            f"cannot be written as a transformers config: none of the classes "
                            f"archscope writes ({', '.join(WRITERS)}) has {what}",
                            where=spec.name, key="ffn.kind" if top else "layers")


def write_hf_config(spec: ModelSpec, folder: str | Path) -> Path:
    """Write `folder/config.json` for `spec` atomically (archscope.writes): the destination is
    checked first, and nothing is half-written if anything fails (an InputError names it)."""
    from archscope.writes import write_file_atomic

    text = json.dumps(spec_to_hf_config(spec), indent=2) + "\n"
    return write_file_atomic(Path(folder) / "config.json", text.encode("utf-8"),
                             what="HF config")


def _diff(ours: dict, theirs: dict) -> dict:
    """The patch that turns `theirs` into `ours` under `hf_import._merge` (None removes a key)."""
    out = {}
    for key in dict.fromkeys([*ours, *theirs]):
        a, b = ours.get(key), theirs.get(key)
        if a != b:
            out[key] = _diff(a, b) if isinstance(a, dict) and isinstance(b, dict) else a
    return out
