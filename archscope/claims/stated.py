"""How a document wrote a number, and so how close the computed value must come to agree.

A stated number carries its own precision: "~1.24B" is a rounded figure (half a unit of its last
digit, 0.005B), "262,668,288" is exact, "8.39 MB" means 8.39e6 bytes +- 5e3. A computed value
agrees with it within one unit of the last digit (`Stated.agrees`), not half: writers truncate
("262M" for 262,668,288) and vendors round their own counts their own way (Mistral's "7.3B" for
7,241,732,096); a number within a unit of the last digit it gives is not an error anyone would
defend (issue 33). The half-unit precision is what a slip must land in to explain a number that
is wrong (causes.py).
Rules, in this order:
- a product "2,048 x 2,048" or a ratio "4:1" is exact;
- a number in exponent form ("1e-5") is exact (to float precision);
- a number with decimals is rounded to its last decimal;
- a plain integer with no suffix, unit or "~" ("128,256", "32,000") is exact;
- any other integer ("64 MB", "128K", "~3B", "75%") is rounded to its last significant digit,
  where trailing zeros beyond the first two digits are not significant ("2,100M" is 2.1B to
  two digits; "100K" is 100K +- 5K: at least two digits count, never "some power of ten").
A range "2-32K" agrees with anything inside it (each end widened by its rounding); a trailing
"+" ("12,288+") or a leading ">" means "at least", a leading "<" ("<0.1%") "at most".
Units: KB/MB/GB/TB are 10^3k bytes, KiB/MiB/GiB/TiB 2^10k (DESIGN.md section 3); K/M/B/T
after a count are thousand/million/billion/trillion.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from archscope.errors import quote

# unit word -> (dimension, scale to the dimension's base unit)
UNITS: dict[str, tuple[str, float]] = {
    "bytes": ("bytes", 1), "KB": ("bytes", 1e3), "MB": ("bytes", 1e6), "GB": ("bytes", 1e9),
    "TB": ("bytes", 1e12), "KiB": ("bytes", 2 ** 10), "MiB": ("bytes", 2 ** 20),
    "GiB": ("bytes", 2 ** 30), "TiB": ("bytes", 2 ** 40),
    "FLOPs": ("FLOPs", 1), "MFLOPs": ("FLOPs", 1e6), "GFLOPs": ("FLOPs", 1e9),
    "TFLOPs": ("FLOPs", 1e12),
    "params": ("params", 1), "elements": ("elements", 1), "tokens": ("tokens", 1),
    "count": ("count", 1), "heads": ("count", 1), "layers": ("count", 1), "dims": ("count", 1),
    "x": ("ratio", 1), "%": ("percent", 1), "number": ("number", 1),
}
# Units that may appear inside the stated text, longest first so "MB" is not read as "M".
_UNIT_WORDS = sorted(["bytes", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "FLOPs",
                      "MFLOPs", "GFLOPs", "TFLOPs", "%", "×", "x"], key=len, reverse=True)
SUFFIXES = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
WORD_SUFFIXES = {"thousand": "K", "million": "M", "billion": "B", "trillion": "T"}
APPROX = ("~", "≈", "about ", "approx")

_NUM = r"\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
_PRODUCT = re.compile(rf"^({_NUM})\s*[×x*]\s*({_NUM})$")
_RATIO = re.compile(rf"^({_NUM})\s*:\s*({_NUM})$")
_RANGE = re.compile(rf"^({_NUM})\s*[KMBT]?\s*[-–]\s*({_NUM})")


STATED_MAX = 64  # characters of a stated figure ("~1,235,814,400 parameters" is 26)


class StatedError(ValueError):
    """The stated text is not a number this module can read."""


@dataclass(frozen=True)
class Stated:
    """A stated number in the quantity's base unit (bytes, params, FLOPs, ...)."""

    low: float
    high: float  # == low, the top of a range, or inf for "N+"
    tolerance: float  # half a unit of the last stated digit (0: exact)
    ulp: float  # one unit of the last stated digit, in base units
    scale: float  # base units per stated unit (1e6 for "MB", 1e9 for "1.24B")
    decimals: int  # digits after the point, as stated
    unit: str  # the unit word as stated ("MB", "%", "x") or the count suffix ("B", "K"), or ""

    @property
    def value(self) -> float:
        return self.low

    def contains(self, x: float) -> bool:
        """`x` written to the stated precision is the stated number (half a unit)."""
        slack = self.tolerance + 1e-9 * max(abs(self.low), abs(x), 1e-300)
        return self.low - slack <= x <= self.high + slack

    def agrees(self, x: float) -> bool:
        """`x` is what the stated number says, rounded or truncated: within one unit of the
        last stated digit (an exact figure: exactly)."""
        slack = self.ulp + 1e-9 * max(abs(self.low), abs(x), 1e-300)
        return self.low - slack <= x <= self.high + slack


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _ulp_digits(num: str, rounded: bool) -> tuple[float, int]:
    """(one unit of the last significant digit, decimals) of a number as written."""
    plain = num.replace(",", "")
    if "e" in plain.lower():
        return 0.0, 0
    if "." in plain:
        decimals = len(plain.split(".")[1])
        return 10.0 ** -decimals, decimals
    if not rounded:
        return 0.0, 0
    digits = plain.lstrip("0") or "0"
    significant = max(len(digits.rstrip("0")), min(2, len(digits)))
    return 10.0 ** (len(digits) - significant), 0


def _split_unit(rest: str) -> tuple[str, float, str]:
    """Leading unit of `rest` (after the number): (word, scale, rest-after)."""
    rest = rest.lstrip()
    for word in _UNIT_WORDS:
        if rest.startswith(word):
            tail = rest[len(word):]
            if word in ("x",) and tail[:1].isalpha():  # "x" starting a word is not a unit
                continue
            unit = {"×": "x"}.get(word, word)
            return unit, UNITS[unit][1], tail
    if rest[:1] in SUFFIXES and not rest[1:2].isalpha():
        return rest[:1], SUFFIXES[rest[:1]], rest[1:]
    for word, letter in WORD_SUFFIXES.items():
        if rest.lower().startswith(word):
            return letter, SUFFIXES[letter], rest[len(word):]
    return "", 1.0, rest


def parse_stated(text: str | int | float, unit: str = "") -> Stated:
    """Read `text` as written in a document; `unit` is the claim's unit when the text has none.

    Raises StatedError when the text holds no readable number.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise StatedError(f"expected the number as the document writes it, got "
                          f"{quote(text)}")
    if isinstance(text, (int, float)):
        text = repr(text) if isinstance(text, float) else str(text)
    s = text.strip()
    if len(s) > STATED_MAX:  # no document states a figure of 5,000 digits; 10.0 ** 5000 and
        # int() of it fail (OverflowError, ValueError) rather than say so
        raise StatedError(f"{len(s):,} characters, more than any figure a document states "
                          f"({STATED_MAX})")
    bound = s[:1] if s[:1] in "<>" else ""  # "<0.1%": at most; ">1M": at least
    s = s[1:].strip() if bound else s
    approx = s.startswith(APPROX)
    for mark in APPROX:
        s = s.removeprefix(mark).strip()
    if m := _PRODUCT.match(s):
        v = _number(m[1]) * _number(m[2])
        return Stated(v, v, 0.0, 1.0, 1.0, 0, "")
    if m := _RATIO.match(s):
        if _number(m[2]) == 0:
            raise StatedError(f"{quote(text)}: a ratio to 0")
        v = _number(m[1]) / _number(m[2])
        return Stated(v, v, 0.0, 0.0, 1.0, 0, "x")
    low_text = None
    if m := _RANGE.match(s):
        low_text, s = m[1], s[m.start(2):]
    m = re.match(_NUM, s)
    if not m:
        raise StatedError(f"no number in {quote(text)}")
    num, rest = m[0], s[m.end():]
    word, scale, rest = _split_unit(rest)
    if not word and unit:
        if unit not in UNITS:
            raise StatedError(f"unknown unit {quote(unit)}: expected one of {', '.join(UNITS)}")
        scale = UNITS[unit][1]
    at_least = rest.lstrip().startswith("+")
    # Scaled, approximate, percent and "x" figures are rounded; a bare integer is exact.
    rounded = approx or bool(word) or low_text is not None or scale != 1 or unit in ("%", "x")
    ulp, decimals = _ulp_digits(num, rounded)
    high = _number(num) * scale
    low = _number(low_text) * scale if low_text else high
    if low_text:
        ulp = max(ulp, _ulp_digits(low_text, True)[0])
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(ulp)):
        raise StatedError(f"{quote(text)} is beyond the numbers a document states")
    if bound == "<":
        low = -math.inf
    if bound == ">":
        low, high = high, math.inf
    return Stated(low, math.inf if at_least else high, ulp * scale / 2, ulp * scale, scale,
                  decimals, word or unit)
