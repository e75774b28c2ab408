"""Ministral 3 (transformers' `ministral3`, Ministral3ForCausalLM; the text model of Mistral's
Ministral 3 and Devstral 2 releases): Mistral (a window on every layer when sliding_window is
set; Ministral3Config defaults it to null and head_dim to 128) + Llama 4's position-dependent
query scale: q is multiplied by 1 + beta * log(1 + floor(position / n)), beta and n being
rope_parameters' llama_4_scaling_beta and original_max_position_embeddings.

That is archscope's temperature tuning counted from the position itself (temperature_offset
0; Llama 4's counts from position + 1), on every layer: temperature_floor = n, temperature_scale
= beta. beta 0 is no scale (Mistral's network). A file without rope_parameters takes the class's
YaRN default (beta 0.1, n 16384)."""

from __future__ import annotations

from archscope.spec.families._dense import class_head_dim
from archscope.spec.families.mistral import MISTRAL
from archscope.spec.families.mistral import read as read_mistral
from archscope.spec.families.mistral import write as write_mistral
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch
from archscope.spec.schema import ModelSpec

_BETA = "llama_4_scaling_beta"
_ORIGINAL = "original_max_position_embeddings"


def _section(c: Keys) -> tuple[str, dict]:
    """(name, mapping) of the file's RoPE section (rope_parameters, else rope_scaling)."""
    for name in ("rope_parameters", "rope_scaling"):
        if c.mapping(name):
            return name, c.mapping(name)
    return "rope_parameters", {}


# Ministral3Config's rope_parameters when the file has none
_DEFAULT = {"type": "yarn", "rope_theta": 1e6, "factor": 16.0, _ORIGINAL: 16384,
            "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0, _BETA: 0.1}


def read(c: Keys) -> dict:
    name, params = _section(c)
    if not params:
        defaulted = c.defaulted
        c = Keys({**c.raw, name: dict(_DEFAULT)}, c.model_type, c.where, c.fields, c.family)
        c.defaulted, params = defaulted, _DEFAULT
    beta = params.get(_BETA)
    if beta is None or params.get(_ORIGINAL) is None:
        missing = _BETA if beta is None else _ORIGINAL
        raise c.error(f"{name}.{missing}", f"required: transformers' Ministral3 scales q by "
                                           f"1 + {_BETA} * log(1 + floor(position / "
                                           f"{_ORIGINAL})) and fails without it")
    beta = c.number(f"{name}.{_BETA}", value=beta, positive=False)
    if beta < 0:
        raise c.error(f"{name}.{_BETA}", f"{beta}: the query scale 1 + beta * log(1 + ...) "
                                         "is read for beta >= 0 (archscope's temperature_scale)")
    original = c.size(f"{name}.{_ORIGINAL}", value=params[_ORIGINAL])
    # the rest is Mistral's, its RoPE without the two keys only this scale reads
    rest = {k: v for k, v in params.items() if k not in (_BETA, "max_position_embeddings")}
    sub = Keys({**c.raw, name: rest}, c.model_type, c.where, c.fields, c.family)
    sub.defaulted = c.defaulted
    out = class_head_dim(sub, read_mistral(sub))
    if beta == 0:
        return out
    return _patch(out, attention={"temperature_floor": original, "temperature_scale": beta,
                                  "temperature_offset": 0})


def scaled(s: ModelSpec) -> bool:
    """Whether some layer scales q by the temperature counted from the position itself."""
    return any(layer.attention.temperature_floor and layer.attention.temperature_offset == 0
               for layer in s.plan)


def write(s: ModelSpec) -> dict:
    """Mistral's keys with the scale's beta and original context in rope_parameters (YaRN's
    original_max_position_embeddings is the same key: a spec where they differ reads back
    otherwise, so the exporter's read-back refuses it)."""
    out = write_mistral(s)
    a = next((layer.attention for layer in s.plan if layer.attention.temperature_floor), None)
    rope = dict(out.get("rope_parameters") or {"rope_type": "default",
                                               "rope_theta": s.position.theta})
    rope[_BETA] = a.temperature_scale if a is not None else 0.0
    rope.setdefault(_ORIGINAL, a.temperature_floor if a is not None else
                    s.max_seq_len)
    return {**out, "rope_parameters": rope}


MINISTRAL3 = MISTRAL.but("ministral3", "Ministral3ForCausalLM", read=read, write=write,
                         exports=scaled, names=("ministral",),
                         doc="Mistral + a query scale by position on every layer")
FAMILIES = (MINISTRAL3,)
