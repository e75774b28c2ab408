"""The registry of claim quantities: name -> function(spec, **conditions) -> value, with a unit.

Every value is computed by the estimators (archscope.estimate) or read off the spec; nothing is
copied from a document. Numbers come in a base unit (`dimension`: params, bytes, FLOPs,
elements, count, ratio, percent, number); categorical answers are a `Category` whose `parts`
are compared (see `archscope/claims/verdict.py`). Conditions are keyword arguments; one without
a default is required (a byte count needs its dtype, a cache its seq_len).

This module only holds the registry and the helpers the theme modules share; the quantities
themselves register on import of `archscope.claims.quantities` (shape, positions, categories,
sizes), so look a quantity up through that package, never through this module alone.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Callable

from archscope.errors import InputError, quote
from archscope.spec.fields import did_you_mean
from archscope.spec.schema import AttentionSpec, ModelSpec


@dataclass(frozen=True)
class Category:
    """A categorical answer: `text` for people, `parts` (lower-case tokens) for comparing."""

    text: str
    parts: frozenset[str]

    @classmethod
    def of(cls, text: str, *parts: str) -> "Category":
        return cls(text, frozenset(p.lower() for p in (parts or (text,))))


@dataclass(frozen=True)
class Quantity:
    name: str
    fn: Callable
    dimension: str  # params, bytes, FLOPs, elements, count, ratio, percent, number, category, bool
    doc: str

    @property
    def conditions(self) -> dict[str, object]:
        """Accepted conditions -> default (inspect.Parameter.empty when required)."""
        return dict(_conditions(self.fn))


@functools.cache
def _conditions(fn: Callable) -> tuple:
    """A quantity's conditions, read from its function's signature once (inspect is slow, and
    a document may make tens of thousands of claims)."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    # Leading-underscore parameters bind loop variables of registered lambdas.
    return tuple((p.name, p.default) for p in params if not p.name.startswith("_"))


QUANTITIES: dict[str, Quantity] = {}


def quantity(name: str, dimension: str, doc: str = ""):
    def register(fn):
        QUANTITIES[name] = Quantity(name, fn, dimension, doc or inspect.getdoc(fn) or "")
        return fn
    return register


def get_quantity(name: str) -> Quantity:
    if name not in QUANTITIES:
        raise InputError(f"unknown quantity {quote(name)}{did_you_mean(name, QUANTITIES)}; valid "
                         f"quantities: {', '.join(sorted(QUANTITIES))}")
    return QUANTITIES[name]


def uniform(spec: ModelSpec, what: str, per_layer: Callable, layer: int | None):
    """`per_layer(plan_entry)` for `layer`, or the one value every layer shares."""
    if layer is not None:
        if not 0 <= layer < spec.n_layers:
            raise InputError(f"layer {layer} is outside 0..{spec.n_layers - 1}")
        return per_layer(spec.plan[layer])
    values = {per_layer(entry) for entry in spec.plan}
    if len(values) != 1:
        raise InputError(f"{spec.name}: {what} differs between layers; give the condition "
                         f"`layer: N`")
    return values.pop()


def attn_of(spec: ModelSpec, layer: int | None = None) -> AttentionSpec:
    """The attention of `layer`, or the one every layer shares."""
    attn = uniform(spec, "attention", lambda e: e.attention, layer)
    if attn is None:
        raise InputError(f"{spec.name}: layer {layer} has no attention (its mixer is "
                         f"{spec.plan[layer].layer_type})")
    return attn


def gqa_only(attn: AttentionSpec, what: str) -> None:
    if attn.head_dim is None:
        raise InputError(f"{what} is not defined for MLA: use qk_head_dim, v_head_dim or "
                         "kv_lora_rank")
