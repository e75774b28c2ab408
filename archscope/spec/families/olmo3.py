"""OLMo 3 (transformers' `olmo3`, Olmo3ForCausalLM): OLMo 2 (full-width QK-norm, each
sublayer's output normed) + a sliding window on the layers `layer_types` marks (Olmo3Config's
default: three sliding layers, then a full one) + one RoPE per layer type.

The RoPE of each type, as Olmo3Config assembles it: its entry of rope_parameters
({sliding_attention, full_attention}); the legacy rope_scaling (the released checkpoints'
YaRN) on top of the full layers' entry only; a theta from the entry, else the legacy top-level
rope_theta for the full layers only, else the class's default_theta (500,000) - the sliding
layers never take the top-level rope_theta. In the spec the sliding layers' RoPE is the
model's and the full layers patch theirs (as Gemma 3's types). YaRN's `attention_factor` is
read when it is the factor transformers would compute anyway (0.1 ln(factor) + 1, or its
mscale form: what archscope's YaRN applies); another value is refused.
"""

from __future__ import annotations

import math

from archscope.errors import SpecError
from archscope.spec.families.base import frozen
from archscope.spec.families._dense import layer_types, layer_windows, typed_windows, without_rope
from archscope.spec.families.gemma3 import _rekeyed
from archscope.spec.families.olmo2 import OLMO2
from archscope.spec.families.olmo2 import read as read_olmo2
from archscope.spec.families.olmo2 import write as write_olmo2
from archscope.spec.hf_keys import Defaulted, Keys, what
from archscope.spec.hf_readers_base import _rope, _select
from archscope.spec.hf_writers_base import rope_parameters, without
from archscope.spec.schema import ModelSpec

_TYPES = ("full_attention", "sliding_attention")
_FACTOR = "attention_factor"


def _three_then_full(n: int, window: int | None) -> list[str]:  # Olmo3Config's rule
    return ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(n)]


def _mscale(factor: float, mscale: float = 1.0) -> float:  # transformers' get_mscale
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def _checked_factor(c: Keys, entry: dict, at: str) -> dict:
    """`entry` without YaRN's attention_factor, which must be the one transformers computes
    when it is absent (and so the one archscope's YaRN applies)."""
    if _FACTOR not in entry:
        return entry
    value = c.number(f"{at}.{_FACTOR}", value=entry[_FACTOR])
    kind = entry.get("rope_type", entry.get("type"))
    factor, mscale, all_dim = (entry.get(k) for k in ("factor", "mscale", "mscale_all_dim"))
    numbers = [v for v in (factor, mscale, all_dim) if v is not None]
    expected = None
    if kind == "yarn" and factor is not None and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
        expected = (_mscale(factor, mscale) / _mscale(factor, all_dim) if mscale and all_dim
                    else _mscale(factor))
    if value != expected:
        raise c.error(f"{at}.{_FACTOR}", f"archscope's YaRN scales attention by the factor "
                                         f"transformers computes from factor and mscale "
                                         f"({expected!r}), {what(value)}")
    return {k: v for k, v in entry.items() if k != _FACTOR}


def _entries(c: Keys) -> dict[str, dict]:
    """Each layer type's rope_parameters entry, as Olmo3Config.convert_rope_params_to_dict
    fills it in (see the module doc)."""
    params = c.mapping("rope_parameters")
    for key in params:
        if key not in _TYPES:
            raise c.error(f"rope_parameters.{key}", "Olmo3 keeps one RoPE per layer type "
                                                    f"(expected the keys {' and '.join(_TYPES)}"
                                                    "): transformers ignores this entry")
    entries = {}
    for t in _TYPES:
        entry = params.get(t) or {"rope_type": "default"}
        if not isinstance(entry, dict):
            raise c.error(f"rope_parameters.{t}", f"expected a mapping, {what(entry)}")
        entries[t] = dict(entry)
    entries["full_attention"].update(c.mapping("rope_scaling"))
    default = c._class_defaults()["rope_theta"]  # Olmo3Config.default_theta
    for t, entry in entries.items():
        if "rope_theta" in entry:
            continue
        if t == "full_attention" and "rope_theta" in c.raw:
            entry["rope_theta"] = c.number("rope_theta")
        else:
            key = f"rope_parameters.{t}.rope_theta"
            c.defaulted.setdefault(key, Defaulted(key, default, c.where))
            entry["rope_theta"] = default
    return entries


def _rope_of(c: Keys, t: str, entry: dict) -> dict:
    """Layer type t's RoPE; an error names the file's key (the legacy rope_scaling's, where
    the full layers' entry took it from there)."""
    legacy = c.mapping("rope_scaling") if t == "full_attention" else {}
    at = f"rope_parameters.{t}"
    try:
        entry = _checked_factor(c, entry, "rope_parameters")  # rekeyed below
        return _rope(Keys({"rope_parameters": entry}, c.model_type, c.where))
    except SpecError as err:
        key = (err.key or "").replace("rope_parameters.", "", 1).split(".")[-1]
        if key in legacy:
            raise SpecError(err.detail, where=err.where, key=f"rope_scaling.{key}") from None
        raise _rekeyed(err, "rope_parameters", at) from None


def read(c: Keys) -> dict:
    out = read_olmo2(without_rope(c))
    n = out["n_layers"]
    rope = {t: _rope_of(c, t, entry) for t, entry in _entries(c).items()}
    out = layer_windows(c, out, _three_then_full, "Olmo3")
    types = layer_types(c, n, out["attention"].get("window"), _three_then_full)
    # the model's RoPE: the sliding layers' (most layers), unless only the full one is scaled
    # (a layer can patch a scaling in, not out: the importer drops nulls)
    base = ("full_attention" if "scaling" in rope["sliding_attention"]
            and "scaling" not in rope["full_attention"] else "sliding_attention")
    other = _TYPES[0] if base == _TYPES[1] else _TYPES[1]
    out["position"] = rope[base if len(set(types)) > 1 else types[0]]
    patched = [i for i, t in enumerate(types) if t == other]
    if patched and len(patched) < n and rope[other] != rope[base]:
        out["layers"] = [*out.get("layers", []),
                         {"select": _select(patched),
                          "position": {k: v for k, v in rope[other].items() if k != "kind"}}]
    return out


def write(s: ModelSpec) -> dict:
    """Olmo3Config's keys: OLMo 2's, the windows' layer_types and one RoPE per layer type."""
    rope = {}
    for t in _TYPES:
        positions = list(dict.fromkeys(layer.position for layer in s.plan if layer.layer_type == t))
        if len(positions) > 1:
            raise SpecError(f"transformers' Olmo3 has one RoPE per layer type; the {t} layers "
                            f"have {len(positions)}", key="layers")
        rope[t] = rope_parameters(positions[0] if positions else s.position)
    return {**without(write_olmo2(s), "rope_parameters"), **typed_windows(s),
            "rope_parameters": rope}


def _claims(s: ModelSpec) -> bool:
    """OLMo 2's structure with windows or a RoPE that differs between layers."""
    olmo = s.norm.position == "output" or s.attention.qk_norm == "full"
    return olmo and any(layer.window or layer.position != s.position for layer in s.plan)


OLMO3 = OLMO2.but("olmo3", "Olmo3ForCausalLM", read=read, write=write, exports=_claims,
                  # the default slides a 4,096-token window over a 2,048-token context, which
                  # archscope refuses as a spec: the context raised to the window
                  default_fix=frozen({"max_position_embeddings": 4096}),
                  names=("olmo",), doc="OLMo 2 + windows + one RoPE per layer type")
FAMILIES = (OLMO3,)
