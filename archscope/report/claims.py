"""Check a document's claims: each transcribed claim is recomputed from its model's spec.

A claims file is a YAML list; each entry is one claim:

    - id: 000-kv-llama          # unique across the files checked
      document: 000_2e845f9665e327b8.txt
      section: "7.3 Cross-Model KV Cache Comparison"
      model: llama-3.2-1b       # a preset name or a spec/config path (relative to the file)
      quantity: kv_cache_bytes  # see archscope.report.quantities (`check-claims --quantities`)
      conditions: {seq_len: 4096, dtype: fp16}
      stated: "64 MB"           # as written; its digits set the tolerance (stated.py)
      unit: MB                  # the unit of the stated number
      value: 64000000           # the stated number in the quantity's base unit (checked)
      note: "..."               # optional
      set: ["attention.n_kv_heads=32"]   # optional what-if (an MHA variant, ...)
      versus: {model: llama-3.1-8b, relation: reduction}   # optional: compare two models
    - id: 000-gpt4
      skip: "no preset for GPT-4"        # kept in the report, not checked

Categorical claims ("RMSNorm", "GQA+SWA", "✅") agree when every part stated is a part of the
computed answer, so "RoPE" agrees with Llama 3's "RoPE+llama3" but "RoPE+YaRN" does not.
A claim that differs gets its likely cause from causes.py.
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from archscope.errors import InputError
from archscope.report.causes import Context, likely_cause
from archscope.report.quantities import Category, get_quantity
from archscope.report.stated import UNITS, StatedError, parse_stated
from archscope.spec import load_spec, with_overrides
from archscope.spec.fields import did_you_mean
from archscope.spec.loader import parse_yaml

KEYS = ("id", "document", "section", "model", "quantity", "stated", "unit", "value", "note",
        "conditions", "set", "versus", "skip")
REQUIRED = ("id", "document", "section", "model", "quantity", "stated")
RELATIONS = {"ratio": "ratio", "reduction": "percent", "increase": "percent"}
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


class ClaimError(InputError):
    """A claims file that cannot be checked: names the file and the claim."""


@dataclass(frozen=True)
class ClaimResult:
    file: str
    id: str
    document: str
    section: str
    model: str
    quantity: str
    stated: str
    unit: str
    verdict: str  # agrees, differs or skipped
    computed: float | int | str | None = None
    computed_text: str = ""
    cause: str = ""
    note: str = ""
    conditions: dict = field(default_factory=dict)
    what_if: tuple[str, ...] = ()
    versus: dict | None = None

    @property
    def setting(self) -> str:
        """Conditions, what-if and comparison in one line, for tables."""
        parts = [", ".join(f"{k}={_cond(v)}" for k, v in self.conditions.items())]
        parts += [f"set {s}" for s in self.what_if]
        if self.versus:
            other = self.versus.get("model", "same model")
            sets = "".join(f" set {s}" for s in self.versus.get("set", ()))
            parts.append(f"{self.versus['relation']} vs {other}{sets}")
        return "; ".join(p for p in parts if p)


def _cond(value) -> str:
    return "+".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def claim_files(paths) -> list[Path]:
    """Files as given; a directory stands for its *.yaml files, sorted."""
    out = []
    for p in map(Path, paths):
        out += sorted(p.glob("*.yaml")) if p.is_dir() else [p]
    return out


def load_claims(path: Path) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ClaimError(f"{path}: cannot read claims file: {err}") from None
    data = parse_yaml(text, str(path))
    if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
        raise ClaimError(f"{path}: a claims file is a YAML list of mappings (one per claim), "
                         f"got {type(data).__name__}")
    return data


def check_claim_files(paths) -> list[ClaimResult]:
    """Every claim of every file, checked, in file order. Bad input raises ClaimError."""
    results: list[ClaimResult] = []
    seen: dict[str, Path] = {}
    specs: dict = {}
    for path in claim_files(paths):
        for k, claim in enumerate(load_claims(path)):
            where = f"{path}: claim {claim.get('id', f'#{k + 1}')!s}"
            try:
                result = check_claim(claim, path, specs)
            except StatedError as err:
                raise ClaimError(f"{where}: stated: {err}") from None
            except InputError as err:
                raise ClaimError(f"{where}: {err}") from None
            except (TypeError, ValueError) as err:  # a condition of the wrong type
                raise ClaimError(f"{where}: bad conditions {claim.get('conditions')!r}: "
                                 f"{err}") from None
            if result.id in seen:
                raise ClaimError(f"{where}: duplicate id (also in {seen[result.id]})")
            seen[result.id] = path
            results.append(result)
    return results


def _validate(claim: dict) -> None:
    for key in claim:
        if key not in KEYS:
            raise InputError(f"unknown key {key!r}{did_you_mean(key, KEYS)}; expected "
                             f"{', '.join(KEYS)}")
    required = ("id", "document", "section", "stated") if "skip" in claim else REQUIRED
    missing = [k for k in required if claim.get(k) in (None, "")]
    if missing:
        raise InputError(f"missing {', '.join(missing)}")


def _spec(model: str, what_if, path: Path, specs: dict):
    if not isinstance(what_if, list) or not all(isinstance(s, str) for s in what_if):
        raise InputError("`set` must be a list of key=value strings")
    key = (model, tuple(what_if))
    if key not in specs:
        local = path.parent / model  # a spec or config.json beside the claims file
        specs[key] = with_overrides(load_spec(local if local.exists() else model), what_if)
    return specs[key]


def _compute(q, spec, conditions: dict):
    accepted = q.conditions
    for name in conditions:
        if name not in accepted:
            raise InputError(f"quantity {q.name} takes no condition {name!r}"
                             f"{did_you_mean(name, accepted)}; it takes: "
                             f"{', '.join(accepted) or 'none'}")
    missing = [n for n, d in accepted.items()
               if d is inspect.Parameter.empty and n not in conditions]
    if missing:
        raise InputError(f"quantity {q.name} needs the condition(s) {', '.join(missing)}")
    return q.fn(spec, **conditions)


def check_claim(claim: dict, path: Path, specs: dict | None = None) -> ClaimResult:
    """One claim -> its verdict. Raises InputError (or StatedError) on a malformed claim."""
    specs = {} if specs is None else specs
    _validate(claim)
    base = dict(file=str(path), id=str(claim["id"]), document=str(claim["document"]),
                section=str(claim["section"]), model=str(claim.get("model", "")),
                quantity=str(claim.get("quantity", "")), stated=str(claim["stated"]),
                unit=str(claim.get("unit", "")), note=str(claim.get("note", "") or ""))
    if "skip" in claim:
        return ClaimResult(**{**base, "note": f"not checked: {claim['skip']}"},
                           verdict="skipped")
    q = get_quantity(base["quantity"])
    conditions = claim.get("conditions") or {}
    if not isinstance(conditions, dict):
        raise InputError("`conditions` must be a mapping")
    what_if = claim.get("set") or []
    spec = _spec(base["model"], what_if, path, specs)
    computed = _compute(q, spec, conditions)
    dimension = q.dimension
    versus = claim.get("versus")
    if versus is not None:
        computed, dimension = _relate(q, versus, computed, base["model"], conditions, path,
                                      specs)
    extra = dict(conditions=conditions, what_if=tuple(what_if), versus=versus)
    if isinstance(computed, Category):
        stated = {_yes_no(claim["stated"])} if dimension == "bool" else _parts(claim["stated"])
        extra_parts = sorted(stated - computed.parts)
        # Name the wrong part only when the rest was right ("GQA+SWA" for plain GQA).
        cause = f"{' and '.join(extra_parts)} not in the spec" \
            if extra_parts and len(extra_parts) < len(stated) else ""
        return ClaimResult(**base, **extra, verdict="differs" if extra_parts else "agrees",
                           computed=computed.text, computed_text=computed.text, cause=cause)
    return _numeric(claim, base, extra, q.name, dimension, spec, float(computed))


def _relate(q, versus, computed, model, conditions, path, specs):
    if not isinstance(versus, dict) or versus.get("relation") not in RELATIONS or \
            set(versus) - {"model", "set", "relation"}:
        raise InputError("`versus` must be a mapping with relation (ratio, reduction or "
                         "increase) and optionally model and set")
    if q.dimension in ("category", "bool"):
        raise InputError(f"versus needs a numeric quantity, not {q.name}")
    other = _compute(q, _spec(versus.get("model", model), versus.get("set", []), path, specs),
                     conditions)
    ratio = computed / other
    relation = versus["relation"]
    value = ratio if relation == "ratio" else 100 * (1 - ratio if relation == "reduction"
                                                     else ratio - 1)
    return value, RELATIONS[relation]


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
        raise InputError(f"cannot read {stated!r} as yes or no (use ✅/❌ or yes/no)")
    return answers.pop()



def _numeric(claim, base, extra, name, dimension, spec, computed: float) -> ClaimResult:
    stated = parse_stated(claim["stated"], base["unit"])
    unit = stated.unit if stated.unit in UNITS else base["unit"]
    if unit:
        if unit not in UNITS:
            raise InputError(f"unknown unit {unit!r}{did_you_mean(unit, UNITS)}; expected one "
                             f"of {', '.join(UNITS)}")
        have = FAMILY.get(UNITS[unit][0], UNITS[unit][0])
        if have != FAMILY.get(dimension, dimension):
            raise InputError(f"unit {unit!r} measures {UNITS[unit][0]}, but {name} is in "
                             f"{dimension}")
    if base["unit"] and stated.unit in UNITS and stated.unit != base["unit"]:
        raise InputError(f"unit {base['unit']!r} does not match the stated {stated.unit!r}")
    _check_value(claim, stated)
    agrees = stated.contains(computed)
    if not agrees and stated.unit == "K" and FAMILY.get(dimension, dimension) == "count":
        # "128K tokens" conventionally means 128 x 1024 = 131,072: powers of two read both ways.
        agrees = stated.contains(computed * 1000 / 1024)
    cause = "" if agrees else likely_cause(
        computed, Context(spec, name, dimension, extra["conditions"], stated))
    value = int(computed) if computed.is_integer() and abs(computed) < 2 ** 63 else computed
    text = display(computed, stated, dimension)
    if dimension == "ratio" and ":" in str(claim["stated"]):
        text = f"{computed:g}:1"  # answer "4:1" in kind
    return ClaimResult(**base, **extra, verdict="agrees" if agrees else "differs",
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
        raise InputError(f"value {value!r} does not match stated {claim['stated']!r}, which "
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


def claims_markdown(results: list[ClaimResult]) -> str:
    """The claims report as markdown (see claims_render; imported late: it needs pandas)."""
    from archscope.report.claims_render import claims_markdown as render

    return render(results)
