"""The committed CPU calibration (benchmarks/calibrate_cpu.py -> reports/data/calibration/cpu.json)
and the fractions `fit` uses (hardware/achievable.yaml) agree, and the worst error the file
states is the one its own runs give at those fractions (recomputed from the raw terms), within
the 25% the fit roofline is held to on this CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archscope.hardware.achievable import achievable

DATA = Path(__file__).resolve().parents[2] / "reports" / "data" / "calibration" / "cpu.json"


def _predicted(raw: dict, phase: str, bandwidth: float, compute: float) -> float:
    """fit_roofline's phase time (no interconnect on one CPU) at the given fractions."""
    return max(raw[f"{phase}_compute_ms"] / compute, raw[f"{phase}_memory_ms"] / bandwidth)


def test_the_fractions_fit_uses_are_the_committed_fit():
    data = json.loads(DATA.read_text(encoding="utf-8"))
    cpu = achievable("cpu")
    assert (cpu.bandwidth, cpu.compute) == (data["fitted_fractions"]["bandwidth"],
                                            data["fitted_fractions"]["compute"])


def test_the_stated_worst_error_is_what_the_runs_give_at_those_fractions():
    data = json.loads(DATA.read_text(encoding="utf-8"))
    cpu = achievable("cpu")
    errors = []
    for run in data["runs"]:
        for phase, measured in (("prefill", run["measured_prefill_ms"]),
                                ("decode", run["measured_decode_ms_per_step"])):
            predicted = _predicted(run["raw"], phase, cpu.bandwidth, cpu.compute)
            errors.append(abs(predicted / measured - 1))
    assert len(errors) >= 10 and {r["dtype"] for r in data["runs"]} == {"fp32", "bf16"}
    assert max(errors) == pytest.approx(data["max_abs_error_fitted"], abs=1e-4)
    assert data["within_25_percent"] == (max(errors) <= 0.25)
    assert max(errors) <= 0.25
