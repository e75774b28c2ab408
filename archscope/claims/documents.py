"""Check documents: markdown explainers read by extraction, YAML transcriptions as overrides.

`check_paths(paths, model_map)` takes files and folders in any mix. A folder stands for its
*.yaml transcriptions; a `.yaml`/`.yml` file is a transcription (claims-file format,
files.py); any other file is a transcription if it reads as one, else markdown, whatever its
extension. A markdown document's claims are found by archscope.claims.extract; where a
transcription given in the same run covers the same document, its claims replace the found
ones that state the same number for the same model and quantity, and the rest are added.

A found claim is never "wrong" for what archscope cannot compute: an unresolved model, a
quantity the model does not have (layers that differ, MLA's head_dim), an unpublished detail
(published.py) are unverifiable. Wording that fits the number under another usual
convention (decode FLOPs without the lm_head) agrees, saying which.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from archscope.claims.check import check_claim, check_claim_files
from archscope.claims.extract import extract_claims
from archscope.claims.files import ClaimError, claim_files
from archscope.claims.quantities import get_quantity
from archscope.claims.result import ClaimResult
from archscope.claims.stated import StatedError, parse_stated
from archscope.errors import InputError
from archscope.reads import read_text
from archscope.spec import load_spec, preset_names
from archscope.spec.fields import did_you_mean
from archscope.spec.limits import DOCUMENT_BYTES_MAX
from archscope.spec.loader import parse_yaml

KEYS = ("id", "document", "section", "model", "quantity", "stated", "conditions", "set", "text")


def _read(path: Path) -> str:
    """A document's text: a regular file (a FIFO would block, /dev/zero never end) of at most
    DOCUMENT_BYTES_MAX, UTF-8."""
    if not path.exists():
        raise ClaimError(f"{path}: no such file or folder")
    try:
        return read_text(path, DOCUMENT_BYTES_MAX, "document")
    except InputError as err:
        raise ClaimError(str(err)) from None


def _is_transcription(path: Path, text: str) -> bool:
    if path.suffix.lower() in (".yaml", ".yml"):
        return True
    try:
        data = parse_yaml(text, str(path))
    except InputError:
        return False
    return isinstance(data, list) and bool(data) and \
        all(isinstance(c, dict) and "id" in c for c in data)


def check_paths(paths, model_map: dict | None = None) -> list[ClaimResult]:
    """Every claim of every document and transcription, in the order given."""
    groups: list[tuple[str, Path]] = []
    for p in map(Path, paths):
        if p.is_dir():
            groups += [("yaml", f) for f in claim_files([p])]
        else:
            groups.append(("yaml" if _is_transcription(p, _read(p)) else "md", p))
    transcribed = check_claim_files([p for kind, p in groups if kind == "yaml"])
    by_file: dict[str, list[ClaimResult]] = {}
    for r in transcribed:
        by_file.setdefault(r.file, []).append(r)
    out: list[ClaimResult] = []
    for kind, p in groups:
        if kind == "yaml":
            out += by_file.pop(str(p), [])
            continue
        covered = {_key(r) for r in transcribed if r.document == p.name}
        found = check_document(p, model_map)
        out += [r for r in found if _key(r) not in covered] if covered else found
    return out


# Quantities that state the same thing another way (an MHA cache per token is the per-layer
# cache of the MHA what-if a transcription writes with `set`).
SAME = {"kv_elements_per_token_mha": "kv_elements_per_token_per_layer"}


def _key(r: ClaimResult):
    quantity = SAME.get(r.quantity, r.quantity)
    try:
        s = parse_stated(r.stated, r.unit)
        return r.model, quantity, round(s.low, 6), round(s.high, 6)
    except StatedError:
        return r.model, quantity, r.stated.strip().lower()


def check_document(path: Path, model_map: dict | None = None) -> list[ClaimResult]:
    """The document's claims, checked; a model the map gives as a file is labelled by the
    NAME the document uses for it (the file is what was checked)."""
    claims = extract_claims(_read(path), path.name, model_map)
    specs: dict = {}
    results = [_check_found(c, path, specs) for c in claims]
    names = {model: name for name, model in (model_map or {}).items()
             if model not in preset_names()}
    return [replace(r, model=names.get(r.model, r.model)) for r in results if r is not None]


def _unverifiable(c: dict, path: Path, why: str) -> ClaimResult:
    return ClaimResult(file=str(path), id=c["id"], document=c["document"], section=c["section"],
                       model=c["model"].lstrip("?"), quantity=c["quantity"],
                       stated=str(c["stated"]), unit="", verdict="unverifiable", note=why,
                       text=c["text"], conditions=c["conditions"])


def _check_found(c: dict, path: Path, specs: dict) -> ClaimResult | None:
    if c["model"].startswith("?"):
        name = c["model"][1:]
        return _unverifiable(c, path, f"no preset for {name!r}"
                                      f"{did_you_mean(name.lower(), preset_names())} (map it "
                                      "with --model-map NAME=MODEL)")
    claim = {k: c[k] for k in KEYS if k in c}
    claim["section"] = c["section"] or "(before any heading)"  # a transcription must name one
    try:
        accepted = get_quantity(c["quantity"]).conditions  # a table's context, where it applies
        claim["conditions"] = {k: v for k, v in c["conditions"].items() if k in accepted}
        if c.get("variant") == "mha":
            attn = load_spec(c["model"]).attention
            if attn is None or attn.head_dim is None:
                return _unverifiable(c, path, "no MHA what-if of this model's attention")
            claim["set"] = [f"attention.n_kv_heads={attn.n_heads}"]
        result = check_claim(claim, path, specs)
        for alt in c.get("alternatives", ()):
            if result.verdict != "wrong":
                break
            other = check_claim({**claim, "conditions": alt}, path, specs)
            if other.verdict == "agree":
                result = replace(other, note=f"counted as {_setting(alt)}")
    except (InputError, StatedError) as err:
        if "measures" in str(err) or "no number" in str(err):
            return None  # the words named another quantity than the number's unit: not a claim
        return _unverifiable(c, path, str(err))
    return result


def _setting(conditions: dict) -> str:
    return ", ".join(f"{k}={'+'.join(v) if isinstance(v, list) else v}"
                     for k, v in conditions.items())
