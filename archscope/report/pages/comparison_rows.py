"""comparison.md's rows: a family column (named on each family's first row only) and short row
labels for models whose layers differ (the longer of two layer lists becomes 'other layers')."""

from __future__ import annotations

from archscope.report.fmt import layers_label

LONG_LABEL = 24  # characters: a layer list longer than this is named by its count
FAMILY = ("family", lambda row: row["family_cell"], "l")


def part_label(part: dict, parts: list[dict]) -> str:
    """'layers 5, 11, ..., 59', or '51 other layers' when the list is long and another part of
    the model is named by a short one."""
    label = layers_label(part)
    short = [p for p in parts if len(layers_label(p)) <= LONG_LABEL]
    if len(label) > LONG_LABEL and short:
        return f"{part['count']} other layer" + ("s" if part["count"] > 1 else "")
    return label


def joined(record: dict, key: str, text) -> str:
    """One text per distinct component, with its (short) layers when there are several."""
    parts = record[key]
    if len(parts) == 1:
        return text(parts[0])
    return "; ".join(f"{text(p)} ({part_label(p, parts)})" for p in parts)


def expand(records: list[dict], key: str) -> list[dict]:
    """One row per distinct `attention` or `ffn` of each model: {model, record, part}."""
    def label(r: dict, part: dict) -> str:
        return r["name"] if len(r[key]) == 1 else f"{r['name']} ({part_label(part, r[key])})"
    return [{"model": label(r, part), "record": r, "part": part, "family": r["family"]}
            for r in records for part in r[key]]


def grouped(rows: list[dict]) -> list[dict]:
    """The rows with `family_cell`: the family on the first row of each run, else empty."""
    out, last = [], None
    for row in rows:
        out.append({**row, "family_cell": row["family"] if row["family"] != last else ""})
        last = row["family"]
    return out
