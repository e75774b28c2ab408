"""Claims found in a markdown document by themselves (no transcription): tables.py and
sentences.py find them, names.py resolves the models, labels.py reads labels and numbers,
markdown.py splits the text. `extract_claims` returns claim mappings in the claims-file format
(archscope/claims/files.py) plus `text` (the cell or sentence), `line`, and `alternatives`
(other conditions under which the same words would hold, e.g. decode FLOPs with or without the
lm_head); `variant: mha` asks for the model's MHA what-if.
"""

from __future__ import annotations

import re

from archscope.claims.extract.markdown import parse
from archscope.claims.extract.names import Resolver
from archscope.claims.extract.sentences import line_claims
from archscope.claims.extract.stated_units import kind_of_unit
from archscope.claims.extract.tables import table_claims


def extract_claims(text: str, document: str, model_map: dict | None = None) -> list[dict]:
    doc = parse(text)
    probe = Resolver(model_map)
    default = probe.only_model(doc.title) if doc.title else None
    resolver = Resolver(model_map, default)
    if default:
        resolver.mentions(doc.title)
    found: list[dict] = []
    items = sorted([(t.line, "t", t) for t in doc.tables] + [(l.line, "l", l) for l in doc.lines],
                   key=lambda x: x[0])
    for _, kind, item in items:
        section_model = resolver.only_model(item.section) if item.section else None
        if kind == "t":
            found += table_claims(item, resolver, default, section_model)
        else:
            found += line_claims(item, resolver, section_model or default)
    out, seen = [], {}
    for c in found:
        c = _concrete(c)
        if c is None:
            continue
        stem = re.sub(r"\W+", "-", f"{document}-L{c['line']}-{c['model']}-{c['quantity']}")
        seen[stem] = seen.get(stem, 0) + 1
        out.append({**c, "id": stem if seen[stem] == 1 else f"{stem}-{seen[stem]}",
                    "document": document})
    return out


def _concrete(c: dict) -> dict | None:
    """A generic 'kv_cache' label made a quantity by the stated unit and the label's words."""
    c = dict(c)
    c.setdefault("alternatives", [])
    variant = c.pop("variant", None)
    label = c.pop("label", "").lower()
    if c["quantity"] == "kv_cache":
        unit = kind_of_unit(c["stated"])
        if unit == "bytes":
            if "per token" in label:
                c["quantity"] = "kv_bytes_per_token"
                c["conditions"] = {"dtype": c["conditions"].get("dtype", "bf16")}
            elif "seq_len" not in c["conditions"]:
                return None
            else:
                c["quantity"] = "kv_cache_bytes_per_layer" if "per layer" in label else \
                    "kv_cache_bytes"
                c["conditions"].setdefault("dtype", "bf16")
        elif unit == "":
            c["quantity"] = "kv_elements_per_token_mha" if variant == "mha" else \
                "kv_elements_per_token_per_layer"
            c["conditions"], variant = {}, None
        else:
            return None
    if variant == "mha":
        c["variant"] = "mha"
    return c
