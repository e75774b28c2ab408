"""The registry of families: model_type -> Family, collected from the family modules of this
package (each declares `FAMILIES`, a tuple of its records). Reader, exporter, weight mapping and
claims find a family only here; nothing else lists families, and no module patches another's
table. Adding a family is adding a module.

The modules are imported on the first lookup, not with the package: they are data and small
functions (no torch), but `show` of a preset never needs them.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path

from archscope.spec.families.base import Family

_NOT_FAMILIES = ("base", "registry")  # this package's modules that declare no family


@functools.cache
def _declared() -> tuple[dict[str, Family], dict[str, str]]:
    """(model_type -> Family, model_type -> the module that declares it)."""
    found: dict[str, Family] = {}
    where: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]),
                       key=lambda i: i.name):
        if info.name in _NOT_FAMILIES or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"archscope.spec.families.{info.name}")
        for family in module.FAMILIES:
            if family.model_type in found:  # one home per family
                raise RuntimeError(f"model_type {family.model_type!r} is declared by both "
                                   f"families/{where[family.model_type]}.py and "
                                   f"families/{info.name}.py")
            found[family.model_type] = family
            where[family.model_type] = info.name
    return dict(sorted(found.items())), where


def families() -> dict[str, Family]:
    """Every family archscope reads, by model_type (sorted)."""
    return _declared()[0]


def find(model_type: str) -> Family | None:
    return families().get(model_type)


def declared_in(model_type: str) -> str:
    """The module (families/<name>.py) that declares `model_type`."""
    return _declared()[1][model_type]


def depth(family: Family) -> int:
    """How many differences from its root family it is declared by (Llama: 0, Mistral: 1)."""
    n, seen = 0, family
    while seen.base is not None:
        seen, n = families()[seen.base], n + 1
    return n


def exporters() -> list[Family]:
    """The families that write config.json files, most specific first: those whose claim is
    their own before the generic ones (families/base.py `generic`), the deepest difference
    from a root first, then by model_type."""
    return sorted((f for f in families().values() if f.write is not None),
                  key=lambda f: (f.generic, -depth(f), f.model_type))


def weight_family(model_type: str) -> Family | None:
    """The family whose weight names a checkpoint of `model_type` uses (its class's family)."""
    family = find(model_type)
    if family is not None and family.class_of is not None:
        return find(family.class_of)
    return family


def document_names() -> tuple[str, ...]:
    """Every family word documents use, longest first (so "mixtral" is tried before a word
    that is its prefix)."""
    words = {word for f in families().values() for word in f.names}
    return tuple(sorted(words, key=lambda w: (-len(w), w)))


def document_spellings() -> dict[str, str]:
    """A document's spelling -> the preset it means (e.g. 'mistral7b' -> 'mistral-7b-v0.1')."""
    return {k: v for f in families().values() for k, v in f.spellings.items()}


def usual_presets() -> dict[str, str]:
    """A bare family word -> the preset it means when a document names no model of it."""
    return {k: v for f in families().values() for k, v in f.usual.items()}
