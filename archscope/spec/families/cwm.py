"""CWM (transformers' `cwm`, CwmForCausalLM): Llama without attention biases (CwmAttention
builds q, k, v and o without; mlp_bias still applies) + a sliding window on the layers
`layer_types` marks (CwmConfig's default: every fourth layer from the first is full, the others
slide). CwmConfig defaults head_dim to 128, and a file without rope_parameters (or rope_scaling)
to llama3 RoPE (theta 1e6, factor 16 over 8,192 positions)."""

from __future__ import annotations

from archscope.spec.families._dense import (class_head_dim, class_rope, layer_windows,
                                             some_windowed, typed_windows)
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec

# CwmConfig.__post_init__'s rope_parameters when the file has none (transformers 5.24)
DEFAULT_ROPE = {"rope_type": "llama3", "rope_theta": 1_000_000.0, "factor": 16.0,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192}


def _every_fourth_full(n: int, window: int | None) -> list[str]:  # CwmConfig's rule
    return ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(n)]


def read(c: Keys) -> dict:
    out = read_llama(c, bias=("mlp_bias",), refused_by="CwmConfig")
    out = class_rope(c, class_head_dim(c, out), DEFAULT_ROPE, "CwmConfig")
    return layer_windows(c, out, _every_fourth_full, "Cwm")


def write(s: ModelSpec) -> dict:
    return {**without(write_llama(s), "attention_bias"), **typed_windows(s)}


CWM = LLAMA.but(
    "cwm", "CwmForCausalLM", read=read, write=write,
    # Ministral writes such windows without an MLP bias
    exports=lambda s: some_windowed(s) and s.ffn.bias, generic=True, names=("cwm",),
    doc="Llama without attention biases + windows on the layers layer_types marks")
FAMILIES = (CWM,)
