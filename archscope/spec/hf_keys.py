"""Reading one config.json key at a time, checked: type and range, in the spec layer's words.

`Keys` wraps the parsed JSON of one config.json. Each accessor (`size`, `number`, `flag`,
`text`, `mapping`) returns the value or raises SpecError naming the file and the
config.json key ("expected an integer, got 'two'"), so a reader never does arithmetic on a value
it has not checked. Integers are bounded by archscope/spec/limits.py, through the spec field
each key becomes (`FIELD`: num_hidden_layers is n_layers), so a config.json and a YAML spec meet
the same limits and the per-layer work is bounded before it starts (a family adds its own keys:
families/base.py `key_fields`). A key the file lacks takes transformers' class default for the
model type (looked up only then: transformers imports torch) and is recorded in `defaulted`,
null defaults included.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Iterable, Mapping

from archscope.errors import SpecError, quote
from archscope.spec.fields import did_you_mean
from archscope.spec.limits import FALLBACK_INT_MAX, INT_LIMITS, int_limit_error

# config.json bytes read at most: decoder configs are a few KB; some carry label maps of ~1 MB.
JSON_BYTES_MAX = 16 * 1024 * 1024
_ABSENT = object()  # no fallback given: use transformers' class default
# config.json key -> the spec field it becomes, whose bound in archscope/spec/limits.py applies
# (the keys many families share; a family's own are in its record)
FIELD = {
    "hidden_size": "d_model", "n_embd": "d_model", "num_hidden_layers": "n_layers",
    "n_layer": "n_layers", "max_position_embeddings": "max_seq_len", "n_positions": "max_seq_len",
    "original_max_position_embeddings": "original_max_seq_len",
    "num_attention_heads": "n_heads", "n_head": "n_heads", "num_key_value_heads": "n_kv_heads",
    "intermediate_size": "d_ff", "n_inner": "d_ff", "moe_intermediate_size": "d_expert",
    "sliding_window": "window", "num_local_experts": "n_experts",
    "n_routed_experts": "n_experts", "num_experts": "n_experts", "num_experts_per_tok": "top_k",
    "decoder_sparse_step": "n_layers",  # a period in layers: at most the number of layers
    "no_rope_layer_interval": "n_layers",  # the same (SmolLM3's NoPE period)
    "num_nextn_predict_layers": "mtp_layers", "num_mtp_layers": "mtp_layers",
}


def field_of(key: str, fields: Mapping[str, str] = FIELD) -> str:
    """The spec field whose limit bounds config.json key `key` (its last part), by `fields`
    (FIELD, or a family's table: families/base.py `key_fields`)."""
    last = key.rsplit(".", 1)[-1]
    return fields.get(last, FIELD.get(last, last))


def limit_of(key: str, fields: Mapping[str, str] = FIELD) -> int:
    """The largest value archscope admits for a config.json integer key."""
    return INT_LIMITS.get(field_of(key, fields), FALLBACK_INT_MAX)


def what(value: Any) -> str:
    """'got <value>' for a message, the value quoted as the spec layer quotes it."""
    return f"got {quote(value)}"


def as_json(value: Any) -> str:
    """A default as config.json would spell it (null, true, 4096, "silu")."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return quote(value)


def _field_defaults(cls) -> dict:
    """A transformers config class's field defaults (none if it is not a dataclass)."""
    if not dataclasses.is_dataclass(cls):
        return {}
    return {f.name: f.default for f in dataclasses.fields(cls)
            if f.default is not dataclasses.MISSING}


@dataclasses.dataclass(frozen=True)
class Defaulted:
    """A key the config.json lacks, and the transformers class default the import took."""

    key: str
    value: Any
    where: str

    def __str__(self) -> str:
        return f"{self.where} has no {self.key}; took transformers' default {as_json(self.value)}"


class Keys:
    """One config.json's keys, read checked; a missing one takes transformers' class default
    for `model_type` (the registered type whose class reads the file); `fields`: the family's
    config key -> spec field table, for the limits (FIELD where it says nothing)."""

    def __init__(self, raw: dict, model_type: str, where: str,
                 fields: Mapping[str, str] = FIELD, family: Any = None):
        self.raw, self.where, self.fields = raw, where, fields
        self.model_type = model_type
        self.family = family  # the families/base.py Family reading it (for the import's errors)
        self._defaults: dict | None = None
        self.defaulted: dict[str, Defaulted] = {}

    def error(self, key: str, message: str) -> SpecError:
        return SpecError(message, where=self.where, key=key)

    # -- the raw value ---------------------------------------------------------------------
    def _class_defaults(self) -> dict:
        if self._defaults is None:  # only now: transformers imports torch, which takes seconds
            from transformers import CONFIG_MAPPING

            cls = CONFIG_MAPPING[self.model_type]
            self._defaults = _field_defaults(cls)
            self._defaults["rope_theta"] = cls.default_theta
            for section, sub in getattr(cls, "sub_configs", {}).items():  # DBRX's attn_config
                self._defaults.update({f"{section}.{k}": v
                                       for k, v in _field_defaults(sub).items()})
        return self._defaults

    def get(self, key: str, fallback: Any = _ABSENT) -> Any:
        """The file's value; else `fallback` if given; else transformers' class default (noted).
        A dotted key names a key of a nested section (`attn_config.clip_qkv`: DBRX's), whose
        default is its sub-config class's."""
        if key in self.raw:
            return self.raw[key]
        section, _, inner = key.partition(".")
        if inner and isinstance(self.raw.get(section), dict) and inner in self.raw[section]:
            return self.raw[section][inner]
        if fallback is not _ABSENT:
            return fallback
        defaults = self._class_defaults()
        if key not in defaults:
            return None
        self.defaulted.setdefault(key, Defaulted(key, defaults[key], self.where))
        return defaults[key]

    def _present(self, key: str, fallback: Any, null: bool) -> Any:
        value = self.get(key, fallback)
        if value is None and not null:
            if key not in self.raw and fallback is _ABSENT:
                raise self.error(key, "required: the file lacks it and transformers' "
                                      f"{self.model_type} config has no default")
        return value

    # -- typed accessors -------------------------------------------------------------------
    def size(self, key: str, *, least: int = 1, null: bool = False, fallback: Any = _ABSENT,
             value: Any = _ABSENT) -> int | None:
        """An integer >= least and within archscope's limit for the key (`null`: or null)."""
        if value is _ABSENT:
            value = self._present(key, fallback, null)
        return check_int(value, key, self.where, least=least, null=null, fields=self.fields)

    def number(self, key: str, *, positive: bool = True, null: bool = False,
               fallback: Any = _ABSENT, value: Any = _ABSENT) -> float | int | None:
        """A finite number (`positive`: > 0; `null`: or null); an integer is a number."""
        if value is _ABSENT:
            value = self._present(key, fallback, null)
        if value is None and null:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"expected a number{' or null' if null else ''}, {what(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(key, f"expected a finite number, {what(value)}")
        if positive and value <= 0:
            raise self.error(key, f"must be positive, {what(value)}")
        return value

    def flag(self, key: str, *, null: bool = False, fallback: Any = _ABSENT) -> bool | None:
        value = self._present(key, fallback, null)
        if value is None and null:
            return None
        if not isinstance(value, bool):
            raise self.error(key, f"expected true/false{' or null' if null else ''}, "
                                  f"{what(value)}")
        return value

    def text(self, key: str, choices: Iterable[str], *, null: bool = False,
             fallback: Any = _ABSENT, noun: str = "value") -> str | None:
        """A string among `choices` (`null`: or null)."""
        value = self._present(key, fallback, null)
        if value is None and null:
            return None
        choices = list(choices)
        if not isinstance(value, str) or value not in choices:
            hint = did_you_mean(value, choices) if isinstance(value, str) else ""
            raise self.error(key, f"unsupported {noun}: expected one of {', '.join(choices)}, "
                                  f"{what(value)}{hint}")
        return value

    def mapping(self, key: str) -> dict:
        """A JSON object; absent or null reads as empty (no transformers default involved)."""
        value = self.raw.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(key, f"expected a mapping or null, {what(value)}")
        return value

    def alias(self, key: str, other: str) -> str:
        """Which of two names of one key the file uses (`key` if neither): transformers 5's
        attribute_map reads both (Qwen3-MoE's files say num_experts, transformers saves
        num_local_experts). Both, disagreeing, is refused: which wins is the key order."""
        if key in self.raw and other in self.raw and self.raw[key] != self.raw[other]:
            raise self.error(key, f"disagrees with {other} ({quote(self.raw[other])}), which "
                                  "transformers reads as the same key")
        return other if other in self.raw and key not in self.raw else key

    def indices(self, key: str, n: int) -> set[int]:
        """A list of layer indices below n (absent or null: none)."""
        value = self.raw.get(key) or []
        if not isinstance(value, list):
            raise self.error(key, f"expected a list of layer indices or null, {what(value)}")
        for i, index in enumerate(value):
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
                raise self.error(f"{key}[{i}]", f"expected a layer index from 0 to {n - 1} "
                                                f"(num_hidden_layers is {n}), {what(index)}")
        return set(value)

    def switches(self, key: str, n: int) -> list[int] | None:
        """A per-layer list of 0/1 switches, at least n long (transformers reads the first n;
        absent or null: None, for the caller's derived default)."""
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or len(value) < n:
            raise self.error(key, f"expected a list of at least {n} entries, 0 or 1 "
                                  f"(num_hidden_layers is {n}), {what(value)}")
        for i, bit in enumerate(value[:n]):
            if isinstance(bit, bool) or bit not in (0, 1):
                raise self.error(f"{key}[{i}]", f"expected 0 or 1, {what(bit)}")
        return list(value[:n])


def check_int(value: Any, key: str, where: str, *, least: int = 1, null: bool = False,
              fields: Mapping[str, str] = FIELD) -> int | None:
    """`value` if it is an integer >= least within limit_of(key, fields) (or null, if
    `null`)."""
    if value is None and null:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"expected an integer{' or null' if null else ''}, {what(value)}",
                        where=where, key=key)
    if value < least:
        rule = "be positive" if least == 1 else f"be {least} or more"
        raise SpecError(f"must {rule}{' (or null)' if null else ''}, {what(value)}",
                        where=where, key=key)
    if value > limit_of(key, fields):
        raise SpecError(int_limit_error(field_of(key, fields), value) or f"{quote(value)} is "
                        f"beyond the limit {limit_of(key, fields):,}", where=where, key=key)
    return value
