"""Falcon-H1 (transformers' `falcon_h1`, FalconH1ForCausalLM) config.json <-> spec, both ways.

Falcon-H1 = Bamba's weight names and Mamba-2 keys, but every layer is one hybrid block: attention
(Llama's, full RoPE) and a Mamba-2 mixer read the same normed input and their outputs are summed
(`mixer: hybrid` on every layer), then a SwiGLU FFN (`feed_forward`, its norm `pre_ff_layernorm`).
transformers 5.24's FalconH1DecoderLayer, FalconH1Mixer, FalconH1MLP and FalconH1Model, key by key:

| config.json | spec |
|---|---|
| mamba_d_ssm (null: mamba_expand * hidden_size) | mixer.n_heads * mixer.head_dim (checked) |
| mamba_n_heads, mamba_d_head ('auto': d_ssm / heads) | mixer.n_heads, head_dim |
| mamba_d_state, mamba_n_groups, mamba_d_conv, mamba_chunk_size | d_state, n_groups, ... |
| mamba_conv_bias; mamba_proj_bias (in_proj) = projectors_bias (out_proj) | conv_bias; proj_bias |
| mamba_rms_norm, mamba_norm_before_gate | mixer.gated_norm, norm_before_gate |
| time_step_limit | mixer.dt_limit_min, dt_limit_max |
| ssm_multipliers (z, x, B, C, dt: the mup_vector) | mixer.proj_multipliers |
| embedding_multiplier; lm_head_multiplier | multipliers.embedding; logits = 1 / it |
| attention_in/out_multiplier, ssm_in/out_multiplier | multipliers.attention_in/out, mixer_in/out |
| mlp_multipliers [gate, down] | multipliers.ffn_gate, ffn_out |
| key_multiplier (keys times it, after k_proj) | multipliers.attention = it / sqrt(head_dim) |

key_multiplier scales the keys, so every score q.k by it: the softmax scale times it, the same
network (the KV cache then holds unscaled keys, the same bytes). Not refused, each named: hidden_act
other than silu (it is also the Mamba conv's), mamba_proj_bias and projectors_bias disagreeing
(one proj_bias in the spec). Read by no module: attn_layer_indices (every layer is hybrid),
mamba_use_mlp, num_logits_to_keep, attention_dropout, initializer_range.
"""

from __future__ import annotations

import math

from archscope.errors import SpecError
from archscope.spec.families.bamba import BAMBA, WEIGHTS
from archscope.spec.families.granitemoehybrid import _time_step_limit
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _act, _base, _heads, _select
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec

_SCALES = (("attention_in", "attention_in_multiplier"), ("attention_out", "attention_out_multiplier"),
           ("mixer_in", "ssm_in_multiplier"), ("mixer_out", "ssm_out_multiplier"))


def _numbers(c: Keys, key: str, n: int) -> list[float]:
    value = c.get(key)
    if value is None:  # FalconH1Config's __post_init__: all ones
        return [1.0] * n
    if not isinstance(value, list) or len(value) != n:
        raise c.error(key, f"expected a list of {n} numbers, {what(value)}")
    return [c.number(f"{key}[{i}]", value=v) for i, v in enumerate(value)]


def _mamba(c: Keys, d: int) -> dict:
    inner = c.size("mamba_d_ssm", null=True) or c.size("mamba_expand") * d  # expand: only then
    heads = c.size("mamba_n_heads")
    head_dim = c.get("mamba_d_head")
    if head_dim == "auto":
        if inner % heads:
            raise c.error("mamba_n_heads", f"must divide the mixer's width ({inner}), "
                                           f"{what(heads)}")
        head_dim = inner // heads
    head_dim = c.size("mamba_d_head", value=head_dim)
    if head_dim * heads != inner:
        raise c.error("mamba_d_head", f"mamba_d_head * mamba_n_heads ({head_dim} * {heads}) "
                                      f"must equal mamba_d_ssm ({inner})")
    bias = c.flag("mamba_proj_bias")
    if c.flag("projectors_bias") != bias:
        raise c.error("projectors_bias", f"(out_proj's bias) differs from mamba_proj_bias "
                                         f"(in_proj's, {bias}): archscope's Mamba-2 mixer has one "
                                         "proj_bias for both")
    rms = c.flag("mamba_rms_norm")
    lo, hi = _time_step_limit(c)
    mults = _numbers(c, "ssm_multipliers", 5)
    return {"kind": "mamba2", "n_heads": heads, "head_dim": head_dim,
            "d_state": c.size("mamba_d_state"), "n_groups": c.size("mamba_n_groups"),
            "conv_kernel": c.size("mamba_d_conv"), "chunk_size": c.size("mamba_chunk_size"),
            "conv_bias": c.flag("mamba_conv_bias"), "proj_bias": bias,
            "dt_limit_min": lo, "dt_limit_max": hi, "gated_norm": rms,
            # without the norm the order means nothing: left at the spec's default
            "norm_before_gate": c.flag("mamba_norm_before_gate") if rms else False,
            "proj_multipliers": None if mults == [1.0] * 5 else mults}


def _multipliers(c: Keys, head_dim: int) -> dict | None:
    gate, down = _numbers(c, "mlp_multipliers", 2)
    out = {"embedding": c.number("embedding_multiplier"),
           "logits": 1 / c.number("lm_head_multiplier"), "ffn_gate": gate, "ffn_out": down,
           **{ours: c.number(theirs) for ours, theirs in _SCALES}}
    out = {k: v for k, v in out.items() if v != 1}
    key = c.number("key_multiplier")
    if key != 1:
        out["attention"] = key / math.sqrt(head_dim)
    return out or None


def read(c: Keys) -> dict:
    base = _base(c)
    d, n = base["d_model"], base["n_layers"]
    heads, kv, head_dim = _heads(c, d)
    act = _act(c)
    if act != "silu":
        raise c.error("hidden_act", f"is also the Mamba conv's activation, which archscope "
                                    f"builds as silu only, {what(c.get('hidden_act'))}")
    return {**base, "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                                  "head_dim": head_dim, "bias": c.flag("attention_bias")},
            "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": act,
                    "bias": c.flag("mlp_bias")},
            "mixer": _mamba(c, d), "multipliers": _multipliers(c, head_dim),
            "layers": [{"select": _select(list(range(n))), "mixer": "hybrid"}]}


def every_layer_hybrid(s: ModelSpec) -> bool:
    return all(layer.attention is not None and layer.state is not None and layer.ffn is not None
               for layer in s.plan)


def write(s: ModelSpec) -> dict:
    """FalconH1Config's keys for `s`; what the class cannot build (another layer kind, a window,
    a residual multiplier) is named by the exporter's read-back comparison."""
    a, f, m, k = s.attention, s.ffn, s.mixer, s.mults
    if m is None or m.kind != "mamba2":
        raise SpecError("transformers' FalconH1 runs a Mamba-2 mixer beside attention",
                        key="mixer.kind")
    key = 1.0 if k.attention is None else k.attention * math.sqrt(a.head_dim)
    return {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias, "intermediate_size": f.d_ff,
            "mlp_bias": f.bias, "hidden_act": HF_ACT[f.activation],
            "mamba_d_ssm": m.d_inner, "mamba_n_heads": m.n_heads, "mamba_d_head": m.head_dim,
            "mamba_d_state": m.d_state, "mamba_n_groups": m.n_groups,
            "mamba_d_conv": m.conv_kernel, "mamba_chunk_size": m.chunk_size,
            "mamba_conv_bias": m.conv_bias, "mamba_proj_bias": m.proj_bias,
            "projectors_bias": m.proj_bias, "mamba_rms_norm": m.gated_norm,
            "mamba_norm_before_gate": m.norm_before_gate,
            "time_step_limit": [m.dt_limit_min, m.dt_limit_max or math.inf],
            "ssm_multipliers": list(m.proj_multipliers or [1.0] * 5),
            "embedding_multiplier": k.embedding, "lm_head_multiplier": 1 / k.logits,
            "key_multiplier": key, "mlp_multipliers": [k.ffn_gate, k.ffn_out],
            **{theirs: getattr(k, ours) for ours, theirs in _SCALES},
            # the class's default token ids (pad 0, bos 1, eos 2) mean nothing to a spec
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


FALCON_H1 = BAMBA.but(
    "falcon_h1", "FalconH1ForCausalLM", read=read, write=write, exports=every_layer_hybrid,
    weights=WEIGHTS,
    spec_keys=BAMBA.key_table(**{
        "layers": "num_hidden_layers", "mixer": "num_hidden_layers",
        "mixer.head_dim": "mamba_d_head", "mixer.proj_bias": "mamba_proj_bias",
        "mixer.gated_norm": "mamba_rms_norm", "mixer.norm_before_gate": "mamba_norm_before_gate",
        "mixer.proj_multipliers": "ssm_multipliers",
        "multipliers.embedding": "embedding_multiplier",
        "multipliers.logits": "lm_head_multiplier", "multipliers.attention": "key_multiplier",
        "multipliers.ffn_gate": "mlp_multipliers", "multipliers.ffn_out": "mlp_multipliers",
        **{f"multipliers.{ours}": theirs for ours, theirs in _SCALES}}),
    key_fields=BAMBA.field_table(mamba_d_ssm="d_model"),  # a width, as wide as the residual
    names=("falcon-h1", "falcon_h1"),
    doc="Bamba's names, every layer attention and Mamba-2 side by side, summed; µP multipliers")
FAMILIES = (FALCON_H1,)
