"""Apertus (transformers' `apertus`, ApertusForCausalLM): Llama (attention_bias covers q, k, v
and o) + Qwen3's per-head QK-norm + a two-matrix MLP without bias (up_proj, hidden_act,
down_proj), its two norms named attention_layernorm and feedforward_layernorm. ApertusConfig
defaults a file without rope_parameters (or rope_scaling) to llama3 RoPE (theta 12M, factor 8
over 8,192 positions).

Its activation, xIELU (hidden_act "xielu", the class default and every release's): two learned
scalars per MLP (alpha_p, alpha_n; `mlp.act_fn.*`, with the beta and eps buffers transformers
saves too) and a piecewise quadratic/exponential form: ffn activation xielu. A config with
another activation reads as Arcee's MLP does."""

from __future__ import annotations

from archscope.spec.families._dense import class_rope
from archscope.spec.families.arcee import ARCEE, ungated
from archscope.spec.families.arcee import read as read_arcee
from archscope.spec.families.arcee import write as write_arcee
from archscope.spec.families.base import renamed, rules
from archscope.spec.families.qwen3 import QK_NORM_WEIGHTS
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec

# ApertusConfig.__post_init__'s rope_parameters when the file has none (transformers 5.24)
DEFAULT_ROPE = {"rope_type": "llama3", "rope_theta": 12_000_000.0, "factor": 8.0,
                "original_max_position_embeddings": 8192, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0}


def read(c: Keys) -> dict:
    xielu = c.get("hidden_act") == "xielu"
    if xielu:  # Arcee's reader reads the rest; the activation is ours
        sub = Keys({**c.raw, "hidden_act": "relu"}, c.model_type, c.where, c.fields, c.family)
        sub.defaulted = c.defaulted
    out = _patch(read_arcee(sub if xielu else c, refused_by=None, mlp_bias=False),
                 attention={"qk_norm": "head"})
    if xielu:
        out["ffn"]["activation"] = "xielu"
    return class_rope(c, out, DEFAULT_ROPE, "ApertusConfig")


def write(s: ModelSpec) -> dict:  # Arcee's keys (xielu too); the QK-norm is implied by the class
    return without(write_arcee(s), "mlp_bias")


def _claims(s: ModelSpec) -> bool:
    return s.attention.qk_norm == "head" and ungated(s)


# xIELU's learned scalars and its saved constants, under the MLP's act_fn (HF's names)
XIELU_WEIGHTS = rules(*[(f"model.layers.{{i}}.mlp.act_fn.{n}", f"layers.{{i}}.mlp.act_fn.{n}")
                        for n in ("alpha_p", "alpha_n", "beta", "eps")])
APERTUS = ARCEE.but(
    "apertus", "ApertusForCausalLM", read=read, write=write, exports=_claims,
    weights=renamed(renamed(ARCEE.weights, ".input_layernorm.", ".attention_layernorm."),
                    ".post_attention_layernorm.", ".feedforward_layernorm.") + QK_NORM_WEIGHTS
    + XIELU_WEIGHTS,
    names=("apertus",), doc="Arcee's MLP + per-head QK-norm (xIELU)")
FAMILIES = (APERTUS,)
