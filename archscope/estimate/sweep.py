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

from archscope.errors import InputError, SpecError
from archscope.estimate.record import model_record
from archscope.spec import ModelSpec
from archscope.spec.fields import from_mapping, to_mapping
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
        raise InputError(f"--grid {item!r}: expected KEY=V1,V2,...")
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
          weight_dtype: str = "bf16", cache_dtype: str | None = None,
          attention_flops: str = "causal", mla_flops: str = "absorbed") -> Sweep:
    """The record of `spec` with each combination of `axes` applied, at `seq_len`."""
    row_keys = set(model_record(spec, seq_len, batch, weight_dtype, cache_dtype,
                                attention_flops, mla_flops).row())
    clash = [a.key for a in axes if a.key in row_keys]
    if clash:
        raise InputError(f"--grid: {', '.join(clash)} is also a column of the record; sweep a "
                         f"spec key")
    base = to_mapping(spec)
    rows, invalid = [], []
    for combo in itertools.product(*(a.values for a in axes)):
        values = {a.key: v for a, v in zip(axes, combo)}
        try:
            variant = _variant(base, values)
            record = model_record(variant, seq_len, batch, weight_dtype, cache_dtype,
                                  attention_flops, mla_flops)
        except InputError as err:
            reason = err.detail if isinstance(err, SpecError) else str(err)
            invalid.append({"values": values, "key": getattr(err, "key", None),
                            "reason": reason})
            continue
        rows.append({**record.row(), **values})
    return Sweep(spec.name, seq_len, axes, rows, invalid)


def _variant(base: dict, values: dict) -> ModelSpec:
    raw = base
    for key, value in values.items():
        raw = set_dotted(raw, key, value, copy_path=True)
    try:
        return from_mapping(ModelSpec, raw)
    except SpecError as err:
        raise err.located("overrides") from None


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
