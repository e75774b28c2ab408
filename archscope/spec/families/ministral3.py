"""Ministral 3 (transformers' `ministral3`, Ministral3ForCausalLM; the text model of Mistral's
Ministral 3 and Devstral 2 releases): Mistral (a window on every layer when sliding_window is
set; Ministral3Config defaults it to null and head_dim to 128) + Llama 4's position-dependent
query scale: q is multiplied by 1 + beta * log(1 + floor(position / n)), beta and n being
rope_parameters' llama_4_scaling_beta and original_max_position_embeddings.

archscope's temperature tuning (Llama 4's) counts from position + 1 and applies to NoPE layers
only, so it does not express this scale: a beta other than 0 is refused naming the key. (A file
without rope_parameters takes the class's YaRN default, whose beta is 0.1: refused too.) With
beta 0 the scale is 1 and the model is Mistral's."""

from __future__ import annotations

from archscope.spec.families._dense import class_head_dim
from archscope.spec.families.mistral import MISTRAL
from archscope.spec.families.mistral import read as read_mistral
from archscope.spec.hf_keys import Keys, what

_BETA = "llama_4_scaling_beta"
_ORIGINAL = "original_max_position_embeddings"


def _section(c: Keys) -> tuple[str, dict]:
    """(name, mapping) of the file's RoPE section (rope_parameters, else rope_scaling)."""
    for name in ("rope_parameters", "rope_scaling"):
        if c.mapping(name):
            return name, c.mapping(name)
    return "rope_parameters", {}


def _refused(c: Keys, key: str, beta: str) -> Exception:
    return c.error(key, f"{beta}: Ministral 3 multiplies q by 1 + beta * log(1 + floor("
                        f"position / {_ORIGINAL})) on every layer, which archscope's "
                        "temperature tuning (Llama 4's: from position + 1, on NoPE layers "
                        "only) does not express; only beta 0 is read")


def read(c: Keys) -> dict:
    name, params = _section(c)
    if not params:
        raise _refused(c, f"rope_parameters.{_BETA}", "absent with rope_parameters, so "
                                                      "Ministral3Config's default RoPE sets "
                                                      "it to 0.1")
    beta = params.get(_BETA)
    if beta is None or params.get(_ORIGINAL) is None:
        missing = _BETA if beta is None else _ORIGINAL
        raise c.error(f"{name}.{missing}", f"required: transformers' Ministral3 scales q by "
                                           f"1 + {_BETA} * log(1 + floor(position / "
                                           f"{_ORIGINAL})) and fails without it")
    if c.number(f"{name}.{_BETA}", value=beta, positive=False) != 0:
        raise _refused(c, f"{name}.{_BETA}", what(beta))
    c.size(f"{name}.{_ORIGINAL}", value=params[_ORIGINAL])
    # the rest is Mistral's, its RoPE without the two keys only this scale reads
    rest = {k: v for k, v in params.items() if k not in (_BETA, "max_position_embeddings")}
    sub = Keys({**c.raw, name: rest}, c.model_type, c.where, c.fields, c.family)
    sub.defaulted = c.defaulted
    return class_head_dim(sub, read_mistral(sub))


MINISTRAL3 = MISTRAL.but("ministral3", "Ministral3ForCausalLM", read=read, names=("ministral",),
                         doc="Mistral + Llama 4's query scale by position (beta 0 only)")
FAMILIES = (MINISTRAL3,)
