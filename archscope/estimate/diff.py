"""Two specs side by side: only what differs, and what each difference costs.

`spec_diff(a, b, seq_len)` flattens both specs to dotted keys (`attention.n_kv_heads`); a
component whose `kind` differs (GQA vs MLA attention, a dense FFN vs MoE) is one difference,
the whole component, and `layers` (the per-layer overrides) is one difference summarised by
the two per-layer plans. Each difference is priced ALONE on A: A with that one key set to
B's value (the `--set` machinery), minus A, in parameters, cache (KV + state, batch 1, at
seq_len, bf16) and decode FLOPs at seq_len. Where A with that key alone is not a valid spec
(heads that stop dividing, a layer selection past A's depth) the cost is None: not well
defined. The costs alone need not add up to the total B - A, which is given apart: changes
interact (more layers times a wider FFN). Every number comes from `model_record`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from archscope.errors import InputError
from archscope.estimate.record import model_record
from archscope.spec import ModelSpec, with_overrides
from archscope.spec.fields import to_mapping

SKIP = ("name", "source", "extends")


@dataclass(frozen=True)
class Costs:
    params: int
    cache_bytes: int  # KV cache + constant state, one sequence at seq_len, bf16
    decode_flops: int  # one decode step at seq_len

    def minus(self, other: "Costs") -> "Costs":
        return Costs(self.params - other.params, self.cache_bytes - other.cache_bytes,
                     self.decode_flops - other.decode_flops)


@dataclass(frozen=True)
class Difference:
    key: str  # dotted
    a: object  # A's value (None: absent)
    b: object
    alone: Costs | None  # applied alone to A, minus A; None when not well defined
    note: str = ""  # why `alone` is None


@dataclass(frozen=True)
class SpecDiff:
    a: str
    b: str
    seq_len: int
    differences: tuple[Difference, ...]
    plan_a: tuple[str, ...]  # the per-layer plans, summarised, when they differ
    plan_b: tuple[str, ...]
    costs_a: Costs
    costs_b: Costs

    @property
    def total(self) -> Costs:
        return self.costs_b.minus(self.costs_a)


def costs(spec: ModelSpec, seq_len: int) -> Costs:
    record = model_record(spec, seq_len)
    at = record.at(seq_len)
    return Costs(record.params.total, at.cache_bytes, at.decode.total)


def _flatten(mapping: dict, other: dict, prefix: str = "") -> dict[str, tuple]:
    """key -> (a value, b value) for every leaf that differs."""
    out: dict[str, tuple] = {}
    for key in dict.fromkeys([*mapping, *other]):
        if not prefix and key in SKIP:
            continue
        a, b = mapping.get(key), other.get(key)
        if a == b:
            continue
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict) and a.get("kind") == b.get("kind"):
            out.update(_flatten(a, b, f"{name}."))
        else:
            out[name] = (a, b)
    return out


def _plan(spec: ModelSpec) -> tuple[str, ...]:
    """Runs of alike layers: '0-15: full_attention + swiglu'."""
    def one(e) -> str:
        mixer = e.layer_type + (f" (window {e.window})" if e.window else "")
        return f"{mixer} + {e.ffn.kind if e.ffn else 'no FFN'}"

    runs: list[list] = []
    for e in spec.plan:
        if runs and runs[-1][2] == one(e):
            runs[-1][1] = e.index
        else:
            runs.append([e.index, e.index, one(e)])
    if len(runs) <= 6:
        return tuple(f"{s}-{t}: {what}" if s != t else f"{s}: {what}" for s, t, what in runs)
    counts: dict[str, int] = {}
    for e in spec.plan:  # interleaved layers: how many of each, in order of first use
        counts[one(e)] = counts.get(one(e), 0) + 1
    return tuple(f"{n} x {what}" for what, n in counts.items())


def _alone(spec: ModelSpec, key: str, value, base: Costs, seq_len: int):
    try:
        what_if = with_overrides(spec, [f"{key}={json.dumps(value)}"])
    except InputError as err:
        return None, f"not valid on A alone: {str(err).splitlines()[0][:160]}"
    return costs(what_if, seq_len).minus(base), ""


def spec_diff(a: ModelSpec, b: ModelSpec, seq_len: int = 4096, a_label: str = "",
              b_label: str = "") -> SpecDiff:
    base, other = costs(a, seq_len), costs(b, seq_len)
    diffs = []
    for key, (va, vb) in _flatten(to_mapping(a), to_mapping(b)).items():
        alone, note = _alone(a, key, vb, base, seq_len)
        diffs.append(Difference(key, va, vb, alone, note))
    plans = (_plan(a), _plan(b))
    same_plan = [e.layer_type for e in a.plan] == [e.layer_type for e in b.plan] and \
        plans[0] == plans[1]
    return SpecDiff(a_label or a.name, b_label or b.name, seq_len, tuple(diffs),
                    () if same_plan else plans[0], () if same_plan else plans[1], base, other)


def diff_dict(d: SpecDiff) -> dict:
    """The `diff --format json` object."""
    def c(x: Costs | None):
        return None if x is None else {"params": x.params, "cache_bytes": x.cache_bytes,
                                       "decode_flops": x.decode_flops}

    return {"a": d.a, "b": d.b, "seq_len": d.seq_len,
            "differences": [{"key": x.key, "a": x.a, "b": x.b, "alone": c(x.alone),
                             **({"note": x.note} if x.note else {})} for x in d.differences],
            "layers": {"a": list(d.plan_a), "b": list(d.plan_b)} if d.plan_a else None,
            "costs": {"a": c(d.costs_a), "b": c(d.costs_b), "total": c(d.total)}}
