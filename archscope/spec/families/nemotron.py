"""Nemotron (transformers' `nemotron`, NemotronForCausalLM: Nemotron-4, Minitron): Jais 2's
layout (pre-norm LayerNorms with bias, a two-matrix squared-ReLU MLP up_proj/down_proj,
attention_bias and mlp_bias) with NemotronLayerNorm1P, which scales by (1 + weight)
(norm.unit_offset), eps norm_eps, RoPE on the first partial_rotary_factor of each head
(default 0.5: attention.rotary_fraction), and head_dim from the config (null:
hidden_size / num_attention_heads)."""

from __future__ import annotations

from archscope.spec.families.jais2 import JAIS2
from archscope.spec.families.jais2 import read as read_jais2
from archscope.spec.families.jais2 import write as write_jais2
from archscope.spec.families.phi import write_rope
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import PARTIAL
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    if c.get("num_key_value_heads") is None:  # NemotronConfig's default
        raise c.error("num_key_value_heads", "null: transformers' Nemotron divides "
                                             "num_attention_heads by it and fails (its config "
                                             "class has no fallback); give a number")
    return read_jais2(c, eps="norm_eps", unit_offset=True, partial=0.5)


def write(s: ModelSpec) -> dict:
    return {**write_jais2(s, eps="norm_eps"), "rope_parameters": write_rope(s)}


NEMOTRON = JAIS2.but(
    "nemotron", "NemotronForCausalLM", read=read, write=write,
    # the one class whose LayerNorms scale by (1 + weight)
    exports=lambda s: s.norm.kind == "layernorm" and bool(s.norm.unit_offset),
    spec_keys=JAIS2.key_table(**{"norm.eps": "norm_eps", "attention.rotary_fraction":
                                 f"rope_parameters.{PARTIAL}"}),
    # its default num_key_value_heads None (NemotronConfig sets no fallback) makes
    # NemotronAttention divide by None and fail; 48 = num_attention_heads, a KV head per head
    default_fix={"num_key_value_heads": 48},
    names=("nemotron",), doc="Jais 2 with (1 + weight) LayerNorms and partial RoPE")
FAMILIES = (NEMOTRON,)
