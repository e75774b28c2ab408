"""`archscope sweep`: one model's record over every combination of a grid of what-ifs.

A grid is a list of axes, each a dotted spec key (as `--set` takes it) with its values. Every
combination is applied to the spec's mapping, read once, through the same key handling and the
same validation as `--set` (spec/loader.py `set_dotted`, `from_mapping`), and priced by
`model_record`: a row is `ModelRecord.row` (the `compare --format json` element) plus the grid
values under their dotted keys. A combination the validation refuses is listed with the
SpecError's key and message instead of a row.

Built for thousands of variants: no torch, no file read or YAML parsed per variant (values are
parsed once per axis), and only the mappings on a key's path copied per variant.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterable

from archscope.errors import InputError, SpecError, quote
from archscope.estimate.record import model_record
from archscope.spec import ModelSpec
from archscope.spec.fields import field_types, convert, from_mapping, to_mapping
from archscope.spec.loader import check_dotted_key, parse_yaml, set_dotted

# Every row is kept in memory (a list of dicts, about 2 KB each): 100,000 is ~200 MB.
VARIANTS_MAX = 100_000


@dataclass(frozen=True)
class Axis:
    key: str  # dotted spec key
    values: tuple[Any, ...]  # YAML-typed, in the order given


@dataclass(frozen=True)
class Sweep:
    model: str
    seq_len: int
    axes: tuple[Axis, ...]
    rows: list[dict]  # valid combinations: ModelRecord.row plus {axis key: value}
    invalid: list[dict]  # {"values": {axis key: value}, "key": dotted key or None, "reason"}


def parse_axis(item: str) -> Axis:
    """'KEY=V1,V2,...' -> Axis; each value read as YAML, as `--set` reads it (empty: null).
    Values are split at commas, so a value cannot hold one (a list needs `--set`)."""
    if "=" not in item:
        raise InputError(f"--grid {quote(item)}: expected KEY=V1,V2,...")
    key, text = item.split("=", 1)
    key = check_dotted_key(key)
    values = tuple(parse_yaml(v, "grid", key) if v.strip() else None for v in text.split(","))
    return Axis(key, values)


def parse_grid(items: Iterable[str]) -> tuple[Axis, ...]:
    axes = tuple(parse_axis(item) for item in items)
    if not axes:
        raise InputError("a sweep needs at least one --grid KEY=V1,V2,...")
    keys = [a.key for a in axes]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise InputError(f"--grid: {', '.join(twice)} given twice; give each key once")
    count = math.prod(len(a.values) for a in axes)
    if count > VARIANTS_MAX:
        raise InputError(f"--grid: {count:,} combinations, beyond the limit of "
                         f"{VARIANTS_MAX:,}; sweep fewer values")
    return axes


def sweep(spec: ModelSpec, axes: tuple[Axis, ...], seq_len: int = 4096, batch: int = 1,
          weight_format: str = "bf16", cache_dtype: str | None = None,
          attention_flops: str = "causal", mla_flops: str = "absorbed") -> Sweep:
    """The record of `spec` with each combination of `axes` applied, at `seq_len`."""
    row_keys = set(model_record(spec, seq_len, batch, weight_format, cache_dtype,
                                attention_flops, mla_flops).row())
    clash = [a.key for a in axes if a.key in row_keys]
    if clash:
        raise InputError(f"--grid: {', '.join(clash)} is also a column of the record; sweep a "
                         f"spec key")
    variants = _Variants(to_mapping(spec), axes)
    rows, invalid = [], []
    for combo in itertools.product(*(a.values for a in axes)):
        values = {a.key: v for a, v in zip(axes, combo)}
        try:
            variant = variants.spec(values)
            record = model_record(variant, seq_len, batch, weight_format, cache_dtype,
                                  attention_flops, mla_flops)
        except InputError as err:
            reason = err.detail if isinstance(err, SpecError) else str(err)
            invalid.append({"values": values, "key": getattr(err, "key", None),
                            "reason": reason})
            continue
        rows.append({**record.row(), **values})
    return Sweep(spec.name, seq_len, axes, rows, invalid)


class _Variants:
    """The spec of each combination, validated as `--set` validates (`from_mapping`), with each
    top-level field converted once per distinct value of the axes inside it (the `attention`
    mapping once per n_kv_heads swept, every field no axis touches once per sweep): conversion
    is pure, so a field built from equal input is the same field. A field whose conversion
    fails is left to `from_mapping`, which raises its error as for any spec."""

    def __init__(self, base: dict, axes: tuple[Axis, ...]):
        self.base = base
        self.inside: dict[str, list[str]] = {}  # top-level field -> the axis keys within it
        for a in axes:
            self.inside.setdefault(a.key.split(".")[0], []).append(a.key)
        hints = field_types(ModelSpec)
        self.converted: dict = {}
        for name, value in base.items():  # a base that is a valid spec converts cleanly
            if name not in self.inside:
                self.converted[name] = convert(hints[name], value, name)
        self.memo: dict = {}

    def spec(self, values: dict) -> ModelSpec:
        raw = self.base
        for key, value in values.items():
            raw = set_dotted(raw, key, value, copy_path=True)
        converted = dict(self.converted)
        for name, keys in self.inside.items():
            field = self._field(name, raw, tuple(repr(values[k]) for k in keys))
            if field is not _FAILED and name in raw:
                converted[name] = field
        try:
            return from_mapping(ModelSpec, raw, converted=converted)
        except SpecError as err:
            raise err.located("overrides") from None

    def _field(self, name: str, raw: dict, key: tuple):
        if (name, key) not in self.memo:
            try:
                self.memo[name, key] = convert(field_types(ModelSpec)[name], raw[name], name)
            except (SpecError, KeyError):  # an unknown field or a bad value: from_mapping says
                self.memo[name, key] = _FAILED
        return self.memo[name, key]


_FAILED = object()


def pareto(rows: list[dict], x: str, y: str) -> list[int]:
    """Indices of the rows no other row beats on both columns, by increasing x. A column is
    minimised; written '-COLUMN' it is maximised (params against cache: '-params_total')."""
    def value(row, col):
        return -row[col[1:]] if col.startswith("-") else row[col]

    order = sorted(range(len(rows)), key=lambda i: (value(rows[i], x), value(rows[i], y)))
    front, best = [], math.inf
    for i in order:
        if value(rows[i], y) < best:
            front.append(i)
            best = value(rows[i], y)
    return front
