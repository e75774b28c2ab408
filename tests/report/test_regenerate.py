"""`archscope report --out DIR` reproduces the committed reports/ tree anywhere (text byte for
byte, figures pixel for pixel within a small tolerance), and writes atomically."""

from __future__ import annotations

import pytest
from report_tables import COMMITTED, generated_files

from archscope.errors import InputError

# Figures are compared by their pixels, not their bytes, so that a matplotlib upgrade that
# re-encodes the PNG (or moves an anti-aliased edge) does not fail the suite; a changed number,
# line or label moves far more than this.
PIXEL_TOLERANCE = 0.02  # mean absolute difference, pixel values in 0..1
CHANGED_PIXELS = 0.005  # share of pixels that may differ by more than 0.1


def tree(root) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and not p.name.startswith(".")}


def pixels_differ(a, b) -> str | None:
    import io

    import numpy as np
    from matplotlib import image

    x, y = (image.imread(io.BytesIO(path.read_bytes()), format="png") for path in (a, b))
    if x.shape != y.shape:
        return f"size {x.shape} != {y.shape}"
    diff = np.abs(x.astype(float) - y.astype(float))
    if diff.mean() > PIXEL_TOLERANCE or (diff.max(axis=-1) > 0.1).mean() > CHANGED_PIXELS:
        return f"mean diff {diff.mean():.4f}, {(diff.max(axis=-1) > 0.1).mean():.2%} changed"
    return None


def test_same_tree_as_committed(regenerated):
    """Every file of reports/, inputs included (claims transcriptions, profile runs)."""
    assert tree(regenerated) == tree(COMMITTED)
    assert generated_files(regenerated) <= tree(regenerated)


@pytest.mark.slow
def test_identical_to_committed(regenerated):
    """Text byte for byte, figures by pixels. (If a spec or an estimator changed on purpose:
    run `archscope report` and commit.)"""
    differ = []
    for rel in sorted(tree(COMMITTED)):
        ours, committed = regenerated / rel, COMMITTED / rel
        if rel.endswith(".png"):
            problem = pixels_differ(ours, committed)
            if problem:
                differ.append(f"{rel}: {problem}")
        elif ours.read_bytes() != committed.read_bytes():
            differ.append(rel)
    assert differ == []


def test_pixel_comparison_can_fail(regenerated):
    """Two different figures are told apart."""
    a = regenerated / "figures/kv_cache_vs_context.png"
    b = regenerated / "figures/flops_vs_context.png"
    assert pixels_differ(a, b) is not None
    assert pixels_differ(a, a) is None


def test_expected_outputs_exist(regenerated):
    files = generated_files(regenerated)
    for rel in ("comparison.md", "profiles.md", "claims.md", "data/estimates.json",
                "models/llama-3.2-1b.md", "models/llama-3.2-3b.md", "models/deepseek-v2.md",
                "figures/kv_cache_vs_context.png", "figures/params_breakdown.png",
                "figures/flops_vs_context.png", "figures/weights_by_dtype.png"):
        assert rel in files
    png = (regenerated / "figures/kv_cache_vs_context.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def snapshot(root) -> dict:
    """Every entry under root, hidden ones included: files with their bytes, folders as None."""
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


def test_a_failure_writes_nothing(tmp_path, monkeypatch, run_cli):
    import archscope.report.pages.build as build

    def broken(*args, **kwargs):
        raise InputError("boom")

    monkeypatch.setattr(build, "build_reports", broken)
    code, _, err = run_cli("report", "--out", str(tmp_path / "out"))
    assert code == 2 and "boom" in err
    assert list(tmp_path.iterdir()) == []  # not even the folder


def test_a_full_disk_midway_changes_nothing(regenerated, tmp_path, monkeypatch, run_cli):
    """The whole real file set (pages, figures, inputs) over an earlier report: the disk fills
    after a few files, and --out is left byte for byte as it was, with no temporary."""
    import errno
    import os
    import shutil

    import archscope.report.pages.build as build
    import archscope.writes as writes

    out = tmp_path / "out"
    shutil.copytree(regenerated, out)
    (out / "comparison.md").write_text("an older report\n")
    before = snapshot(out)
    pages = {rel: (regenerated / rel).read_bytes() for rel in generated_files(regenerated)}
    monkeypatch.setattr(build, "build_reports", lambda *args, **kwargs: dict(pages))
    real, count = writes._write_bytes, []

    def write(path, data):
        count.append(path)
        if len(count) > 5:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(writes, "_write_bytes", write)
    code, _, err = run_cli("report", "--out", str(out))
    assert code == 2 and "Traceback" not in err
    assert f"cannot write {out}: No space left on device" in err
    assert snapshot(out) == before and len(count) == 6
    monkeypatch.setattr(writes, "_write_bytes", real)
    code, _, err = run_cli("report", "--out", str(out))
    assert code == 0, err
    assert snapshot(out) == snapshot(regenerated)


@pytest.mark.parametrize("rel", ["comparison.md", "models/deepseek-v2.md"])
def test_no_timestamps_or_machine_details(regenerated, rel):
    import platform
    import re

    text = (regenerated / rel).read_text()
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text)
    assert platform.node() not in text
