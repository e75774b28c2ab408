"""Claims in markdown tables, in four shapes:

- a model per row ("| Mistral 7B | 32 | 8 |") or per column ("| Layers | 28 | 32 |" under
  "| | Llama 3.2 3B | Llama 3.1 8B |"): every cell under a recognised label (labels.py);
- a category per row and the models in a column ("| RoPE + YaRN | DeepSeek, Llama 3.1 |"):
  each model named is said to have that category;
- one model's parts ("| Embeddings | 393M | 13.1% |"), for the section's or document's model;
- attention variants per column ("| | MHA (32 KV heads) | GQA (8 KV heads) |"): the model as
  shipped (GQA) and its MHA what-if.
"""

from __future__ import annotations

import re

from archscope.claims.extract.labels import (EMPTY, categories_in, component_of, conditions_in,
                                             label_conditions, quantity_of, stated_in,
                                             variant_of)

MODEL_LIST = re.compile(r"^(models?|used by|model\(s\)|example models?|examples?)$", re.I)
PROJ = re.compile(r"^(q|k|v|o|gate|up|down)_?proj\b", re.I)
CATEGORICAL = {"heads_q_kv", "attention_type", "position_scheme", "ffn_type", "activation",
               "norm_position", "norm_kind", "norm_bias", "tie_embeddings"}


def claim(q, stated, model, table, text, conditions=None, variant=None, label=""):
    return {"model": model, "quantity": q, "stated": stated, "section": table.section,
            "line": table.line, "text": text, "conditions": dict(conditions or {}),
            "variant": variant, "label": label}


def _paired(label: str, cell: str) -> list[tuple[str, str]]:
    """A label naming two quantities and a cell giving both ("Query / KV heads" | "32 / 8",
    "Total / active parameters" | "30.5B / 3.3B"): each label with its value, the words after
    the last part shared by the others ("Query heads", "KV heads"); [] for anything else."""
    labels = [p.strip() for p in label.split("/")]
    values = [v.strip() for v in cell.split("/")]
    if len(labels) < 2 or len(labels) != len(values) or not all(labels) or not all(values):
        return []
    noun = labels[-1].split(" ", 1)[1] if " " in labels[-1] else ""
    named = [f"{p} {noun}".strip() if " " not in p else p for p in labels[:-1]] + [labels[-1]]
    return list(zip(named, values))


def _cell_claims(label, cell, model, table, conds, variant, context=""):
    """The claim one cell makes under `label` (and the header `context` when the label names
    a variant, as in "| MHA | 4,096 | 32,768 |" under "Cache per Token"); a label and a cell
    that pair two quantities ("Query / KV heads" | "32 / 8") make one claim each."""
    q = quantity_of(label) or (quantity_of(context) if variant_of(label) else None)
    if q != "heads_q_kv" and (pairs := _paired(label, cell)):
        return [c for part, value in pairs
                for c in _cell_claims(part, value, model, table, conds, variant, context)]
    if q is None and re.search(r"kv cache", table.caption, re.I) and \
            re.search(r"per layer|total|cache", label, re.I):
        q = "kv_cache"
    if q is None or cell.strip().lower() in EMPTY:
        return []
    conds = {**conds, **dict(label_conditions(label))}
    text = f"{label}: {cell}"
    if q in CATEGORICAL:
        if q == "tie_embeddings" and not re.search(r"✅|❌|✓|✗|\byes\b|\bno\b", cell, re.I):
            return []
        if q == "heads_q_kv" and not re.fullmatch(r"\d+\s*/\s*\d+", cell):
            return []
        return [claim(q, cell, model, table, text, variant=variant, label=label)]
    stated = stated_in(cell)
    if stated is None:
        return []
    out = [claim(q, stated, model, table, text, conds, variant, label + " " + context)]
    active = re.search(r"(\d[\d.,]*\s*[BM])\s+active", cell)
    if q == "params_total" and active:
        out.append(claim("params_active", active[1], model, table, text, conds, variant))
    return out


def table_claims(table, resolver, default_model, section_model) -> list[dict]:
    header, rows = table.header, table.rows
    conds = conditions_in(table.caption)
    mentions = [resolver.mentions(h) for h in header]
    col_models = [_single(m) for m in mentions]
    row_mentions = [resolver.mentions(r[0]) if r else [] for r in rows]
    list_col = next((j for j, h in enumerate(header) if j and MODEL_LIST.match(h.strip())), None)
    if list_col is not None:
        return _category_rows(table, resolver, list_col)
    if sum(bool(m) for m in col_models[1:]) >= 1 and \
            sum(bool(m) for m in row_mentions) < len(rows) / 2:
        context = " ".join(h for h, m in zip(header[1:], col_models[1:]) if not m)
        return [c for r in rows for j, cell in enumerate(r[1:], 1) if j < len(header)
                and col_models[j] for c in _cell_claims(r[0], cell, _model(col_models[j]),
                                                        table, conds, variant_of(r[0]), context)]
    if sum(bool(m) for m in row_mentions) >= max(2, len(rows) / 2):
        out = []
        for r, m in zip(rows, row_mentions):
            model = _single(m)
            if not model:
                continue
            for j, cell in enumerate(r[1:], 1):
                if j < len(header):
                    out += _cell_claims(header[j], cell, _model(model), table, conds,
                                        variant_of(r[0]))
        return out
    model = section_model or default_model
    variants = [variant_of(h) for h in header]
    if model and sum(bool(v) for v in variants[1:]) >= 2:
        return [c for r in rows for j, cell in enumerate(r[1:], 1)
                if j < len(header) and variants[j]
                for c in _cell_claims(r[0], cell, model, table, conds, variants[j])]
    return _parts(table, model) if model else []


def _single(mentions):
    """The one model a cell names: (as written, preset or None); None for none or several."""
    names = {m[3] or m[2] for m in mentions}
    return (mentions[0][2], mentions[0][3]) if len(names) == 1 else None


def _model(mention):
    written, model = mention
    return model or f"?{written}"  # unresolved: unverifiable


def _category_rows(table, resolver, list_col) -> list[dict]:
    out = []
    for r in table.rows:
        if list_col >= len(r):
            continue
        value = re.sub(r"\((actual|.*wait.*)\)|✅|\.\.\..*", "", r[0]).strip()
        for q, part in categories_in(value):
            for _, _, written, model in resolver.mentions(r[list_col]):
                out.append(claim(q, part, model or f"?{written}", table,
                                 f"{r[0]}: {r[list_col]}", label=table.header[0]))
    return out


def _parts(table, model) -> list[dict]:
    """One model's parts: parameters (a per-layer and a total column, or a total only) and
    shares of the total."""
    header = table.header
    share_cols = [j for j, h in enumerate(header) if re.search(r"%|percent|share", h, re.I)]
    param_cols = [j for j in range(1, len(header)) if j not in share_cols]
    out = []
    for r in table.rows:
        label = r[0]
        proj = PROJ.match(re.sub(r"\*", "", label))
        part = component_of(label)
        if not (proj or part):
            continue
        for k, j in enumerate(param_cols):
            if j >= len(r) or (stated := stated_in(r[j])) is None:
                continue
            per_layer = len(param_cols) == 2 and k == 0
            if proj:
                kind = "attention" if proj[1].lower() in "qkvo" else "ffn"
                key = f"{kind}.{proj[1].lower()}_proj"
                q, conds = ("params_component", {"component": key, "per_layer": per_layer})
            elif per_layer:
                continue
            else:
                q, conds = part[0], {}
            out.append(claim(q, stated, model, table, f"{label}: {r[j]}", conds, label=label))
        for j in share_cols:
            if part and part[1] and j < len(r) and (stated := stated_in(r[j])):
                out.append(claim("params_share", stated, model, table, f"{label}: {r[j]}",
                                 {"component": part[1]}, label=label))
    return out
