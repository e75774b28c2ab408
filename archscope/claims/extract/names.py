"""Model names as documents write them -> presets, configs or specs.

A mention is a family word (Llama, GPT, Mistral, ...) and the version and size tokens after it
("Llama 3.2-1B-Instruct", "GPT-2 (124M)", "DeepSeek-V2"), or a size alone ("the 8B model",
resolved within the document's own family). It resolves, in this order, to: a `--model-map`
entry; the preset whose name it spells (separators and case aside); a documents' spelling
(SPELLINGS); the one preset its spelling starts ("Llama 3.1" -> llama-3.1-8b); else, for a
bare family word or an ambiguous spelling ("Llama", "Llama 3.2"), the model of that family the
document named first, or the family's usual preset (FAMILY). Anything else is unresolved: its
claims are unverifiable, never wrong.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from pathlib import Path

from archscope.spec import preset_names
from archscope.spec.families.registry import (document_names, document_spellings,
                                              usual_presets)

# The family words documents use, each declared by its family (archscope/spec/families/).
FAMILIES = document_names()
# Spellings the documents use that no preset name spells.
SPELLINGS = document_spellings()
# A bare family word, when the document names no model of that family.
FAMILY = usual_presets()
_DROP = {"instruct", "chat", "base", "it", "hf"}
# Every repetition below is bounded (a version of at most four parts of six digits, a name of
# at most eight tokens): one attempt costs a bounded time wherever it starts, so a document is
# read in time linear in its length, even a megabyte of "Llama 1.1 1.1 ..." or "Llama_1_1_...".
_TOKEN = (r"(?:v?\d{1,6}(?:\.\d{1,6}){0,3}[a-z]?|\d{1,4}x\d{1,6}b|a\d{1,6}[bm]|xl|large|medium|"
          r"small|lite|code|oss|nano|instruct|chat|base)")
MENTION = re.compile(rf"\b({'|'.join(FAMILIES)})((?:[\s_-]?{_TOKEN}\b){{0,8}})(?!-?[a-z])",
                     re.IGNORECASE)
SIZE_ONLY = re.compile(r"\b(\d{1,6}(?:\.\d{1,6})?)\s?B[\s-]+(?:model|Model)\b")


def norm(name: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", name.lower())


class Resolver:
    """One document's name resolution: remembers the first model named of each family."""

    def __init__(self, model_map: dict[str, str] | None = None, default: str | None = None):
        self.model_map = {norm(k): v for k, v in (model_map or {}).items()}
        self.raw_map = dict(model_map or {})
        self.presets = {norm(p): p for p in preset_names()}
        self.first: dict[str, str] = {}
        self.named: dict[str, int] = {}  # family -> models of it named so far
        self.default = default

    def _family(self, key: str) -> str:
        return next((f for f in FAMILIES if key.startswith(f)), "")

    def resolve_key(self, key: str) -> str | None:
        if key in self.model_map:
            return self.model_map[key]
        if key in self.presets:
            return self.presets[key]
        if key in SPELLINGS:
            return SPELLINGS[key]
        family = self._family(key)
        starts = [p for k, p in self.presets.items() if k.startswith(key)]
        if len(starts) == 1 and key != family:
            return starts[0]
        for choice in (self.first.get(key), self.first.get(family), self.default,
                       FAMILY.get(key), FAMILY.get(family)):
            if choice in starts:
                return choice
        return None

    def mentions(self, text: str) -> list[tuple[int, int, str, str | None]]:
        """(start, end, as written, resolved model or None) for each model named in `text`."""
        found = []
        for name in self.raw_map:
            for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE):
                found.append((m.start(), m.end(), m[0], self.raw_map[name]))
        taken = _Spans(found)
        for m in MENTION.finditer(text):
            if taken.covers(m.start()):
                continue
            tokens = [t for t in re.split(r"[\s_-]+", m[2].strip(" _-")) if t]
            kept = [t for t in tokens if t.lower() not in _DROP]
            key = norm(m[1] + "".join(kept))
            model = self.resolve_key(key)
            if model and key not in self.first and key != self._family(key):
                self.first.setdefault(key, model)
                self.first.setdefault(self._family(key), model)
            if model:
                self.named[self._family(key)] = self.named.get(self._family(key), 0) + 1
            found.append((m.start(), m.end(), m[0], model))
        family = self._family(norm(self.default)) if self.default else \
            max(self.named, key=self.named.get, default="")
        if family:
            named = _Spans(found)
            for m in SIZE_ONLY.finditer(text):
                if not named.covers(m.start()):
                    found.append((m.start(), m.end(), m[0],
                                  self._by_size(family, m[1].rstrip("0").rstrip("."))))
        return sorted(found)

    def _by_size(self, family: str, size: str) -> str | None:
        hits = [p for k, p in self.presets.items()
                if k.startswith(family) and re.search(rf"(?<![\d.]){re.escape(size)}b", p)]
        return hits[0] if len(hits) == 1 else None

    def only_model(self, text: str) -> str | None:
        """The one model `text` names (a table cell, a heading), None for none or several."""
        models = {m for *_, m in self.mentions(text)}
        return models.pop() if len(models) == 1 else None


class _Spans:
    """Whether a position falls inside one of some (start, end, ...) spans: a search in the
    sorted starts, so that a line naming many models is read in n log n, not n squared."""

    def __init__(self, spans):
        self.spans = sorted((s, e) for s, e, *_ in spans)
        self.starts = [s for s, _ in self.spans]
        self.reach = list(accumulate((e for _, e in self.spans), max))  # furthest end so far

    def covers(self, at: int) -> bool:
        k = bisect_right(self.starts, at)
        return k > 0 and self.reach[k - 1] > at


def model_map_entries(entries) -> dict[str, str]:
    """`--model-map NAME=MODEL` strings -> {NAME: MODEL}; MODEL may be a config.json path."""
    from archscope.errors import InputError, quote
    from archscope.spec import load_spec

    out = {}
    for entry in entries:
        name, sep, model = entry.partition("=")
        if not sep or not name.strip() or not model.strip():
            raise InputError(f"--model-map {quote(entry)}: expected NAME=MODEL (a preset, a YAML "
                             "spec or a config.json)")
        model = model.strip()
        if model not in preset_names() and not Path(model).exists():
            raise InputError(f"--model-map {quote(entry)}: {quote(model)} is neither a preset nor a file")
        try:  # now, not when a claim names it: a FIFO, /dev/zero or a bad spec is refused
            load_spec(model)
        except InputError as err:
            raise InputError(f"--model-map {quote(entry)}: {err}") from None
        out[name.strip()] = model
    return out
