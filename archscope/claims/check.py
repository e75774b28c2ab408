"""Check claims: each transcribed claim is recomputed from its model's spec.

The file format is described in files.py; the verdict rules in verdict.py (numbers: stated.py,
likely causes: causes.py); the report in render.py. Bad input raises ClaimError naming the file
and the claim.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from pathlib import Path

from archscope.claims.files import ClaimError, claim_files, load_claims, validate
from archscope.claims.published import published_alternative, unpublished
from archscope.claims.quantities import Category, get_quantity
from archscope.claims.result import ClaimResult
from archscope.claims.stated import StatedError, parse_stated
from archscope.claims.verdict import categorical, numeric
from archscope.errors import InputError, quote, shorten
from archscope.spec import load_spec, with_overrides
from archscope.spec.fields import did_you_mean

RELATIONS = {"ratio": "ratio", "reduction": "percent", "increase": "percent"}


def check_claim_files(paths) -> list[ClaimResult]:
    """Every claim of every file, checked, in file order. Bad input raises ClaimError."""
    results: list[ClaimResult] = []
    seen: dict[str, Path] = {}
    specs: dict = {}
    for path in claim_files(paths):
        for k, claim in enumerate(load_claims(path)):
            where = f"{path}: claim {shorten(str(claim.get('id', f'#{k + 1}')))}"
            try:
                result = check_claim(claim, path, specs)
            except StatedError as err:
                raise ClaimError(f"{where}: stated: {err}") from None
            except InputError as err:
                raise ClaimError(f"{where}: {err}") from None
            except (TypeError, ValueError) as err:  # a condition of the wrong type
                raise ClaimError(f"{where}: bad conditions {quote(claim.get('conditions'))}: "
                                 f"{err}") from None
            if result.id in seen:
                raise ClaimError(f"{where}: duplicate id (also in {seen[result.id]})")
            seen[result.id] = path
            results.append(result)
    return results


def _spec(model: str, what_if, path: Path, specs: dict):
    if not isinstance(what_if, list) or not all(isinstance(s, str) for s in what_if):
        raise InputError("`set` must be a list of key=value strings")
    if not isinstance(model, str):  # versus' model too
        raise InputError(f"model: expected a preset name or a spec file, got {quote(model)}")
    key = (model, tuple(what_if))
    if key not in specs:
        local = path.parent / model  # a spec or config.json beside the claims file
        specs[key] = with_overrides(load_spec(local if _exists(local) else model), what_if)
    return specs[key]


def _exists(path: Path) -> bool:
    """path.exists(), False for a name no file can have (too long: an OSError, a NUL)."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _compute(q, spec, conditions: dict):
    accepted = q.conditions
    for name in conditions:
        if name not in accepted:
            raise InputError(f"quantity {q.name} takes no condition {quote(name)}"
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
    validate(claim)
    base = dict(file=str(path), id=str(claim["id"]), document=str(claim["document"]),
                section=str(claim["section"]), model=str(claim.get("model", "")),
                quantity=str(claim.get("quantity", "")), stated=str(claim["stated"]),
                unit=str(claim.get("unit", "")), note=str(claim.get("note", "") or ""),
                text=str(claim.get("text") or claim.get("note") or claim["stated"]))
    if "skip" in claim:
        return ClaimResult(**{**base, "note": f"not checked: {claim['skip']}"},
                           verdict="unverifiable")
    if not isinstance(claim.get("model", ""), str):
        raise InputError(f"model: expected a preset name or a spec file, got "
                         f"{quote(claim['model'])}")  # (str() of a list would be looked up)
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
    why = "" if what_if or versus else unpublished(spec.name, q.name)
    if why:
        return ClaimResult(**{**base, "note": why}, **extra, verdict="unverifiable",
                           computed=getattr(computed, "text", computed),
                           computed_text=str(getattr(computed, "text", computed)))
    if isinstance(computed, Category):
        return categorical(claim, base, extra, dimension, computed)
    result = numeric(claim, base, extra, q.name, dimension, spec, float(computed))
    alt = "" if result.verdict == "agree" or what_if or versus else \
        published_alternative(spec.name, q.name, parse_stated(claim["stated"], base["unit"]))
    return replace(result, verdict="agree", cause="", note=alt) if alt else result


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
