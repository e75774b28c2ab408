"""Bamba (transformers' `bamba`, BambaForCausalLM) config.json <-> spec, both directions.

Bamba = Llama (attention_bias, mlp_bias, one dense SwiGLU per layer) + Granite 4.0-H's Mamba-2
mixer and keys (families/granitemoehybrid.py) on every layer but those `attn_layer_indices`
lists, whose attention rotates half of each head: BambaConfig sets partial_rotary_factor 0.5 whatever the
file says (RoPE on the first head_dim / 2 dims, Llama's halves within them, as GLM-4.5's).
No multipliers. hidden_act is the MLP's and the Mamba conv's activation, so it must be silu.
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.granitemoehybrid import (GRANITEMOEHYBRID, MAMBA_WEIGHTS, mamba,
                                                      mamba_hybrid, mamba_keys, single_blocks)
from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _act, _base, _heads, _select
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec

_PARTIAL, _HALF = "partial_rotary_factor", 0.5


def _half_rotation(c: Keys) -> None:
    """Refuse a partial_rotary_factor other than the 0.5 BambaConfig overwrites it with."""
    found = [(f"{s}.{_PARTIAL}", c.mapping(s)[_PARTIAL]) for s in ("rope_parameters",
                                                                   "rope_scaling")
             if c.mapping(s).get(_PARTIAL) is not None]
    if c.raw.get(_PARTIAL) is not None:
        found.append((_PARTIAL, c.raw[_PARTIAL]))
    for key, value in found:
        if c.number(key, value=value) != _HALF:
            raise c.error(key, f"BambaConfig rotates half of each head whatever the file says "
                               f"(0.5), {what(value)}; archscope refuses the ambiguity")


def read(c: Keys) -> dict:
    _half_rotation(c)
    base = _base(c, read_elsewhere=(_PARTIAL,))
    d, n = base["d_model"], base["n_layers"]
    heads, kv, head_dim = _heads(c, d)
    out = {**base, "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                                 "head_dim": head_dim, "bias": c.flag("attention_bias"),
                                 "rotary_fraction": _HALF},
           "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": _act(c),
                   "bias": c.flag("mlp_bias")}}
    attends = sorted(c.indices("attn_layer_indices", n))
    mixer = mamba(c, d)  # validated whatever the layers, as BambaConfig does
    if len(attends) < n:
        if out["ffn"]["activation"] != "silu":
            raise c.error("hidden_act", f"is also the Mamba conv's activation, which archscope "
                                        f"builds as silu only, {what(c.get('hidden_act'))}")
        out["mixer"] = mixer
        if attends:
            out["layers"] = [{"select": _select(attends), "mixer": "attention"}]
    return out


def write(s: ModelSpec) -> dict:
    """BambaConfig's keys for `s`; what Bamba cannot build is named here or by the read-back
    comparison in hf_export."""
    a, f = s.attention, s.ffn
    if s.mixer is not None and f.activation != "silu":
        raise SpecError("transformers' Bamba runs its Mamba conv with hidden_act, the MLP's "
                        f"activation, and archscope's with silu; here {f.activation}",
                        key="ffn.activation")
    return {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias, "intermediate_size": f.d_ff,
            "mlp_bias": f.bias, "hidden_act": HF_ACT[f.activation],
            "attn_layer_indices": [layer.index for layer in s.plan if layer.attention],
            **(mamba_keys(s) if s.mixer is not None else {}),
            # the class's default token ids (pad 0, bos 1, eos 2) mean nothing to a spec
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


_L = "model.layers.{i}"
WEIGHTS = tuple(r for r in LLAMA.weights if not any(
    s in r.hf for s in (".mlp.", "post_attention_layernorm", "model.norm."))) + rules(
    *MAMBA_WEIGHTS,
    *[(f"{_L}.feed_forward.{proj}.{{p}}", f"layers.{{i}}.mlp.{proj}.{{p}}")
      for proj in ("gate_proj", "up_proj", "down_proj")],
    (f"{_L}.pre_ff_layernorm.weight", "layers.{i}.post_attention_layernorm.weight"),
    ("model.final_layernorm.weight", "norm.weight"))

BAMBA = GRANITEMOEHYBRID.but(
    "bamba", "BambaForCausalLM", read=read, write=write,
    # the one Mamba-2 hybrid whose attention rotates part of each head
    exports=lambda s: mamba_hybrid(s) and not single_blocks(s) and any(
        layer.attention and layer.attention.rotary_fraction for layer in s.plan),
    ffns=("swiglu",), weights=WEIGHTS,
    spec_keys=GRANITEMOEHYBRID.key_table(**{
        "ffn.d_ff": "intermediate_size", "ffn.bias": "mlp_bias", "layers": "attn_layer_indices",
        "mixer": "attn_layer_indices", "attention.rotary_fraction": _PARTIAL}),
    doc="Llama + Granite 4.0-H's Mamba-2 layers, half-rotated attention")
FAMILIES = (BAMBA,)
