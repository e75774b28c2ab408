"""Typed conversion of plain mappings (from YAML or JSON) into frozen spec dataclasses.

One small routine reads every spec dataclass from its type hints, so every key gets the same
treatment: unknown keys are errors with a did-you-mean, types are checked exactly (a bool is
not an int, a string is not a number), and each error names the dotted key at fault.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import types
import typing
from typing import Any, Literal, Union

from archscope.errors import SpecError, quote
from archscope.spec.limits import float_limit_error, int_limit_error, list_limit_error

_MISSING = dataclasses.MISSING


def did_you_mean(word: str, choices) -> str:
    if not isinstance(word, str) or len(word) > 100:  # only a misspelt name has a close match
        return ""
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _type_name(tp) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "null"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    if origin is tuple:
        return "a list"
    return {int: "an integer", float: "a number", bool: "true/false", str: "a string"}.get(tp, str(tp))


def convert(tp, value: Any, key: str):
    """Convert `value` to type `tp`, raising SpecError naming `key` if it does not fit."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        by_kind = _arm_by_kind([a for a in args if a is not type(None)], value, key)
        if by_kind is not None:
            return from_mapping(by_kind, value, key)
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return convert(arg, value, key)
            except SpecError as err:
                errors.append(err)
        if len(errors) == 1:
            raise errors[0]
        fitting = [err for arm, err in zip([a for a in args if a is not type(None)], errors)
                   if _fits(arm, value)]
        if len(fitting) == 1:  # the value has one arm's shape: that arm's complaint is the one
            raise fitting[0]
        raise SpecError(f"expected {_type_name(tp)}, got {quote(value)}", key=key)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed or isinstance(value, bool):
            raise SpecError(
                f"expected one of {', '.join(map(str, allowed))}, got {quote(value)}"
                + did_you_mean(value, allowed), key=key)
        return value
    if origin is tuple:
        (item_tp, _ellipsis) = typing.get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise SpecError(f"expected a list, got {quote(value)}", key=key)
        too_long = list_limit_error(key, len(value))
        if too_long:
            raise SpecError(too_long, key=key)
        return tuple(convert(item_tp, v, f"{key}[{i}]") for i, v in enumerate(value))
    if dataclasses.is_dataclass(tp):
        return from_mapping(tp, value, key)
    if tp is dict:
        if not isinstance(value, dict):
            raise SpecError(f"expected a mapping, got {quote(value)}", key=key)
        return dict(value)
    if tp is bool:
        if not isinstance(value, bool):
            raise SpecError(f"expected true/false, got {quote(value)}", key=key)
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"expected an integer, got {quote(value)}", key=key)
        beyond = int_limit_error(key, value)
        if beyond:
            raise SpecError(beyond, key=key)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"expected a number, got {quote(value)}", key=key)
        try:
            number = float(value)  # an integer past 1.8e308 overflows
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise SpecError(f"expected a finite number, got {quote(value)}", key=key)
        beyond = float_limit_error(key, number)
        if beyond:
            raise SpecError(beyond, key=key)
        return number
    if tp is str:
        if not isinstance(value, str):
            raise SpecError(f"expected a string, got {quote(value)}", key=key)
        return value
    raise TypeError(f"unsupported spec field type {tp!r}")  # a bug in archscope, not bad input


def _kinds(tp) -> tuple:
    """The `kind` values a dataclass admits (its Literal), or () without a `kind` field."""
    hint = field_types(tp).get("kind") if dataclasses.is_dataclass(tp) else None
    return typing.get_args(hint) if typing.get_origin(hint) is Literal else ()


def _arm_by_kind(arms: list, value: Any, key: str):
    """A union of dataclasses told apart by `kind` (the state mixers): the arm whose kinds
    include the value's, so errors speak of that arm's keys; None when the union is not one."""
    if not arms or not all(_kinds(a) for a in arms) or not isinstance(value, dict):
        return None
    kinds = {k: arm for arm in arms for k in _kinds(arm)}
    kind = value.get("kind")
    if not isinstance(kind, str) or kind not in kinds:  # a list or a mapping is no kind
        shown = "missing" if "kind" not in value else f"got {quote(kind)}"
        raise SpecError(f"expected one of {', '.join(kinds)}, {shown}" + did_you_mean(kind, kinds),
                        key=_join(key, "kind"))
    return kinds[kind]


def _fits(tp, value: Any) -> bool:
    """Whether `value` has the shape of `tp` (a list for a tuple, a mapping for a dataclass)."""
    if typing.get_origin(tp) is tuple:
        return isinstance(value, (list, tuple))
    if dataclasses.is_dataclass(tp) or tp is dict:
        return isinstance(value, dict)
    if tp in (int, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, tp) if isinstance(tp, type) else False


@functools.cache
def field_types(cls) -> dict:
    """A dataclass's resolved field types: fixed per class, and resolving them (string
    annotations evaluated) is most of what building a spec costs, so once per class."""
    return typing.get_type_hints(cls)


def from_mapping(cls, data: Any, prefix: str = "", converted: dict | None = None):
    """Build dataclass `cls` from a mapping, checking keys and types, then run `cls.validate`.
    `converted`: {field: value} already converted from exactly `data[field]` (a sweep converts a
    field its grid leaves alone once, not once per variant); the rest is converted here."""
    where = prefix or "spec"
    if not isinstance(data, dict):
        raise SpecError(f"expected a mapping, got {quote(data)}", key=prefix or None)
    hints = field_types(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for name in data:
        if name not in fields:
            raise SpecError(f"unknown key {quote(name)} in {where}" + did_you_mean(name, fields),
                            key=_join(prefix, name))
    kwargs = {}
    for name, field in fields.items():
        key = _join(prefix, name)
        if converted is not None and name in converted:
            kwargs[name] = converted[name]
        elif name in data:
            kwargs[name] = convert(hints[name], data[name], key)
        elif field.default is _MISSING and field.default_factory is _MISSING:
            raise SpecError(f"missing required key '{name}' ({_type_name(hints[name])})", key=key)
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if validate is not None:
        try:
            validate()
        except SpecError as err:
            if err.key is None or not err.key.startswith(prefix):
                raise SpecError(err.detail, key=_join(prefix, err.key)) from None
            raise
    return obj


def to_mapping(obj) -> Any:
    """The inverse of `from_mapping`: plain dicts, lists and scalars; None-valued keys dropped."""
    if dataclasses.is_dataclass(obj):
        out = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if value is not None:
                out[f.name] = to_mapping(value)
        return out
    if isinstance(obj, tuple):
        return [to_mapping(v) for v in obj]
    return obj


def _join(prefix: str, name: str | None) -> str:
    if not name:
        return prefix
    return f"{prefix}.{name}" if prefix else name
