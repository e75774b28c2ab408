"""The order the comparison and the figures show models in: grouped by family, the families of
the models the documents compare first, and each model's peers (its family and its size).

A family is the record's `family` (the transformers class its spec exports as, read off the
spec's structure by spec/hf_export.py, never its name). Pure functions of the records.
"""

from __future__ import annotations

import math

from archscope.report.document_records import DOCUMENT_MODELS


def _size(r: dict) -> float:
    return math.log(r["params"]["total"]) if r.get("params") else 0.0


def _member_key(r: dict) -> tuple:
    """Within a family: the documents' models in the documents' order, then by size."""
    if r["name"] in DOCUMENT_MODELS:
        return (0, DOCUMENT_MODELS.index(r["name"]), 0.0, r["name"])
    return (1, 0, _size(r), r["name"])


def family_groups(records: list[dict]) -> list[tuple[str, list[dict]]]:
    """[(family, its records)]: families holding a model the documents compare first (in the
    documents' order), then the others by name; members by `_member_key`."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        groups.setdefault(r["family"], []).append(r)
    for members in groups.values():
        members.sort(key=_member_key)

    def key(family: str) -> tuple:
        first = _member_key(groups[family][0])
        return (first[0], first[1], family)
    return [(family, groups[family]) for family in sorted(groups, key=key)]


def ordered(records: list[dict]) -> list[dict]:
    """The records in family order (the comparison's rows)."""
    return [r for _, members in family_groups(records) for r in members]


def in_documents(r: dict) -> bool:
    return r["name"] in DOCUMENT_MODELS


def peers(r: dict, records: list[dict], family: int = 3, size: int = 2) -> list[dict]:
    """Up to `family` members of r's family nearest in size, then up to `size` other models
    nearest in total parameters (by ratio); r itself left out. Nearest first, ties by name."""
    def distance(o: dict) -> tuple:
        return (abs(_size(o) - _size(r)), o["name"])
    others = [o for o in records if o["name"] != r["name"]]
    kin = sorted((o for o in others if o["family"] == r["family"]), key=distance)[:family]
    rest = sorted((o for o in others if o["family"] != r["family"]), key=distance)[:size]
    return kin + rest
