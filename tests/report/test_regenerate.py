"""`archscope report` reproduces the committed reports/ byte for byte, and writes atomically."""

from __future__ import annotations

import pytest
from report_tables import COMMITTED, generated_files

from archscope.errors import InputError


def test_same_files_as_committed(regenerated):
    assert generated_files(regenerated) == generated_files(COMMITTED)


def test_byte_identical_to_committed(regenerated):
    """Every .md, .png and estimates.json the command writes equals the committed file.
    (If a spec or an estimator changed on purpose: run `archscope report` and commit.)"""
    differ = [rel for rel in sorted(generated_files(regenerated))
              if (regenerated / rel).read_bytes() != (COMMITTED / rel).read_bytes()]
    assert differ == []


def test_expected_outputs_exist(regenerated):
    files = generated_files(regenerated)
    for rel in ("comparison.md", "profiles.md", "data/estimates.json",
                "models/llama-3.2-1b.md", "models/llama-3.2-3b.md", "models/deepseek-v2.md",
                "figures/kv_cache_vs_context.png", "figures/params_breakdown.png",
                "figures/flops_vs_context.png", "figures/weights_by_dtype.png"):
        assert rel in files
    png = (regenerated / "figures/kv_cache_vs_context.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_failure_writes_nothing(tmp_path, monkeypatch, run_cli):
    import archscope.report.build as build

    def broken(*args, **kwargs):
        raise InputError("boom")

    monkeypatch.setattr(build, "build_reports", broken)
    code, _, err = run_cli("report", "--out", str(tmp_path / "out"))
    assert code == 2 and "boom" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.md"))


@pytest.mark.parametrize("rel", ["comparison.md", "models/deepseek-v2.md"])
def test_no_timestamps_or_machine_details(regenerated, rel):
    import platform
    import re

    text = (regenerated / rel).read_text()
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text)
    assert platform.node() not in text
