"""Qwen2 (transformers' `qwen2`): Llama + biases on q, k and v (never o_proj) + a sliding window
on the layers `layer_types` (or max_window_layers) marks."""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch, _windows
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    return _windows(c, _patch(read_llama(c, bias=()), attention={"bias": True, "out_bias": False}))


def windows(s: ModelSpec) -> dict:
    """Qwen2/Qwen3's per-layer sliding window, as both layer_types and the older keys."""
    per_layer = [layer.window for layer in s.plan]
    window = next((w for w in per_layer if w is not None), None)
    return {"use_sliding_window": window is not None, "sliding_window": window,
            "max_window_layers": next((i for i, w in enumerate(per_layer) if w), s.n_layers),
            "layer_types": [layer.layer_type for layer in s.plan]}


def write(s: ModelSpec) -> dict:
    return {**without(write_llama(s), "attention_bias", "mlp_bias"), **windows(s)}


QWEN2 = LLAMA.but("qwen2", "Qwen2ForCausalLM", read=read, write=write,
                  exports=lambda s: s.attention.bias and not s.attention.has_out_bias,
                  generic=True,
                  names=("qwen",), doc="Llama + q/k/v bias + windows on some layers")
FAMILIES = (QWEN2,)
