"""Claims in lines of text: a category with the models that have it, and a number with a unit
next to words that say what it measures.

Kept narrow on purpose, since a sentence says less about its quantity than a table label:
- "RoPE + YaRN (DeepSeek, Llama 3.1)": a category word, then models in parentheses;
- bytes: "per token" near KV/cache words (the cache per token), "model size"/"weights" (the
  weights, at the number format written next to it), KV/cache words and a stated context
  (the cache at that context), "embedding" and a number format (the embedding matrix);
- FLOPs "per token" (a decode step, with or without the lm_head) or "per layer" (attention
  projections, FFN, or both);
- a count in B or M followed by "parameters": "saved" by tying (the lm_head matrix), the
  embedding, or the model's total (active when it says so); other parts are left alone.
The model is the one the line names, else the section's, else the document's.
"""

from __future__ import annotations

import re

from archscope.claims.extract.labels import DTYPES, STATED, categories_in, conditions_in

LIST = re.compile(r"^(.*?)\(([^()]+)\)\s*$")
BYTES = re.compile(r"(KiB|MiB|GiB|TiB|KB|MB|GB|TB|bytes)\b")
FLOPS = re.compile(r"(MFLOPs|GFLOPs|TFLOPs|FLOPs)\b")
PARTS = re.compile(r"attention|mlp|ffn|proj|per layer|layer|head|norm|expert", re.I)
_DTYPE = "|".join(DTYPES)


def _claim(q, stated, model, line, conditions=None, alternatives=()):
    return {"model": model, "quantity": q, "stated": stated.strip(), "section": line.section,
            "line": line.line, "text": line.text, "conditions": dict(conditions or {}),
            "alternatives": list(alternatives)}


def line_claims(line, resolver, fallback) -> list[dict]:
    mentions = resolver.mentions(line.text)
    out = _category_list(line, mentions)
    if out:
        return out
    named = {m[3] or f"?{m[2]}" for m in mentions}  # ?NAME: unresolved, so unverifiable
    if len(named) > 1:
        return []
    model = named.pop() if named else fallback
    if not model:
        return []
    for m in STATED.finditer(line.text):
        before, after = line.text[:m.start()].rstrip(), line.text[m.end():].lstrip()
        if not before.endswith(("×", "*")) and not after.startswith(("×", "*")):
            out += _numeric(m, line, model)  # a factor of a product is not a claim
    return out


def _category_list(line, mentions) -> list[dict]:
    m = LIST.match(line.text)
    if not m or not mentions or any(s < m.start(2) for s, *_ in mentions):
        return []
    items = [i.strip() for i in m[2].split(",")]
    if len(mentions) != len(items):
        return []
    value = re.split(r"\s[—–-]\s|:", m[1].strip(" -*"))[0].strip()
    if len(value) > 40:
        return []
    return [_claim(q, part, model or f"?{written}", line) for q, part in categories_in(value)
            for _, _, written, model in mentions]


def _numeric(m, line, model) -> list[dict]:
    stated = m[0]
    after = line.text[m.end():m.end() + 40]
    text, low = line.text, line.text.lower()
    context = f"{line.text} {line.context}".lower()
    conds = conditions_in(f"{line.context} {line.text}")
    if BYTES.search(stated):
        return _bytes(stated, after, line, model, low, context, conds)
    if FLOPS.search(stated):
        return _flops(stated, line, model, context)
    if re.search(r"\d\s*[BMT]$", stated) and re.match(r"\s*(total\s+)?(parameters|params)\b",
                                                    after, re.I):
        if re.search(r"\bsav(ed|es|e|ing)\b", low):
            return [_claim("params_lm_head_weight", stated, model, line)]
        if "embedding" in low:
            return [_claim("params_token_embedding", stated, model, line)]
        if PARTS.search(text):
            return []
        q = "params_active" if re.match(r"\s*(parameters|params)\s+active", after) else \
            "params_total"
        return [_claim(q, stated, model, line)]
    return []


def _bytes(stated, after, line, model, low, context, conds) -> list[dict]:
    own = re.match(rf"\s*\(?\s*({_DTYPE})\b", after, re.I)
    dtype = DTYPES[own[1].lower()] if own else conds.get("dtype")
    kv = re.search(r"\bkv\b|cache", context)
    if re.fullmatch(r"[~≈]?\s*\d{1,3}\s*bytes", stated.strip()):
        return []  # "4 bytes": an element's size, not a model's
    if "per token" in low and kv:
        return [_claim("kv_bytes_per_token", stated, model, line, {"dtype": dtype or "bf16"})]
    if re.search(r"model size|weights", low) and dtype:
        return [_claim("weights_bytes", stated, model, line, {"dtype": dtype})]
    if re.search(r"\bkv\b|cache", low) and "seq_len" in conds:
        return [_claim("kv_cache_bytes", stated, model, line,
                       {"seq_len": conds["seq_len"], "dtype": dtype or "bf16"})]
    if "embedding" in context and "memory" in context and dtype:
        return [_claim("token_embedding_bytes", stated, model, line, {"dtype": dtype})]
    return []


def _flops(stated, line, model, context) -> list[dict]:
    if "per token" in context and "per layer" not in line.text.lower():
        layers = ["attention_proj", "ffn", "router"]
        return [_claim("decode_flops", stated, model, line, {"components": layers + ["lm_head"]},
                       alternatives=[{"components": layers}])]
    if "per layer" in context:
        parts = [p for p, w in (("attention_proj", "attention"), ("ffn", "mlp|ffn"))
                 if re.search(w, line.text.lower())] or \
            [p for p, w in (("attention_proj", "attention"), ("ffn", "mlp|ffn"))
             if re.search(w, context)]
        if len(parts) == 2 and not re.search(r"total", context):
            return []
        parts = parts or ["attention_proj", "ffn"]
        return [_claim("decode_flops_per_layer", stated, model, line, {"components": parts})]
    return []
