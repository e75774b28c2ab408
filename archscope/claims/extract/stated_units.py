"""Which kind of unit a stated number carries: 'bytes', 'FLOPs', 'percent', 'ratio', a count
suffix ('count') or none ('')."""

from __future__ import annotations

from archscope.claims.stated import StatedError, UNITS, parse_stated


def kind_of_unit(stated: str) -> str | None:
    try:
        unit = parse_stated(stated).unit
    except StatedError:
        return None
    if unit in UNITS:
        return UNITS[unit][0]
    return "count" if unit else ""
