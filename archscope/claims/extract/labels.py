"""What a table label or a line names: a claim quantity, a variant, conditions, a number.

`quantity_of(label)` maps a row or column label ("KV Heads", "Vocab Size", "Pos Encoding") to a
quantity of archscope/claims/quantities; `category_of(value)` recognises a categorical answer by
its own words ("RoPE + YaRN" is a position scheme, "Post-Norm" a norm position) for tables whose
rows are categories and whose cells list models. `conditions_in(text)` reads a context length
and a number format ("seq_len=4096, FP16", "8K context"); `stated_in(cell)` the number a cell
states ("**64 MB** (window=4096)" -> "64 MB", "24 heads × 128 = 3,072" -> "3,072").
"""

from __future__ import annotations

import functools
import re

# (pattern on the lower-cased label, quantity), first match wins; the order matters ("kv heads"
# before "heads", "embedding params" before "params", "mlp hidden" before "hidden").
LABELS: tuple[tuple[str, str], ...] = (
    (r"^q\s*/\s*kv heads", "heads_q_kv"),
    (r"\bkv heads|key/value heads|num_key_value_heads", "n_kv_heads"),
    (r"\b(query |q |attention |num_attention_)?heads\b|^n_heads$", "n_heads"),
    (r"head.?dim", "head_dim"),
    (r"gqa ratio|group size", "group_size"),
    (r"expansion", "expansion_ratio"),
    (r"mlp hidden|intermediate|ffn dim|d_ff|ffn hidden", "d_ff"),
    (r"embedding params|embedding parameters", "params_token_embedding"),
    (r"kv params", "params_kv_proj_per_layer"),
    (r"kv cache|cache size|cache per|^cache\b|^kv$", "kv_cache"),
    (r"vocab", "vocab_size"),
    (r"^(number of |num_hidden_)?layers$|^n_layers$", "n_layers"),
    (r"hidden|model dim|d_model|embed(ding)?.?dim|hidden.size", "d_model"),
    (r"context|max_position|max seq", "max_seq_len"),
    (r"^(total )?param(eter)?s$|^total parameters$|^size$", "params_total"),
    (r"^active( param(eter)?s)?$", "params_active"),
    (r"^attention( type| variant)?$", "attention_type"),
    (r"pos(itional)?.?enc", "position_scheme"),
    (r"^ffn( type)?$|^mlp$|^ffn/mlp$", "ffn_type"),
    (r"^activation", "activation"),
    (r"norm position|^placement$", "norm_position"),
    (r"^norm( type)?$|^normali[sz]ation$", "norm_kind"),
    (r"has bias|^bias", "norm_bias"),
    (r"epsilon|^eps$", "norm_eps"),
    (r"weight tying|tied|tie_word", "tie_embeddings"),
)
# Rows of a table of one model's parts ("Embeddings | 393M | 13.1%").
COMPONENTS: tuple[tuple[str, str, str], ...] = (  # pattern, params quantity, share component
    (r"^(embeddings?|embed_tokens|token embedding)$", "params_token_embedding", "embedding"),
    (r"attention$", "params_attention", "attention"),
    (r"(mlp|ffn|feed.forward)$", "params_ffn", "ffn"),
    (r"^(normali[sz]ation|norms?)$", "params_norms", "norms"),
    (r"^(lm.?head)", "params_lm_head_weight", ""),
    (r"^total", "params_total", ""),
)
# Words of categorical answers -> the quantity they answer.
CATEGORIES: tuple[tuple[str, str], ...] = (
    (r"\b(rope|yarn|alibi|sinusoidal|learned( absolute)?)\b", "position_scheme"),
    (r"\b(pre|post)[- ]?(norm|ln)\b", "norm_position"),
    (r"\b(rmsnorm|layernorm)\b", "norm_kind"),
    (r"\b(swiglu|geglu|relu|gelu)\b", "ffn_type"),
    (r"\b(gqa|mha|mqa|mla)\b", "attention_type"),
)
VARIANTS = {"mha": r"\bmha\b|multi-head attention", "gqa": r"\bgqa\b|grouped-query",
            "mla": r"\bmla\b|latent attention", "mqa": r"\bmqa\b|multi-query"}
DTYPES = {"fp32": "fp32", "float32": "fp32", "fp16": "fp16", "float16": "fp16", "bf16": "bf16",
          "bfloat16": "bf16", "fp8": "fp8", "int8": "int8", "int4": "int4"}
EMPTY = {"", "—", "-", "–", "n/a", "na", "varies", "?", "...", "…"}

_NUM = r"\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
_UNIT = r"(?:KiB|MiB|GiB|TiB|KB|MB|GB|TB|MFLOPs|GFLOPs|TFLOPs|FLOPs|bytes|[KMBT](?![a-zA-Z])|×(?!\s*\d)|x(?![\w])|%)"
STATED = re.compile(rf"(?:[<>]\s*)?(?:[~≈]\s*)?{_NUM}(?:\s*[-–]\s*{_NUM})?\s*{_UNIT}?\+?"
                    rf"(?:\s*:\s*{_NUM})?")


@functools.lru_cache(maxsize=4096)  # a table asks of each label once per row
def quantity_of(label: str) -> str | None:
    low = label.lower().strip(" :*")
    return next((q for pattern, q in LABELS if re.search(pattern, low)), None)


@functools.lru_cache(maxsize=4096)  # a table asks of each label once per row
def component_of(label: str) -> tuple[str, str] | None:
    low = re.sub(r"^\d+\s*[×x]\s*", "", label.lower().strip(" :*"))
    low = re.sub(r"\s*\(.*\)$", "", low)
    return next(((q, share) for p, q, share in COMPONENTS if re.search(p, low)), None)


@functools.lru_cache(maxsize=4096)  # a table asks of each label once per row
def category_of(value: str) -> str | None:
    low = value.lower()
    return next((q for pattern, q in CATEGORIES if re.search(pattern, low)), None)


def categories_in(value: str) -> list[tuple[str, str]]:
    """Each categorical answer in `value`, with the words that give it: "LayerNorm Pre" ->
    [(norm_kind, LayerNorm), (norm_position, Pre)]; "RoPE + YaRN" -> [(position_scheme, ...)]."""
    q = category_of(value)
    if q is None:
        return []
    if q == "norm_kind":
        kind = re.search(r"rmsnorm|layernorm", value, re.I)[0]
        where = re.search(r"\b(pre|post)\b", value, re.I)
        return [(q, kind)] + ([("norm_position", where[0])] if where else [])
    return [(q, value)]


@functools.lru_cache(maxsize=4096)  # a table asks of each label once per row
def variant_of(label: str) -> str | None:
    low = label.lower()
    hits = [v for v, pattern in VARIANTS.items() if re.search(pattern, low)]
    return hits[0] if len(hits) == 1 else None


_SEQ = re.compile(r"\bseq(?:_len|uence length| len)?\s*[=:]\s*([\d,]+)\s*(K\b)?", re.I)
# starting only where a run of digits and commas starts: from each of its digits, the run would
# be read again to its end (a megabyte of "1,1,1,..." in n squared)
_CONTEXT = re.compile(r"(?<![\d,])\b([\d,]+)\s*(K)?[- ](?:token )?context\b", re.I)
_AT_TOKENS = re.compile(r"\bat\s+(?:a\s+)?([\d,]+)\s*(?:(K)\b|\s+tokens\b)(?![- ]token window)",
                        re.I)
# "its 128K cache", "a 32K-token cache": the cache of that context
_CACHE_OF = re.compile(r"(?<![\d,])\b([\d,]+)\s*(K)?[- ](?:token )?cache\b", re.I)
WINDOW_NEAR = re.compile(r"window", re.I)  # "layers at 4,096 tokens" under a window: its span


def _tokens(m) -> int | None:
    """The context a match of _SEQ, _CONTEXT, _AT_TOKENS or _CACHE_OF states, in tokens ("32K"
    is 32,768); None for a comma alone or a run of digits."""
    digits = m[1].replace(",", "")
    if not digits or len(digits) > 12:
        return None
    return int(digits) * 1024 if m[2] else int(digits)


def contexts_in(text: str) -> set[int]:
    """Every context length `text` states (conditions_in reads only the first)."""
    out = set()
    for pattern in (_SEQ, _CONTEXT, _AT_TOKENS, _CACHE_OF):
        for m in pattern.finditer(text):
            if WINDOW_NEAR.search(text, max(0, m.start() - 40), m.start()):
                continue  # a window's span ("windows ... layers at 4,096 tokens"), no context
            if (n := _tokens(m)) is not None:
                out.add(n)
    return out


_DTYPE_WORD = re.compile(r"\b(" + "|".join(DTYPES) + r")\b", re.I)


def dtypes_in(text: str) -> list[tuple[int, str]]:
    """(position, dtype) of every number format `text` names."""
    return [(d.start(), DTYPES[d[1].lower()]) for d in _DTYPE_WORD.finditer(text)]


def conditions_in(text: str) -> dict:
    """seq_len and dtype a text states: "seq_len=4096", "seq=1024", "8K context", "FP16"."""
    out: dict = {}
    m = _SEQ.search(text) or _CONTEXT.search(text) or _AT_TOKENS.search(text)
    if m and (n := _tokens(m)) is not None:
        out["seq_len"] = n
    named = dtypes_in(text)
    if named:
        out["dtype"] = named[0][1]
    return out


@functools.lru_cache(maxsize=4096)
def label_conditions(label: str) -> tuple:
    """`conditions_in(label)` as (key, value) pairs, once per label however many rows ask."""
    return tuple(conditions_in(label).items())


def stated_in(cell: str) -> str | None:
    """The number a cell states, as written; None for an empty or wordy cell."""
    text = cell.strip()
    if text.lower() in EMPTY:
        return None
    bare = re.sub(r"\([^)]*\)", "", text).strip()
    text = bare if re.search(r"\d", bare) else text
    if "=" in text:
        text = text.rsplit("=", 1)[1].strip()
    product = re.fullmatch(rf"({_NUM})\s*[×x*]\s*({_NUM})", text)
    if product:
        return text
    m = STATED.search(text)
    if not m or re.match(r"[A-Za-z]", text) and not re.match(r"~|≈", text):
        return None if not m or m.start() > 0 and text[:m.start()].strip(" ~≈<>") else m[0]
    return m[0].strip()
