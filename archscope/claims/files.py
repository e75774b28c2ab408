"""The claims file format, and reading it: files and folders -> validated claim mappings.

A claims file is a YAML list; each entry is one claim:

    - id: 000-kv-llama          # unique across the files checked
      document: 000_2e845f9665e327b8.txt
      section: "7.3 Cross-Model KV Cache Comparison"
      model: llama-3.2-1b       # a preset name or a spec/config path (relative to the file)
      quantity: kv_cache_bytes  # see archscope.claims.quantities (`check-claims --quantities`)
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
computed answer, so "RoPE" agrees with Llama 3's "RoPE+llama3" but "RoPE+YaRN" does not
(verdict.py). A claim that differs gets its likely cause from causes.py; check.py checks.
"""

from __future__ import annotations

from pathlib import Path

from archscope.errors import InputError, quote
from archscope.reads import folder_files, read_text
from archscope.spec.fields import did_you_mean
from archscope.spec.limits import YAML_BYTES_MAX
from archscope.spec.loader import parse_yaml

KEYS = ("id", "document", "section", "model", "quantity", "stated", "unit", "value", "note",
        "conditions", "set", "versus", "skip", "text")
REQUIRED = ("id", "document", "section", "model", "quantity", "stated")


class ClaimError(InputError):
    """A claims file that cannot be checked: names the file and the claim."""


def claim_files(paths) -> list[Path]:
    """Files as given; a directory stands for its *.yaml files, sorted (a FIFO or a device
    among them is refused, not read)."""
    out = []
    for p in map(Path, paths):
        try:
            out += folder_files(p, "*.yaml") if p.is_dir() else [p]
        except InputError as err:
            raise ClaimError(str(err)) from None
    return out


def load_claims(path: Path) -> list[dict]:
    try:
        text = read_text(path, YAML_BYTES_MAX, "claims file")
    except InputError as err:
        raise ClaimError(str(err)) from None
    data = parse_yaml(text, str(path))
    if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
        raise ClaimError(f"{path}: a claims file is a YAML list of mappings (one per claim), "
                         f"got {type(data).__name__}")
    return data


def validate(claim: dict) -> None:
    """Known keys only, and the required ones present (fewer for a skipped claim)."""
    for key in claim:
        if key not in KEYS:
            raise InputError(f"unknown key {quote(key)}{did_you_mean(key, KEYS)}; expected "
                             f"{', '.join(KEYS)}")
    required = ("id", "document", "section", "stated") if "skip" in claim else REQUIRED
    missing = [k for k in required if claim.get(k) in (None, "")]
    if missing:
        raise InputError(f"missing {', '.join(missing)}")
