"""The committed inputs the reports are built from, beside the specs: the claims transcriptions
(reports/claims/*.yaml), the measured profile runs (reports/data/profile-*.json) and the CPU
calibration (reports/data/calibration/).

They default to the repository's own reports/ folder (next to model_specs/), whatever `--out`
says, so `archscope report --out DIR` rebuilds the whole tree anywhere; and they are copied into
the output, so DIR holds everything reports/ holds.
"""

from __future__ import annotations

from pathlib import Path

from archscope.reads import folder_files, read_bytes
from archscope.spec.limits import DATA_JSON_BYTES_MAX, YAML_BYTES_MAX

REPORTS_DIR = Path(__file__).resolve().parents[2] / "reports"
# written by the report itself, not inputs
GENERATED_DATA = ("estimates.json", "deployment.json", "documents.json", "families.json")


def default_claims_dir() -> Path:
    return REPORTS_DIR / "claims"


def default_data_dir() -> Path:
    return REPORTS_DIR / "data"


def input_files(claims_dir: Path, data_dir: Path) -> dict[str, bytes]:
    """{path under the output folder: bytes} of every input file, to be copied as they are
    (regular files only, each within its limit: archscope/reads.py)."""
    files: dict[str, bytes] = {}
    if claims_dir.is_dir():
        files.update({f"claims/{p.name}": read_bytes(p, YAML_BYTES_MAX, "claims file")
                      for p in folder_files(claims_dir, "*.yaml")})
    if data_dir.is_dir():
        # with the calibration runs' data (data/calibration/, benchmarks/calibrate_cpu.py)
        files.update({f"data/{p.relative_to(data_dir).as_posix()}":
                      read_bytes(p, DATA_JSON_BYTES_MAX, "data file")
                      for p in folder_files(data_dir, "**/*.json")
                      if p.relative_to(data_dir).as_posix() not in GENERATED_DATA})
    return files
