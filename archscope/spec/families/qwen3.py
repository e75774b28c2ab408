"""Qwen3 (transformers' `qwen3`): Llama + per-head QK-norm (q_norm, k_norm) + Qwen2's windows.
Its attention_bias covers q/k/v and o_proj alike, as Llama's does; the MLP has no bias switch."""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.families.qwen2 import windows
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch, _windows
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec

QK_NORM_WEIGHTS = rules(*[(f"model.layers.{{i}}.self_attn.{name}.weight",
                           f"layers.{{i}}.self_attn.{name}.weight")
                          for name in ("q_norm", "k_norm")])


def read(c: Keys) -> dict:
    return _windows(c, _patch(read_llama(c, bias=("attention_bias",)),
                              attention={"qk_norm": "head"}))


def write(s: ModelSpec) -> dict:  # Qwen2's windows, Llama's attention_bias (o_proj too)
    return {**without(write_llama(s), "mlp_bias"), **windows(s)}


def head_norm(s: ModelSpec) -> bool:
    return s.attention.qk_norm == "head"


QWEN3 = LLAMA.but("qwen3", "Qwen3ForCausalLM", read=read, write=write,
                  exports=head_norm, generic=True,
                  weights=LLAMA.weights + QK_NORM_WEIGHTS, names=("qwen",),
                  doc="Llama + per-head QK-norm")
FAMILIES = (QWEN3,)
