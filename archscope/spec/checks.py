"""Consistency checks shared by the spec dataclasses' `validate` methods.

Each raises SpecError with the field name at fault; `fields.from_mapping` adds the dotted prefix.
"""

from __future__ import annotations

from archscope.errors import SpecError


def require(cond: bool, key: str, message: str) -> None:
    if not cond:
        raise SpecError(message, key=key)


def positive(obj, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if value is not None:
            require(value > 0, name, f"must be positive, got {value}")


def absent_unless(obj, kind_field: str, kind: str, *names: str) -> None:
    """Keys that only mean something for one kind are errors elsewhere, not silently ignored."""
    for name in names:
        if getattr(obj, name) is not None:
            raise SpecError(
                f"only applies when {kind_field} is '{kind}' (here it is "
                f"'{getattr(obj, kind_field)}')", key=name)


def one_spelling(obj, name: str) -> None:
    """A fusion switch set to false is the same network as one left out: store it as null, so
    one network has one spelling (and a round trip through config.json compares equal)."""
    if getattr(obj, name) is False:
        object.__setattr__(obj, name, None)
