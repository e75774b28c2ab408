"""A claim's verdict: the stated text against the computed value -> agree or wrong.

Categorical claims ("RMSNorm", "GQA+SWA", "✅") agree when every part stated is a part of the
computed answer (aliases such as "pre-LN" -> pre and filler words such as "FFN" aside). A
number agrees when the computed value lies within a unit of its last digit (stated.py); a number
that differs gets its likely cause (causes.py). The computed value is displayed like the stated
one (same scale, one more digit).
"""

from __future__ import annotations

import math
import re

from archscope.claims.causes import Context, likely_cause
from archscope.claims.quantities import Category
from archscope.claims.result import ClaimResult
from archscope.claims.stated import UNITS, parse_stated
from archscope.errors import InputError, quote
from archscope.spec.fields import did_you_mean

# Counts of different things are all counts; the unit word only labels them.
FAMILY = {"elements": "count", "tokens": "count", "number": "number"}
TRUE_MARKS, TRUE_WORDS = ("✅", "✓"), ("yes", "true", "tied")
FALSE_MARKS, FALSE_WORDS = ("❌", "✗"), ("no", "false", "untied")
ALIASES = {"sw": "swa", "sliding window": "swa", "pre-norm": "pre", "pre-ln": "pre",
           "post-norm": "post", "post-ln": "post", "standard": "mlp", "learned absolute": "learned",
           "absolute": "learned", "rms norm": "rmsnorm", "layer norm": "layernorm",
           "swish": "silu", "gelu_new": "gelu"}
# Words that label a part without changing it: "Learned PE", "GELU FFN".
FILLER = {"pe", "ffn", "attention"}


def categorical(claim: dict, base: dict, extra: dict, dimension: str,
                computed: Category) -> ClaimResult:
    """Agrees when every stated part is a part of the computed answer."""
    stated = {_yes_no(claim["stated"])} if dimension == "bool" else _parts(claim["stated"])
    extra_parts = sorted(stated - computed.parts)
    # Name the wrong part only when the rest was right ("GQA+SWA" for plain GQA).
    cause = f"{' and '.join(extra_parts)} not in the spec" \
        if extra_parts and len(extra_parts) < len(stated) else ""
    return ClaimResult(**base, **extra, verdict="wrong" if extra_parts else "agree",
                       computed=computed.text, computed_text=computed.text, cause=cause)


def _parts(text) -> frozenset[str]:
    """"SwiGLU + MoE" -> {swiglu, moe}; "GQA + SW" -> {gqa, swa}."""
    parts = set()
    for raw in str(text).replace("(", "+").replace(")", "").split("+"):
        token = " ".join(w for w in raw.lower().split() if w not in FILLER)
        if token:
            parts.add(ALIASES.get(token, token))
    return frozenset(parts)


def _yes_no(stated) -> str:
    if isinstance(stated, bool):
        return str(stated).lower()
    text = str(stated).lower()
    words = set(re.findall(r"[a-z]+", text))
    answers = set()
    if any(m in text for m in TRUE_MARKS) or words & set(TRUE_WORDS):
        answers.add("true")
    if any(m in text for m in FALSE_MARKS) or words & set(FALSE_WORDS):
        answers.add("false")
    if len(answers) != 1:
        raise InputError(f"cannot read {quote(stated)} as yes or no (use ✅/❌ or yes/no)")
    return answers.pop()


def numeric(claim, base, extra, name, dimension, spec, computed: float) -> ClaimResult:
    """Agrees when the computed value lies within a unit of the stated number's last digit."""
    stated = parse_stated(claim["stated"], base["unit"])
    unit = stated.unit if stated.unit in UNITS else base["unit"]
    if unit:
        if unit not in UNITS:
            raise InputError(f"unknown unit {quote(unit)}{did_you_mean(unit, UNITS)}; expected one "
                             f"of {', '.join(UNITS)}")
        have = FAMILY.get(UNITS[unit][0], UNITS[unit][0])
        if have != FAMILY.get(dimension, dimension):
            raise InputError(f"unit {quote(unit)} measures {UNITS[unit][0]}, but {name} is in "
                             f"{dimension}")
    if base["unit"] and stated.unit in UNITS and stated.unit != base["unit"]:
        raise InputError(f"unit {quote(base['unit'])} does not match the stated {quote(stated.unit)}")
    _check_value(claim, stated)
    agrees = stated.agrees(computed)
    if not agrees and stated.unit == "K" and FAMILY.get(dimension, dimension) == "count":
        # "128K tokens" conventionally means 128 x 1024 = 131,072: powers of two read both ways.
        agrees = stated.agrees(computed * 1000 / 1024)
    cause = "" if agrees else likely_cause(
        computed, Context(spec, name, dimension, extra["conditions"], stated))
    value = int(computed) if computed.is_integer() and abs(computed) < 2 ** 63 else computed
    text = display(computed, stated, dimension)
    if dimension == "ratio" and ":" in str(claim["stated"]):
        text = f"{computed:g}:1"  # answer "4:1" in kind
    return ClaimResult(**base, **extra, verdict="agree" if agrees else "wrong",
                       computed=value, computed_text=text, cause=cause)


def _check_value(claim: dict, stated) -> None:
    """The transcribed `value` must be what the stated text says (catches typos)."""
    if "value" not in claim:
        return
    value = claim["value"]
    expect = [stated.low, stated.high] if stated.high != stated.low else [stated.low]
    given = value if isinstance(value, list) else [value]
    ok = len(given) == len(expect) and all(
        isinstance(g, (int, float)) and not isinstance(g, bool)
        and (math.isinf(e) and math.isinf(g) or abs(g - e) <= 1e-9 * max(abs(e), 1e-300))
        for g, e in zip(given, expect))
    if not ok:
        shown = expect[0] if len(expect) == 1 else expect
        raise InputError(f"value {quote(value)} does not match stated {quote(claim['stated'])}, which "
                         f"reads as {shown!r}")


def display(x: float, stated, dimension: str) -> str:
    """The computed value written like the stated one (same scale, one more digit)."""
    if dimension == "percent":
        return f"{x:.{stated.decimals + 1}f}%"
    if dimension == "ratio":
        return f"{x:.{stated.decimals + 1}f}".rstrip("0").rstrip(".") + "x"
    if dimension == "number" and not x.is_integer():
        return f"{x:.3g}"
    if stated.scale == 1:
        return f"{int(x):,}" if x.is_integer() else f"{x:,.{stated.decimals + 2}f}"
    unit = stated.unit if stated.unit in UNITS else ""
    suffix = stated.unit if stated.unit in ("K", "M", "B", "T") else f" {unit}".rstrip()
    scaled = x / stated.scale
    # One digit more than stated, and at least three significant ones (0.0140, not 0.0).
    magnitude = math.floor(math.log10(abs(scaled))) if scaled else 0
    decimals = max(stated.decimals + 1, 2 - magnitude)
    text = f"{scaled:,.{decimals}f}{suffix}"
    if x.is_integer():
        text += f" ({int(x):,}{' ' + UNITS[unit][0] if unit else ''})"
    return text
