"""gpt-oss (transformers' `gpt_oss`, GptOssForCausalLM) config.json <-> spec, both directions.

gpt-oss = Llama's attention with biases on q, k, v and o (attention_bias) and a learned sink
logit per query head (always: GptOssAttention has `sinks`), sliding and full layers as
`layer_types` says (GptOssConfig's default: even layers sliding), and every layer a MoE whose
router is a Linear with a bias (top-k of its logits, softmax over those: archscope's softmax,
top-k, renormalise) and whose experts have biases and gpt-oss's clamped unit: quick_gelu of the
gate clamped at swiglu_limit, times (up clamped to +-swiglu_limit) + 1. RoPE is YaRN with
`truncate` false. hidden_act is read by no GptOss module, so it is neither read nor written.
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.mixtral import MIXTRAL
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _base, _check_types, _heads, _select
from archscope.spec.hf_writers_base import to_base
from archscope.spec.schema import ModelSpec

ALPHA = 1.702  # quick_gelu's gain: the only swiglu_alpha the spec's activation spells


def sliding_select(indices: list[int], n: int) -> str | list[int]:
    """Every step-th layer from the first to the end as a slice ("0::2", gpt-oss's), else as
    hf_readers_base._select spells it."""
    if len(indices) > 1 and indices[1] - indices[0] > 1:
        if indices == list(range(indices[0], n, indices[1] - indices[0])):
            return f"{indices[0]}::{indices[1] - indices[0]}"
    return _select(indices)


def _layer_types(c: Keys, n: int) -> list[str]:
    types = c.get("layer_types", None)
    if types is None:  # GptOssConfig's rule: layer i slides when i is even
        types = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
    _check_types(c, types, n)
    return types


def _experts(c: Keys) -> dict:
    alpha = c.number("swiglu_alpha")
    if alpha != ALPHA:
        raise c.error("swiglu_alpha", f"archscope builds gpt-oss's unit with quick_gelu, "
                                      f"x * sigmoid({ALPHA} x), only; {what(alpha)}")
    key = c.alias("num_local_experts", "num_experts")  # GptOssConfig's attribute_map
    n, k = c.size(key), c.size("num_experts_per_tok")
    if k > n:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed {key} ({n})")
    return {"kind": "moe", "activation": "quick_gelu", "bias": True,
            "limit": c.number("swiglu_limit"), "n_experts": n, "top_k": k,
            "d_expert": c.size("intermediate_size"),
            "router": {"method": "greedy", "normalize": True, "bias": True}}


def read(c: Keys) -> dict:
    base = _base(c)
    heads, kv, head_dim = _heads(c, base["d_model"])
    out = {**base, "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                                 "head_dim": head_dim, "bias": c.flag("attention_bias"),
                                 "sinks": True},
           "ffn": _experts(c)}
    n = base["n_layers"]
    window = c.size("sliding_window", null=True)
    sliding = [i for i, t in enumerate(_layer_types(c, n)) if t == "sliding_attention"]
    if sliding and window is None:
        raise c.error("sliding_window", f"is null, but layer_types marks layer {sliding[0]} "
                                        "sliding_attention: GptOss would slide that layer's "
                                        "mask by no window; archscope refuses the ambiguity")
    if len(sliding) == n:
        out["attention"]["window"] = window
    elif sliding:
        out["layers"] = [{"select": sliding_select(sliding, n),
                          "attention": {"window": window}}]
    return out


def write(s: ModelSpec) -> dict:
    """GptOssConfig's keys for `s`. What GptOss cannot build (a dense layer,
    a window that differs between layers, no sinks or no clamp) is named here or by the
    exporter's read-back comparison."""
    for layer in s.plan:
        if not layer.is_moe:
            raise SpecError(f"transformers' GptOss makes every layer MoE; layer {layer.index} is "
                            f"'{layer.ffn.kind}'", key="ffn.kind" if layer.ffn is s.ffn
                            else "layers")
        if layer.ffn.limit is None:
            raise SpecError("transformers' GptOss always clamps its experts (swiglu_limit); "
                            "set ffn.limit", key="ffn.limit")
    windows = {layer.window for layer in s.plan if layer.window}
    if len(windows) > 1:
        raise SpecError(f"transformers' GptOss has one sliding_window; the layers use "
                        f"{sorted(windows)}", key="layers")
    a, f = s.attention, s.ffn
    return {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias,
            "sliding_window": next(iter(windows), None),
            "layer_types": [layer.layer_type for layer in s.plan],
            "num_local_experts": f.n_experts, "num_experts_per_tok": f.top_k,
            "intermediate_size": f.d_expert, "swiglu_limit": f.limit, "swiglu_alpha": ALPHA}


# Llama's attention (biased, plus self_attn.sinks) + a MoE under `mlp` with a biased `router`
# and biased experts in GptOssExperts' layout; the published MXFP4 experts (`*_blocks`,
# `*_scales`) are dequantised while loading (weights/mxfp4.py)
_ATTN, _MLP = "model.layers.{i}.self_attn", "model.layers.{i}.mlp"
# transformers' modular file builds GptOss from Mixtral's classes (and Llama's, Qwen2's)
GPT_OSS = MIXTRAL.but(
    "gpt_oss", "GptOssForCausalLM", read=read, write=write,
    exports=lambda s: any(layer.attention and layer.attention.sinks for layer in s.plan),
    ffns=("moe",),
    weights=LLAMA.weights + rules(
        (f"{_ATTN}.sinks", "layers.{i}.self_attn.sinks"),
        (f"{_MLP}.router.{{p}}", "layers.{i}.mlp.gate.{p}"),
        (f"{_MLP}.experts.gate_up_proj", "layers.{i}.mlp.experts.gate_up_proj",
         {"layout": "interleaved_gate_up"}),
        (f"{_MLP}.experts.gate_up_proj_bias", "layers.{i}.mlp.experts.gate_up_proj_bias",
         {"layout": "interleaved"}),
        (f"{_MLP}.experts.down_proj", "layers.{i}.mlp.experts.down_proj",
         {"layout": "transposed"}),
        (f"{_MLP}.experts.down_proj_bias", "layers.{i}.mlp.experts.down_proj_bias")),
    spec_keys=LLAMA.key_table(**{
        "ffn.n_experts": "num_local_experts", "ffn.top_k": "num_experts_per_tok",
        "ffn.d_expert": "intermediate_size", "ffn.limit": "swiglu_limit",
        "ffn.activation": "swiglu_alpha", "layers": "layer_types"}),
    names=("gpt",), doc="Llama + attention sinks + biased clamped MoE")
FAMILIES = (GPT_OSS,)
