"""Ministral (transformers' `ministral`, MinistralForCausalLM): Mistral's Llama without bias
switches + a sliding window on the layers `layer_types` marks (MinistralConfig's default: every
layer when sliding_window is set, none when it is null). Its class needs head_dim in the file."""

from __future__ import annotations

from archscope.spec.families.base import frozen

from archscope.spec.families._dense import layer_windows, some_windowed, typed_windows
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec


def _all_or_none(n: int, window: int | None) -> list[str]:  # MinistralConfig.__post_init__
    return ["sliding_attention" if window is not None else "full_attention"] * n


def read(c: Keys) -> dict:
    if c.raw.get("head_dim") is None:  # MinistralConfig skips Mistral's derivation of it
        raise c.error("head_dim", "required: transformers' MinistralAttention reads head_dim as "
                                  "it is, and fails when it is absent or null (MinistralConfig, "
                                  "unlike Mistral's, does not derive it)")
    return layer_windows(c, read_llama(c, bias=()), _all_or_none, "Ministral")


def write(s: ModelSpec) -> dict:
    return {**without(write_llama(s), "attention_bias", "mlp_bias"), **typed_windows(s)}


MINISTRAL = LLAMA.but(
    "ministral", "MinistralForCausalLM", read=read, write=write,
    exports=some_windowed, generic=True,  # Mistral writes a window on every layer only
    # MinistralConfig does not derive head_dim (its __post_init__ skips Mistral's), and
    # MinistralAttention fails on head_dim None
    default_fix=frozen({"head_dim": 128}),
    names=("ministral",), doc="Mistral + a window on the layers layer_types marks")
FAMILIES = (MINISTRAL,)
