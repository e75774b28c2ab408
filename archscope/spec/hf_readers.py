"""The per-model-type readers of an HF config.json, each written as its difference from Llama
(hf_import checks the file and calls them; hf_export's writers mirror them).

Every key a reader uses goes through a checked accessor of `hf_keys.Keys` (type and range), and
what transformers itself refuses is refused here, naming the config.json key.
"""

from __future__ import annotations

from archscope.errors import quote
from archscope.spec.hf_bamba import read_bamba
from archscope.spec.hf_deepseek import read_deepseek_v2, read_deepseek_v3
from archscope.spec.hf_glm4_moe import read_glm4_moe
from archscope.spec.hf_gemma3 import read_gemma3, read_gemma3_text
from archscope.spec.hf_gpt_oss import read_gpt_oss
from archscope.spec.hf_granitemoehybrid import read_granitemoehybrid
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import (_act, _divides, _llama, _moe, _multipliers,
                                           _check_types, _patch, _select,
                                           _windows)
from archscope.spec.hf_llama4 import llama4, llama4_text
from archscope.spec.hf_nemotron_h import read_nemotron_h
from archscope.spec.hf_qwen3_next import read_qwen3_next


def _mistral(c: Keys) -> dict:  # Llama + a sliding window, no bias switches
    return _patch(_llama(c, bias=()), attention={"window": c.size("sliding_window", null=True)})


def _mixtral(c: Keys) -> dict:  # Mistral + MoE
    return _patch(_mistral(c), ffn=_moe(c))


def _granite(c: Keys) -> dict:  # Llama + multipliers
    return {**_llama(c), "multipliers": _multipliers(c)}


def _granitemoe(c: Keys) -> dict:  # Granite + MoE (no shared experts, no MLP bias switch)
    return _patch({**_llama(c, bias=("attention_bias",)), "multipliers": _multipliers(c)},
                  ffn=_moe(c))


def _qwen2(c: Keys) -> dict:  # Llama + q/k/v bias (o_proj none) + a window on some layers
    return _windows(c, _patch(_llama(c, bias=()), attention={"bias": True, "out_bias": False}))


def _qwen3(c: Keys) -> dict:  # Llama + per-head QK-norm + Qwen2's windows (its attention_bias
    # covers q/k/v and o_proj alike, as Llama's does; the MLP has no bias switch)
    return _windows(c, _patch(_llama(c, bias=("attention_bias",)), attention={"qk_norm": "head"}))


def _qwen3_moe(c: Keys) -> dict:  # Qwen3 + MoE on the layers decoder_sparse_step and
    # mlp_only_layers pick (the others Qwen3's dense MLP); one window for every layer, if any
    out = _patch(_llama(c, bias=("attention_bias",)), attention={"qk_norm": "head"})
    window = c.size("sliding_window", null=True)  # checked whether or not it is used
    if c.flag("use_sliding_window") and window is not None:
        out = _patch(out, attention={"window": window})
    n, experts = out["n_layers"], c.alias("num_experts", "num_local_experts")
    n_experts = c.size(experts, least=0)
    step, only = c.size("decoder_sparse_step"), c.indices("mlp_only_layers", n)
    # transformers' rule: MoE when i is not in mlp_only_layers, num_experts > 0 and
    # (i + 1) % decoder_sparse_step == 0
    dense = [i for i in range(n) if i in only or not n_experts or (i + 1) % step]
    if len(dense) == n:
        return out
    mlp = out["ffn"]
    out["ffn"] = {**_moe(c, experts=experts), "d_expert": c.size("moe_intermediate_size"),
                  "router": {"normalize": c.flag("norm_topk_prob")}}
    if dense:
        out["layers"] = [{"select": _select(dense), "ffn": mlp}]
    return out


def _olmo2(c: Keys) -> dict:  # Llama + full-width QK-norm + each sublayer's output normed
    return _patch(_llama(c, bias=("attention_bias",)), norm={"position": "output"},
                  attention={"qk_norm": "full"})


def _smollm3(c: Keys) -> dict:  # Llama + NoPE layers (+ a window on some NoPE layers)
    out = _llama(c)
    n = out["n_layers"]
    uses = c.switches("no_rope_layers", n)
    if uses is None or "no_rope_layer_interval" in c.raw:  # checked whenever the file has it
        interval = c.size("no_rope_layer_interval")
    if uses is None:  # transformers' rule: layer i is NoPE when (i + 1) % interval == 0
        uses = [int((i + 1) % interval != 0) for i in range(n)]
    window = c.size("sliding_window", null=True)
    on = bool(c.flag("use_sliding_window")) and window is not None
    types = c.get("layer_types", None)
    if types is None:  # SmolLM3Config's rule: the window goes on the NoPE layers
        types = ["sliding_attention" if on and not uses[i] else "full_attention"
                 for i in range(n)]
    _check_types(c, types, n)
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    if sliding and not on:  # the mask would slide (config.sliding_window), the kernel would not
        raise c.error("layer_types", f"marks layer {sliding[0]} sliding_attention, but "
                                     "use_sliding_window is false or sliding_window null: "
                                     "transformers' SmolLM3 masks such layers by sliding_window "
                                     "yet passes the kernel no window; archscope refuses the "
                                     "ambiguity")
    layers = [{"select": _select(nope), "attention": {"rope": False}}
              for nope in [[i for i in range(n) if not uses[i]]] if nope]
    if sliding and len(sliding) == n:
        out = _patch(out, attention={"window": window})
    elif sliding:
        layers.append({"select": _select(sliding), "attention": {"window": window}})
    return {**out, "layers": layers} if layers else out


def _phi3_rope(c: Keys) -> None:
    """Refuse what transformers' Phi3 does with RoPE that archscope does not: `longrope`, the
    per-frequency short/long factors that Phi3Config also reads `su` and `yarn` as (so a Phi-3
    `yarn` is not YaRN), and partial rotation (Phi-4-mini's partial_rotary_factor 0.75)."""
    for section in ("rope_scaling", "rope_parameters"):
        params = c.mapping(section)
        kind = params.get("rope_type", params.get("type", "default"))
        if kind != "default":
            at = f"{section}.{'rope_type' if 'rope_type' in params else 'type'}"
            raise c.error(at, f"transformers' Phi3 reads RoPE type {quote(kind)} as longrope "
                              "(short/long factors per frequency), which archscope does not "
                              "implement; it reads Phi-3 configs with unscaled RoPE only "
                              "(rope_scaling null, as in Phi-4)")
        if "partial_rotary_factor" in params:
            _whole_rotation(c, f"{section}.partial_rotary_factor", params["partial_rotary_factor"])
    _whole_rotation(c, "partial_rotary_factor", c.get("partial_rotary_factor", 1.0))


def _whole_rotation(c: Keys, key: str, value) -> None:
    if c.number(key, value=value) != 1:
        raise c.error(key, f"archscope rotates whole heads (1.0) only, {what(value)}: partial "
                           "RoPE is not implemented for gqa attention")


def _phi3(c: Keys) -> dict:  # Llama, fused qkv_proj and gate_up_proj, no bias + Mistral's window
    _phi3_rope(c)
    return _patch(_llama(c, bias=()),
                  attention={"fused_qkv": True, "window": c.size("sliding_window", null=True)},
                  ffn={"fused_gate_up": True})


def _gpt2(c: Keys) -> dict:
    width, heads = c.size("n_embd"), c.size("n_head")
    _divides(c, "n_embd", "n_head", width, heads)  # GPT2Attention refuses it
    return {"vocab_size": c.size("vocab_size"), "d_model": width, "n_layers": c.size("n_layer"),
            "max_seq_len": c.size("n_positions"),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "layernorm", "eps": c.number("layer_norm_epsilon"),
                     "position": "pre"},
            "position": {"kind": "learned"},
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": heads,
                          "head_dim": width // heads, "bias": True},
            "ffn": {"kind": "mlp", "d_ff": c.size("n_inner", null=True) or 4 * width,
                    "activation": _act(c, "activation_function"), "bias": True}}


READERS = {  # model_type: reader (hf_export.WRITERS has the same keys)
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "olmo2": _olmo2,
    "smollm3": _smollm3,
    "phi3": _phi3,
    "granite": _granite,
    "granitemoe": _granitemoe,
    "granitemoehybrid": read_granitemoehybrid,
    "bamba": read_bamba,
    "deepseek_v2": read_deepseek_v2,
    "deepseek_v3": read_deepseek_v3,
    "kimi_k2": read_deepseek_v3,  # Kimi K2's files name DeepseekV3ForCausalLM (hf_keys.CLASS_OF)
    "glm4_moe": read_glm4_moe,
    "gpt_oss": read_gpt_oss,
    "gemma3_text": read_gemma3_text,
    "gemma3": read_gemma3,  # the multimodal wrapper: its text_config (written as gemma3_text)
    "llama4_text": llama4_text,
    "llama4": llama4,  # the multimodal wrapper: its text_config (written as llama4_text)
    "gpt2": _gpt2,
    "nemotron_h": read_nemotron_h,
    "qwen3_next": read_qwen3_next,
}
