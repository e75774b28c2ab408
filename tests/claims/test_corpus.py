"""The explainer corpus of issue 33 (tests/data/claims/, README there): every document has a
truth file, every labelled claim sits on the line it names, names a preset, and still holds
against archscope (the generated files are what source/build.py builds now, and the build
re-checks each claim: right ones agree, planted errors are wrong by more than 10%)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from archscope.spec.loader import preset_names

CORPUS = Path(__file__).resolve().parent.parent / "data" / "claims"
DOCS = sorted(p for p in CORPUS.glob("*.md") if p.name != "README.md")
KEYS = {"id", "line", "model", "quantity", "stated", "unit", "value", "conditions", "set",
        "truth", "rounding", "correct", "correct_text", "command", "note", "unsupported"}


def _truth(doc: Path) -> dict:
    return yaml.safe_load(doc.with_name(doc.stem + ".truth.yaml").read_text())


def test_corpus_size():
    assert len(DOCS) >= 12
    models = set().union(*(_truth(d)["models"] for d in DOCS))
    assert len(models) >= 20, sorted(models)
    assert {p.name[:-len(".truth.yaml")] for p in CORPUS.glob("*.truth.yaml")} == \
        {d.stem for d in DOCS}


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.stem)
def test_truth_matches_document(doc):
    truth = _truth(doc)
    lines = doc.read_text().split("\n")
    presets = set(preset_names())
    claims = truth["claims"]
    assert truth["document"] == doc.name
    assert 2 <= sum(c["truth"] == "wrong" for c in claims) <= 5
    for c in claims:
        assert set(c) <= KEYS, c["id"]
        assert c["model"] in presets, c["id"]
        assert c["truth"] in ("right", "wrong"), c["id"]
        assert str(c["stated"]) in lines[c["line"] - 1], c["id"]
        assert c["line"] in truth["sentences"], c["id"]
        if c["truth"] == "wrong":
            assert "correct" in c and "command" in c, c["id"]
        elif not c.get("unsupported"):
            assert c["rounding"] in ("exact", "rounded", "loose", "card"), c["id"]


def test_ids_unique():
    ids = [c["id"] for d in DOCS for c in _truth(d)["claims"]]
    assert len(ids) == len(set(ids))


def test_generated_files_are_current():
    """Rebuilding from source/*.md.in reproduces every .md and .truth.yaml, and every claim
    still holds against archscope (build.py asserts it)."""
    spec = importlib.util.spec_from_file_location("corpus_build", CORPUS / "source" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert build.stale() == []


def test_the_corpus_spreads_over_families_and_kinds():
    """Twenty families or more (a preset's first word: llama, qwen3, gemma, deepseek, ...), and
    MLA, mixture-of-experts and state-space models among them."""
    from archscope.spec import load_spec

    models = set().union(*(_truth(d)["models"] for d in DOCS))
    assert len({m.split("-")[0] for m in models}) >= 20
    specs = [load_spec(m) for m in models]
    assert any(s.moe for s in specs) and any(s.mixer for s in specs)
    assert any(s.attention.kind == "mla" for s in specs)
    for d in DOCS:
        assert {"right", "wrong"} <= {c["truth"] for c in _truth(d)["claims"]}, d.name


def test_the_benchmark_table_is_todays(tmp_path):
    """benchmarks/claims_corpus.py's table is the committed one (reports/data/benchmarks/), so
    the figures quoted from it are today's; its totals are the rows' sums."""
    import json
    import subprocess
    import sys

    root = CORPUS.parents[2]
    out = tmp_path / "corpus.json"
    done = subprocess.run([sys.executable, "benchmarks/claims_corpus.py", "--json", str(out)],
                          cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    fresh = json.loads(out.read_text())
    committed = json.loads((root / "reports/data/benchmarks/claims_corpus.json").read_text())
    assert fresh["rows"] == committed["rows"] and fresh["summary"] == committed["summary"]
    s = fresh["summary"]
    assert s["planted"] == sum(r["planted"] for r in fresh["rows"])
    assert s["caught"] == sum(r["caught"] for r in fresh["rows"]) <= s["planted"]
    assert s["false_alarms"] == sum(len(r["false_alarms"]) for r in fresh["rows"])
