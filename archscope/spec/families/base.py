"""A family's record: everything archscope knows about one transformers model_type, declared in
the family's own module (archscope/spec/families/<family>.py) and found only through the
registry (families/registry.py).

A family is declared as its difference from another where it has one, the way transformers'
modular files declare "Mistral = Llama + a sliding window": `LLAMA.but("mistral", ...)` keeps
Llama's weight names, spec-key table and limits, and says what changes. What a derived family
does not inherit: its writer and what it exports (a family exports specs only where it says
so), its document names and its checkpoint quirks.

Weight-name rules are data here (no torch): archscope.weights.mapping applies them.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class Rule:
    """One HF tensor name <-> archscope module name(s) (see archscope.weights.mapping).

    Several targets mean the HF tensor is a fusion of ours, split along `split_dim` in the
    targets' sizes (GPT-2's c_attn holds q, k and v). `conv1d` marks GPT-2's Conv1D ([in, out],
    the transpose of nn.Linear). `alias` marks an older checkpoint name of a tensor another rule
    maps: read, never written. `layout` names a re-arrangement (weights/layouts.py). `part`
    (k, n): the HF tensor is the k-th of n equal slices of ours along `split_dim` (after its
    layout), the others coming from other rules (DBRX's w1 and v1: the gate and up halves of
    our experts' gate_up_proj). Patterns use `{i}` for the layer index and `{p}` for the
    parameter name (weight or bias).
    """

    hf: str
    ours: tuple[str, ...]
    conv1d: bool = False
    split_dim: int = 0
    alias: bool = False
    layout: str | None = None
    part: tuple[int, int] | None = None

    def regex(self) -> re.Pattern:
        pattern = (re.escape(self.hf).replace(r"\{i\}", r"(?P<i>\d+)")
                   .replace(r"\{k\}", r"(?P<k>\d+)")  # a second index (an adapter's use)
                   .replace(r"\{p\}", r"(?P<p>weight|bias)"))
        return re.compile(pattern + "$")


def rules(*rows) -> tuple[Rule, ...]:
    """Rules from rows (hf, ours or [ours...], optional {Rule field: value})."""
    return tuple(Rule(hf, (ours,) if isinstance(ours, str) else tuple(ours), **kw)
                 for hf, ours, *extra in rows for kw in [extra[0] if extra else {}])


def renamed(table: tuple[Rule, ...], old: str, new: str) -> tuple[Rule, ...]:
    """`table` with `old` replaced by `new` in every HF name (a wrapper's prefix, a module
    another class names differently)."""
    return tuple(dataclasses.replace(r, hf=r.hf.replace(old, new, 1)) for r in table)


def never(_spec) -> bool:
    return False


def _distinct(s):
    """(layer, count) for each distinct layer of spec `s` (its plan shares their parts)."""
    seen: dict = {}
    for layer in s.plan:
        key = (id(layer.attention), id(layer.ffn), id(layer.state))
        if key not in seen:
            seen[key] = layer
    return [(layer, 1) for layer in seen.values()]


def is_hybrid(s) -> bool:
    """Whether spec `s` has a state mixer, or a layer without attention or without an FFN."""
    return s.mixer is not None or any(layer.attention is None or layer.ffn is None
                                      for layer in s.plan)


@dataclass(frozen=True)
class Family:
    """One transformers family: its model_type and class, config.json -> spec (`read`) and
    back (`write`), which specs it writes (`exports`), its weight names, the table naming the
    config.json key each spec key came from, the names documents use for it."""

    model_type: str
    hf_class: str  # the CausalLM class a config.json's `architectures` names
    read: Callable  # (hf_keys.Keys) -> the spec mapping
    write: Callable | None = None  # (ModelSpec) -> the class's config keys; None: read only
    # which specs this family writes: a test of the structure only its class builds (the
    # exporter takes, among the families that claim a spec, one that writes it exactly)
    exports: Callable = never
    # whether what it exports for (a window, MoE, multipliers) is shared by other classes: a
    # specific class's claim is then tried, and explains a failure, first
    generic: bool = False
    # the component kinds its class builds: a family writes only specs made of them (and a
    # hybrid, a spec with a mixer or a layer without attention or an FFN, only with mixers)
    attentions: tuple[str, ...] = ("gqa",)
    ffns: tuple[str, ...] = ("swiglu", "geglu")
    mixers: tuple[str, ...] = ()
    weights: tuple[Rule, ...] = ()  # HF tensor names <-> archscope's (the class's layout)
    # published checkpoints' per-expert tensors: (per-expert name, fused name, half, halves)
    per_expert: tuple[tuple[str, str, int, int], ...] = ()
    renamed_tensors: tuple[tuple[str, str], ...] = ()  # older names read as current ones
    skipped_prefixes: tuple[str, ...] = ()  # a multimodal wrapper's tensors outside the text model
    # spec key -> the config.json key it is read from (naming the key of a spec error)
    spec_keys: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    # config.json key -> the spec field whose limit bounds it (hf_keys.FIELD where absent)
    key_fields: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    fixed: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)  # read only at these values
    class_of: str | None = None  # the registered type whose class and defaults it uses
    # what transformers' default config of this type needs before its own class can run it
    # (archscope families, tests/conformance/test_defaults.py): the smallest change, with why
    default_fix: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    names: tuple[str, ...] = ()  # the family word documents write ("llama", "qwen")
    # a document's spelling -> the preset it means; a bare family word -> its usual preset
    spellings: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    usual: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    base: str | None = None  # the family it is declared as a difference from
    doc: str = field(default="", compare=False)  # one line: what it is, as a difference

    def but(self, model_type: str, hf_class: str, **changes) -> Family:
        """A family declared as this one's difference (see the module doc)."""
        fresh = {"write": None, "exports": never, "generic": False, "per_expert": (),
                 "renamed_tensors": (),
                 "skipped_prefixes": (), "fixed": _EMPTY, "class_of": None, "names": (),
                 "default_fix": _EMPTY,
                 "spellings": _EMPTY, "usual": _EMPTY, "doc": ""}
        return dataclasses.replace(self, model_type=model_type, hf_class=hf_class,
                                   base=self.model_type, **{**fresh, **changes})

    @property
    def reads_nothing(self) -> bool:
        """Declared only to refuse (its reader names the component archscope lacks): it has no
        weight-name rules because archscope builds nothing of it."""
        return not self.weights

    def writes_hybrids(self) -> bool:
        """Whether its class builds state mixers (and so layers without attention or an FFN):
        only such a family claims a hybrid spec (is_hybrid)."""
        return bool(self.mixers)

    def unbuilt(self, s) -> tuple[str, str] | None:
        """(spec key, why) of the first component of `s` this class does not build, or None."""
        for layer, _ in _distinct(s):
            for part, kinds in (("attention", self.attentions), ("ffn", self.ffns),
                                ("mixer", self.mixers)):
                component = layer.state if part == "mixer" else getattr(layer, part)
                if component is not None and component.kind not in kinds:
                    top = component is getattr(s, part)
                    return (f"{part}.kind" if top else "layers",
                            f"it builds {' or '.join(kinds) or 'no'} {part} kinds, not "
                            f"{component.kind!r}{'' if top else f' (layer {layer.index})'}")
        return None

    def key_table(self, **more: str) -> Mapping[str, str]:
        """This family's spec-key table with `more` rows (for a derived family's `spec_keys`)."""
        return MappingProxyType({**self.spec_keys, **more})

    def field_table(self, **more: str) -> Mapping[str, str]:
        """This family's config-key -> limit-field table with `more` rows."""
        return MappingProxyType({**self.key_fields, **more})


def frozen(mapping: Mapping) -> Mapping:
    return MappingProxyType(dict(mapping))
