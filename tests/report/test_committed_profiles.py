"""The committed CPU profiles (reports/data/profile-*.json, shown in reports/profiles.md): no
measurement beats the roofline predicted for its run on the machine's own kernels, and none
was rejected by the bandwidth wall."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "reports" / "data"
PROFILES = sorted(DATA.glob("profile-*.json"))


def test_there_are_committed_profiles():
    assert PROFILES


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_no_predicted_bound_is_beaten(path):
    r = json.loads(path.read_text())
    assert r["hardware"].startswith("local")  # this machine's kernels, not a catalog part
    assert r["prefill_ms"] >= r["predicted_prefill_ms"]
    assert r["decode_tokens_per_s"] <= r["predicted_decode_tokens_per_s"]
    assert r["decode_tokens_per_s"] <= r["bandwidth_limit_tokens_per_s"]
    assert r["measurement_errors"] == []
