"""Likely causes of a wrong number: the usual slips, each tried numerically.

Each candidate turns the computed value into what a document would have printed had it made
that slip (dropped the factor 2 of K and V, printed MiB as MB, counted a tied head twice, ...).
A candidate explains a claim when its value agrees with the stated number under the stated
rounding. Single slips are tried first, then pairs of multiplicative ones ("dropped factor 2
and MiB shown as MB") for precisely stated numbers; if none fits, a number within one unit of
its last digit (and 5%) is called mis-rounded. Nothing here decides a verdict: it only explains
a "differs". A range or an open bound gets no cause: too loose to single one out.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable

from archscope.claims.stated import Stated
from archscope.errors import InputError
from archscope.estimate import count_params
from archscope.estimate.dtypes import dtype_bytes
from archscope.spec.schema import ModelSpec

# Largest relative rounding of a stated number at which a slip (SINGLE) or two slips together
# (PAIR) still count as an explanation rather than a coincidence.
SINGLE_SLACK = 0.2
PAIR_SLACK = 0.02
# decimal scale -> (binary unit, decimal unit, power of two)
BINARY = {1e3: ("KiB", "KB", 10), 1e6: ("MiB", "MB", 20), 1e9: ("GiB", "GB", 30),
          1e12: ("TiB", "TB", 40)}


@dataclass(frozen=True)
class Context:
    spec: ModelSpec
    quantity: str
    dimension: str
    conditions: dict
    stated: Stated


@dataclass(frozen=True)
class Slip:
    label: str | Callable[[Context], str]
    # computed value -> the value printed with the slip; None when the slip cannot apply
    apply: Callable[[float, Context], float | None]
    multiplicative: bool = True


def _factor(f: Callable[[Context], float | None]):
    return lambda c, ctx: None if (k := f(ctx)) in (None, 1) else c * k


def _sized(ctx: Context) -> bool:
    """Sizes that add up from parts, where a stray or lost factor 2 is a common slip."""
    return ctx.dimension in ("params", "bytes", "FLOPs", "elements")


def _is_kv(ctx: Context) -> bool:
    return ctx.quantity.startswith("kv_") or ctx.quantity.endswith("kv_proj_per_layer")


def _binary_as_decimal(ctx: Context) -> float | None:
    """A 2^10k figure printed with a 10^3k label: MiB as MB, or 'M' = 2^20 for a count."""
    if ctx.stated.unit in ("KB", "MB", "GB", "TB") or (
            ctx.dimension == "params" and ctx.stated.unit in ("K", "M", "B", "T")):
        return ctx.stated.scale / 2 ** BINARY[ctx.stated.scale][2]
    return None


def _decimal_as_binary(ctx: Context) -> float | None:
    for scale, (binary, _, power) in BINARY.items():
        if ctx.stated.unit == binary:
            return 2 ** power / scale
    return None


def _binary_label(ctx: Context) -> str:
    binary, decimal, power = BINARY[ctx.stated.scale]
    ten = power // 10 * 3
    if ctx.dimension == "params":
        return f"a count divided by 2^{power} and labelled '{ctx.stated.unit}' (10^{ten})"
    return f"{binary} printed as {decimal} (2^{power} vs 10^{ten} bytes)"


def _decimal_label(ctx: Context) -> str:
    binary, decimal, power = next(v for v in BINARY.values() if v[0] == ctx.stated.unit)
    return f"{decimal} printed as {binary} (10^{power // 10 * 3} vs 2^{power} bytes)"


def _dtype(ctx: Context) -> float | None:
    return dtype_bytes(ctx.conditions["dtype"]) if "dtype" in ctx.conditions else None


def _group(ctx: Context) -> float | None:
    attention_params = any(k in ctx.quantity for k in ("attention", "k_proj", "v_proj"))
    if not (_is_kv(ctx) or attention_params):
        return None
    return ctx.spec.attention.group_size  # 1 (no slip) for MHA and MLA


def _mla_rope(ctx: Context) -> float | None:
    attn = ctx.spec.attention
    if not attn.kv_lora_rank or not _is_kv(ctx) or "mha" in ctx.quantity:
        return None
    return attn.kv_lora_rank / (attn.kv_lora_rank + attn.qk_rope_head_dim)


def _mha_value_width(ctx: Context) -> float | None:
    """An MHA-equivalent taken as 2 x n_heads x v_head_dim when keys are wider than values
    (MLA's keys carry the RoPE dims too; the DeepSeek-V2 paper's table writes 2 n_h d_h)."""
    attn = ctx.spec.attention
    if "mha" not in ctx.quantity or attn.qk_head_dim == attn.value_head_dim:
        return None
    return 2 * attn.value_head_dim / (attn.qk_head_dim + attn.value_head_dim)


def _head(sign: int, tied: bool):
    def apply(c: float, ctx: Context) -> float | None:
        spec = ctx.spec
        if ctx.dimension != "params" or spec.tie_embeddings != tied or \
                ctx.quantity not in ("params_total", "params_active", "params_non_embedding"):
            return None
        return c + sign * count_params(spec).breakdown["embedding"]  # the vocab x d matrix
    return apply


def _rounded_total(c: float, ctx: Context) -> float | None:
    """A share taken of the headline size ("393M of ~3B = 13.1%") instead of the exact total."""
    if ctx.quantity != "params_share":
        return None
    total = count_params(ctx.spec).total
    headline = float(f"{total:.1g}")
    return c * total / headline


def _layers(ctx: Context) -> float | None:
    return ctx.spec.n_layers if ctx.dimension in ("params", "bytes", "FLOPs", "elements") \
        else None


SLIPS: tuple[Slip, ...] = (
    Slip("dropped the factor 2 for K and V",
         _factor(lambda ctx: 0.5 if _is_kv(ctx) else None)),
    Slip("a factor of 2 too many", _factor(lambda ctx: 2 if _sized(ctx) else None)),
    Slip("a factor of 2 too few", _factor(
        lambda ctx: 0.5 if _sized(ctx) and not _is_kv(ctx) else None)),
    Slip(_binary_label, _factor(_binary_as_decimal)),
    Slip(_decimal_label, _factor(_decimal_as_binary)),
    Slip("a tied lm_head counted twice", _head(+1, tied=True), multiplicative=False),
    Slip(lambda ctx: "a share of the rounded total "
         f"({float(f'{count_params(ctx.spec).total:.1g}') / 1e9:g}B), not the exact one",
         _rounded_total, multiplicative=False),
    Slip("the untied lm_head left out", _head(-1, tied=False), multiplicative=False),
    Slip("a per-layer figure given for the whole model",
         _factor(lambda ctx: 1 / _layers(ctx) if _layers(ctx) else None)),
    Slip("a whole-model figure given per layer", _factor(_layers)),
    Slip("KV heads taken as the query heads (MHA-sized)", _factor(_group)),
    Slip("query heads taken as the KV heads", _factor(lambda ctx: 1 / g if (g := _group(ctx))
                                                       else None)),
    Slip("MLA's shared RoPE key (qk_rope_head_dim) left out", _factor(_mla_rope)),
    Slip("keys sized as values: 2 × n_heads × v_head_dim (the RoPE dims of each key left out)",
         _factor(_mha_value_width)),
    Slip("1 byte per element (the dtype size left out)",
         _factor(lambda ctx: 1 / b if (b := _dtype(ctx)) else None)),
    Slip("prefix off by 1000 (e.g. T for G)", _factor(
        lambda ctx: 1e3 if ctx.dimension in ("bytes", "FLOPs", "params") else None)),
    Slip("prefix off by 1000 (e.g. G for T)", _factor(
        lambda ctx: 1e-3 if ctx.dimension in ("bytes", "FLOPs", "params") else None)),
)


def _label(slip: Slip, ctx: Context) -> str:
    return slip.label(ctx) if callable(slip.label) else slip.label


def _join_pairs(pairs: list[tuple[str, str]]) -> str:
    """[(A, B), (C, B)] -> "B, and A or C": slips of equal size share the one that all need."""
    common = set(pairs[0]).intersection(*map(set, pairs[1:]))
    if len(pairs) > 1 and len(common) == 1:
        shared = common.pop()
        others = [a if b == shared else b for a, b in pairs]
        return f"{shared}, and {' or '.join(dict.fromkeys(others))}"
    return " or ".join(dict.fromkeys(f"{a}, and {b}" for a, b in pairs))


def likely_cause(computed: float, ctx: Context) -> str:
    """The slips that turn `computed` into the stated number, '' when none does."""
    # A window left out is the specific slip; a window that caps nothing explains a number
    # only when no numeric slip does.
    return window_cause(computed, ctx, left_out=True) or _slips(computed, ctx) or \
        window_cause(computed, ctx, left_out=False)


def _slips(computed: float, ctx: Context) -> str:
    stated = ctx.stated
    if stated.low != stated.high:
        return ""  # a range or a bound: too loose to tell one slip from another
    # How loosely the number is stated: "~0.3M" (+-17%) fits many a slip by chance, so a
    # loose figure gets single slips only, and only up to SINGLE_SLACK.
    slack = stated.tolerance / abs(stated.low) if stated.low else 0.0
    if slack > SINGLE_SLACK:
        return _misrounded(computed, stated)
    singles = []
    for slip in SLIPS:
        alt = slip.apply(computed, ctx)
        if alt is not None and ctx.stated.contains(alt):
            singles.append(_label(slip, ctx))
    if singles:
        return " or ".join(dict.fromkeys(singles))
    if slack > PAIR_SLACK:
        return _misrounded(computed, stated)
    pairs = []
    for a, b in combinations([s for s in SLIPS if s.multiplicative], 2):
        first = a.apply(computed, ctx)
        alt = None if first is None else b.apply(first, ctx)
        if alt is not None and ctx.stated.contains(alt):
            pairs.append((_label(a, ctx), _label(b, ctx)))
    if pairs:
        return _join_pairs(pairs)
    return _misrounded(computed, stated)


def window_cause(computed: float, ctx: Context, left_out: bool) -> str:
    """A cache figure that took the sliding window wrongly: shrunk by a window that caps
    nothing at this context, or left at the full context when the window caps it."""
    if not ctx.quantity.startswith("kv_cache_bytes") or "seq_len" not in ctx.conditions:
        return ""
    windows = sorted({e.window for e in ctx.spec.plan if e.attention and e.window})
    if not windows:
        return ""
    seq_len, w = ctx.conditions["seq_len"], windows[0]
    if not left_out:
        return "" if seq_len > w or ctx.stated.high >= computed else (
            f"sliding window: a {w:,}-token window caps nothing at seq_len {seq_len:,}, "
            "so every token is still cached")
    if seq_len <= w:
        return ""
    from archscope.claims.quantities import get_quantity
    from archscope.spec import with_overrides

    try:
        full = get_quantity(ctx.quantity).fn(with_overrides(ctx.spec, ["attention.window=null"]),
                                             **ctx.conditions)
    except InputError:  # windows set in per-layer overrides: no one what-if removes them
        return ""
    if ctx.stated.contains(full):
        return (f"sliding window left out: windowed layers cache at most {w:,} tokens, not "
                f"all {seq_len:,}")
    return ""


def _misrounded(computed: float, stated: Stated) -> str:
    """Within one unit of the last digit, and close (a "0.3" for 0.175 is not a rounding)."""
    off = abs(stated.low - computed)
    if stated.ulp and off <= 1.5 * stated.ulp and off <= 0.05 * abs(computed):
        return "mis-rounded (last digit off by one)"
    return ""
