"""Achievable fractions of peak (achievable.yaml): what real kernels reach of a part's datasheet
bandwidth and dense FLOP/s, each with the published measurement it comes from.

A roofline on datasheet peaks is a bound no kernel reaches; `archscope fit` multiplies the peaks
by these fractions. A part without its own entry takes the file's `default`; `cpu` is probed
(its peaks are achieved copy and matmul rates) and its fractions are fitted by
benchmarks/calibrate_cpu.py from archscope's own profile runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from archscope.errors import InputError

ACHIEVABLE_FILE = Path(__file__).with_name("achievable.yaml")


@dataclass(frozen=True)
class Achievable:
    """Fractions of peak bandwidth and compute, and where each comes from."""

    bandwidth: float
    compute: float
    bandwidth_source: str
    compute_source: str

    def overridden(self, bandwidth: float | None = None,
                   compute: float | None = None) -> "Achievable":
        """The same fractions with any given by the user in their place (named as such)."""
        for name, value in (("bandwidth", bandwidth), ("compute", compute)):
            # up to 2: the cpu's "peaks" are probed copy and matmul rates, which a decode's
            # read-only matrix-vector products may beat
            if value is not None and not 0 < value <= 2:
                raise InputError(f"--{name}-fraction must be in (0, 2], got {value}")
        return Achievable(
            bandwidth if bandwidth is not None else self.bandwidth,
            compute if compute is not None else self.compute,
            "given (--bandwidth-fraction)" if bandwidth is not None else self.bandwidth_source,
            "given (--compute-fraction)" if compute is not None else self.compute_source)


def _entry(entry: dict) -> Achievable:
    sources = entry.get("sources", {})
    return Achievable(float(entry["bandwidth"]), float(entry["compute"]),
                      str(sources.get("bandwidth", "")).strip(),
                      str(sources.get("compute", "")).strip())


@lru_cache(maxsize=1)
def _table() -> dict[str, Achievable]:
    data = yaml.safe_load(ACHIEVABLE_FILE.read_text(encoding="utf-8"))
    table = {name: _entry(e) for name, e in data.get("parts", {}).items()}
    table["cpu"] = _entry(data["cpu"])
    table[""] = _entry(data["default"])
    return table


def achievable(name: str) -> Achievable:
    """The fractions for the part called `name` (the default when it has none of its own)."""
    table = _table()
    return table.get(str(name).strip().lower(), table[""])
