"""`archscope diff` as text, markdown or CSV: the differing keys with what each costs alone on
A, then the per-layer plans where they differ, then the totals A -> B. Pure: strings out.
Cache sizes in the --units byte family (archscope/units.py); CSV in bytes."""

from __future__ import annotations

import json

from archscope.estimate.diff import Costs, SpecDiff, diff_dict
from archscope.tables import records_csv
from archscope.units import human, size, text_table, units_note

HEAD = ["key", "A", "B", "params alone", "cache alone", "decode FLOPs alone"]


def _value(v) -> str:
    if isinstance(v, list):
        return f"{len(v)} override(s)" if v else "none"
    text = "absent" if v is None else json.dumps(v) if isinstance(v, dict) else str(v)
    return text if len(text) <= 48 else text[:45] + "..."


def _signed(n: int, text=human) -> str:
    return "0" if n == 0 else f"{'+' if n > 0 else '-'}{text(abs(n))}"


def _costs(c: Costs | None) -> list[str]:
    if c is None:
        return ["n/a", "n/a", "n/a"]
    return [_signed(c.params), _signed(c.cache_bytes, size), _signed(c.decode_flops)]


def _rows(d: SpecDiff) -> list[list[str]]:
    rows = [[x.key, _value(x.a), _value(x.b), *_costs(x.alone)] for x in d.differences]
    rows.append(["total A -> B", "", "", *_costs(d.total)])
    return rows


def _totals(d: SpecDiff) -> list[list[str]]:
    return [["", "params", "cache", "decode FLOPs"],
            ["A", human(d.costs_a.params), size(d.costs_a.cache_bytes),
             human(d.costs_a.decode_flops)],
            ["B", human(d.costs_b.params), size(d.costs_b.cache_bytes),
             human(d.costs_b.decode_flops)]]


FOOT = ("'alone': A with that one key set to B's value, minus A (n/a: not a valid spec on its "
        "own); cache = KV + state, one sequence at seq_len {n}, bf16; decode FLOPs at seq_len "
        "{n}. The parts need not add up to the total: changes interact. {units}.")


def diff_text(d: SpecDiff) -> str:
    out = [f"A: {d.a}", f"B: {d.b}", ""]
    if not d.differences:
        return "\n".join(out + ["the two specs are the same", ""])
    out += text_table([HEAD] + _rows(d), right={3, 4, 5}, indent="")
    notes = [f"  {x.key}: {x.note}" for x in d.differences if x.note]
    if d.plan_a:
        out += ["", "layers (A):", *(f"  {p}" for p in d.plan_a), "layers (B):",
                *(f"  {p}" for p in d.plan_b)]
    out += ["", *text_table(_totals(d), right={1, 2, 3}, indent=""), ""]
    out += notes + [FOOT.format(n=f"{d.seq_len:,}", units=units_note()), ""]
    return "\n".join(out)


def _md(rows: list[list[str]]) -> list[str]:
    cell = [[c.replace("|", "\\|") for c in r] for r in rows]
    return [f"| {' | '.join(cell[0])} |", "|" + "---|" * len(cell[0]),
            *(f"| {' | '.join(r)} |" for r in cell[1:])]


def diff_markdown(d: SpecDiff) -> str:
    out = [f"# {d.a} vs {d.b}", ""]
    if not d.differences:
        return "\n".join(out + ["The two specs are the same.", ""])
    out += _md([HEAD] + _rows(d)) + [""]
    if d.plan_a:
        out += _md([["layers", "A", "B"]] + [
            [str(i), a, b] for i, (a, b) in enumerate(
                zip(d.plan_a + ("",) * len(d.plan_b), d.plan_b + ("",) * len(d.plan_a)))
            if a or b]) + [""]
    out += _md(_totals(d)) + [""]
    out += [f"- `{x.key}`: {x.note}" for x in d.differences if x.note]
    return "\n".join(out + ["", FOOT.format(n=f"{d.seq_len:,}", units=units_note()), ""])


def diff_csv(d: SpecDiff) -> str:
    """The text view's main table, one row per differing key then the total A -> B, with the
    keys of --format json (`alone.cache_bytes`: bytes); a value that is a list or an object is
    its JSON text."""
    record = diff_dict(d)
    rows = [{**x, "a": _cell(x["a"]), "b": _cell(x["b"]),  # n/a: empty cells
             "alone": x["alone"] or dict.fromkeys(("params", "cache_bytes", "decode_flops"))}
            for x in record["differences"]]
    return records_csv(rows + [{"key": "total A -> B", "alone": record["costs"]["total"]}])


def _cell(value):
    return json.dumps(value) if isinstance(value, (dict, list)) else value
