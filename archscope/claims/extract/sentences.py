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
from bisect import bisect_left, bisect_right

from archscope.claims.extract.labels import (DTYPES, STATED, categories_in, contexts_in,
                                             dtypes_in)
from archscope.claims.stated import StatedError, parse_stated

LIST = re.compile(r"^(.*?)\(([^()]+)\)\s*$")
BYTES = re.compile(r"(KiB|MiB|GiB|TiB|KB|MB|GB|TB|bytes)\b")
FLOPS = re.compile(r"(MFLOPs|GFLOPs|TFLOPs|FLOPs)\b")
PARTS = re.compile(r"attention|mlp|ffn|proj|per layer|layer|head|norm|expert", re.I)
_DTYPE = "|".join(DTYPES)
STATED_MAX = 64  # characters of a stated figure: longer is a run of digits, not a number
UNIT_LETTER = re.compile(r"[A-Za-z]")  # every figure _numeric reads has a unit or a suffix


TEXT_MAX = 600  # a claim's text: its line, or a window of it around the number


class _Facts:
    """What the rules ask of one line, each answered once for the line (lower-cased text,
    the text with its context, its sentences (_Sentences), whether a pattern occurs): asked
    again for each number, they made a line of n numbers cost n times its length."""

    def __init__(self, line):
        self.line = line
        self.text = line.text
        self.low = line.text.lower()
        self.context = f"{line.text} {line.context}".lower()
        self._sentences = None
        self._found: dict = {}

    @property
    def sentences(self) -> "_Sentences":
        if self._sentences is None:
            self._sentences = _Sentences(self)
        return self._sentences

    def has(self, pattern: str, where: str = "low") -> bool:
        """Whether `pattern` occurs in `where` ("low", "context" or "text"), memoised."""
        key = (pattern, where)
        if key not in self._found:
            self._found[key] = re.search(pattern, getattr(self, where)) is not None
        return self._found[key]


def _claim(q, stated, model, line, conditions=None, alternatives=()):
    return {"model": model, "quantity": q, "stated": stated.strip(), "section": line.section,
            "line": line.line, "text": line.text, "conditions": dict(conditions or {}),
            "alternatives": list(alternatives)}


def _shown(text: str, start: int, end: int) -> str:
    """The line as a claim shows it: whole up to TEXT_MAX characters, else a window around
    the number (so that n claims of one long line do not print it n times)."""
    if len(text) <= TEXT_MAX:
        return text
    half = (TEXT_MAX - (end - start)) // 2
    lo, hi = max(0, start - half), min(len(text), end + half)
    return ("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")


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
    facts, text = _Facts(line), line.text
    for m in STATED.finditer(text):
        if len(m[0]) > STATED_MAX or not UNIT_LETTER.search(m[0]):
            continue  # a run of digits, not a figure; or a bare number, which claims nothing
        if _next_to(text, m.start() - 1, -1) in FACTOR or _next_to(text, m.end(), 1) in FACTOR:
            continue  # a factor of a product is not a claim
        for c in _numeric(m, facts, model):
            c["text"] = _shown(text, m.start(), m.end())
            out.append(c)
    return out


FACTOR = ("×", "*")


def _next_to(text: str, at: int, step: int) -> str | None:
    """The first character from `at` on (towards `step`) that is not a space (None at an end):
    each space is passed by one number's look, so a line costs its length once."""
    while 0 <= at < len(text) and text[at].isspace():
        at += step
    return text[at] if 0 <= at < len(text) else None


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
    shown = line.text if len(line.text) <= TEXT_MAX else line.text[:TEXT_MAX - 1] + "…"
    return [{**_claim(q, part, model or f"?{written}", line), "text": shown}
            for q, part in categories_in(value) for _, _, written, model in mentions]


SENTENCE_END = re.compile(r"[.;!?](?=\s+[A-Z(])")  # a full stop before the next sentence


PER_TOKEN_MAX = 16e6  # bytes: no model caches more per token (DeepSeek's MHA-equivalent: 5 MB)


class _Sentences:
    """A line's sentences (a line is a paragraph: "per token" two sentences back does not make
    "3.76 GB" a per-token figure), each read once however many numbers it holds: its lower-case
    text, the contexts and number formats it states, where its clauses break, and which
    patterns occur in it. The line's own context and number format stand in for a sentence
    that states none, only where the line states one of each."""

    def __init__(self, facts: _Facts):
        text = facts.text
        self.text = text
        self.starts = [0] + [e.end() for e in SENTENCE_END.finditer(text)]
        lengths = contexts_in(facts.context)
        self.line_seq_len = next(iter(lengths)) if len(lengths) == 1 else None
        formats = {d for _, d in dtypes_in(facts.context)}
        self.line_dtype = formats.pop() if len(formats) == 1 else None
        self._read: dict = {}

    def of(self, start: int) -> dict:
        """What the sentence holding position `start` states (read the first time asked)."""
        i = bisect_right(self.starts, start) - 1
        if i not in self._read:
            lo = self.starts[i]
            hi = self.starts[i + 1] if i + 1 < len(self.starts) else len(self.text)
            low = self.text[lo:hi].lower()
            lengths = contexts_in(low)
            self._read[i] = {
                "lo": lo, "low": low, "found": {},
                "seq_len": (next(iter(lengths)) if len(lengths) == 1 else None) if lengths
                else self.line_seq_len,
                "dtypes": [(lo + at, d) for at, d in dtypes_in(low)],
                "cuts": [lo + m.end() for m in CLAUSE_CUT.finditer(low)]}
        return self._read[i]


CLAUSE_CUT = re.compile(r",|;|\band\b")
NEAR = 200  # characters of a clause either side of its number, at most


class _Where:
    """One number in its sentence (_Sentences): the sentence's context, the number format
    nearest it, its clause, and whether a pattern occurs in the sentence."""

    def __init__(self, sentences: _Sentences, start: int, end: int):
        self.read = sentences.of(start)
        self.text, self.start, self.end = sentences.text, start, end
        self.seq_len = self.read["seq_len"]
        self.dtype = self._dtype() or sentences.line_dtype

    def has(self, pattern: str) -> bool:
        found = self.read["found"]
        if pattern not in found:
            found[pattern] = re.search(pattern, self.read["low"]) is not None
        return found[pattern]

    def before(self, n: int) -> str:
        """The sentence's last `n` characters before the number, lower-case."""
        lo = self.read["lo"]
        return self.read["low"][max(0, self.start - lo - n):self.start - lo]

    def _dtype(self) -> str | None:
        """The number format nearest the number in its sentence ("24.7 GB with int4", "in
        bf16 it needs 16 GB"), one after it counted at half the distance of one before."""
        dtypes = self.read["dtypes"]
        k = bisect_left(dtypes, (self.end, ""))
        near = [(at - self.end, d) for at, d in dtypes[k:k + 1]] + \
            [(2 * (self.start - at), d) for at, d in dtypes[max(0, k - 1):k]]
        return min(near)[1] if near else None

    def clause(self) -> str:
        """The number's clause: between the commas and "and"s around it (at most NEAR
        characters either side)."""
        cuts = self.read["cuts"]
        k = bisect_left(cuts, self.start)
        lo = max(cuts[k - 1] if k else self.read["lo"], self.start - NEAR)
        j = bisect_left(cuts, self.end)
        hi = min(cuts[j] if j < len(cuts) else len(self.text), self.end + NEAR)
        return self.text[lo:hi].lower()


def _numeric(m, facts: _Facts, model) -> list[dict]:
    stated, line = m[0], facts.line
    after = line.text[m.end():m.end() + 40]
    where = _Where(facts.sentences, m.start(), m.end())
    if BYTES.search(stated):
        return _bytes(stated, after, facts, model, where)
    if FLOPS.search(stated):
        return _flops(stated, facts, model)
    if re.search(r"\d\s*[BMT]$", stated) and re.match(r"\s*(total\s+)?(parameters|params)\b",
                                                    after, re.I):
        if facts.has(r"\bsav(ed|es|e|ing)\b"):
            return [_claim("params_lm_head_weight", stated, model, line)]
        if "embedding" in where.clause():
            return [_claim("params_token_embedding", stated, model, line)]
        if facts.has(PARTS.pattern):  # (PARTS ignores case: the lower-cased text)
            return []
        q = "params_active" if re.match(r"\s*(parameters|params)\s+active", after) else \
            "params_total"
        return [_claim(q, stated, model, line)]
    return []


COUNTERFACTUAL = re.compile(r"(instead of|rather than|would be|would have|without)\W+(\w+\W+)?$")


def _bytes(stated, after, facts: _Facts, model, where: _Where) -> list[dict]:
    line = facts.line
    if COUNTERFACTUAL.search(where.before(30)):
        return []  # "2.1 GB instead of 2.8 GB": the other figure is a what-if the words leave open
    own = re.match(rf"\s*\(?\s*({_DTYPE})\b", after, re.I)
    dtype = DTYPES[own[1].lower()] if own else where.dtype
    kv = facts.has(r"\bkv\b|cache", "context")
    if re.fullmatch(r"[~≈]?\s*\d{1,3}\s*bytes", stated.strip()):
        return []  # "4 bytes": an element's size, not a model's
    try:
        size = parse_stated(stated).low
    except StatedError:
        return []
    if where.has(r"per[- ]token") and kv:
        # a figure of gigabytes beside "per token" is the cache of a context, never one token's
        return [] if size > PER_TOKEN_MAX else [
            _claim("kv_bytes_per_token", stated, model, line, {"dtype": dtype or "bf16"})]
    if where.has(r"model size|weights") and dtype:
        return [_claim("weights_bytes", stated, model, line, {"dtype": dtype})]
    if facts.has(r"\bkv\b|cache") and where.seq_len:
        return [_claim("kv_cache_bytes", stated, model, line,
                       {"seq_len": where.seq_len, "dtype": dtype or "bf16"})]
    if facts.has("embedding", "context") and facts.has("memory", "context") and dtype:
        return [_claim("token_embedding_bytes", stated, model, line, {"dtype": dtype})]
    return []


def _flops(stated, facts: _Facts, model) -> list[dict]:
    line = facts.line
    if facts.has("per token", "context") and not facts.has("per layer"):
        layers = ["attention_proj", "ffn", "router"]
        return [_claim("decode_flops", stated, model, line, {"components": layers + ["lm_head"]},
                       alternatives=[{"components": layers}])]
    if facts.has("per layer", "context"):
        words = (("attention_proj", "attention"), ("ffn", "mlp|ffn"))
        parts = [p for p, w in words if facts.has(w)] or \
            [p for p, w in words if facts.has(w, "context")]
        if len(parts) == 2 and not facts.has("total", "context"):
            return []
        parts = parts or ["attention_proj", "ffn"]
        return [_claim("decode_flops_per_layer", stated, model, line, {"components": parts})]
    return []
