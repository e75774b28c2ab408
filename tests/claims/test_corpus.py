"""The labelled corpus of tests/data/claims/ (issue 33) and what check-claims makes of it.

- The truth is archscope's: rebuilding the corpus from its annotated sources (source/build.py,
  which checks every claim with the function check-claims uses) gives the committed files.
- benchmarks/claims_corpus.py's table is the committed one (reports/data/benchmarks/), so the
  figures quoted from it are today's; its counts are recomputed here from the rows.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "claims"


def test_the_corpus_rebuilds_from_its_sources_as_committed(tmp_path):
    copy = tmp_path / "claims"
    shutil.copytree(CORPUS / "source", copy / "source")
    done = subprocess.run([sys.executable, str(copy / "source" / "build.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    built = sorted(p.name for p in copy.glob("*.md")) + sorted(
        p.name for p in copy.glob("*.truth.yaml"))
    assert len(built) >= 24  # at least 12 documents, each with its truth
    for name in built:
        assert (copy / name).read_text() == (CORPUS / name).read_text(), name


def test_the_corpus_covers_what_the_issue_asks():
    from archscope.spec import load_spec, preset_names

    truths = [yaml.safe_load(p.read_text()) for p in sorted(CORPUS.glob("*.truth.yaml"))]
    assert len(truths) >= 12
    models = {m for t in truths for m in t["models"]}
    assert len(models) >= 20 and models <= set(preset_names())
    # families: the name's first word (llama, qwen3, gemma, deepseek, granite, ...), and kinds
    # of every sort: MLA, mixture of experts, state-space hybrids
    assert len({m.split("-")[0] for m in models}) >= 20
    specs = [load_spec(m) for m in models]
    assert any(s.moe for s in specs) and any(s.mixer for s in specs)
    assert any(s.attention.kind == "mla" for s in specs)
    for t in truths:
        verdicts = {c.get("truth") for c in t["claims"]}
        assert {"right", "wrong"} <= verdicts, t["document"]
        lines = (CORPUS / t["document"]).read_text().splitlines()
        for c in t["claims"]:  # every stated number is on its line
            assert str(c["stated"]) in lines[c["line"] - 1], (t["document"], c["id"])


def test_the_benchmark_table_is_todays(tmp_path):
    out = tmp_path / "corpus.json"
    done = subprocess.run([sys.executable, "benchmarks/claims_corpus.py", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    fresh = json.loads(out.read_text())
    committed = json.loads((ROOT / "reports/data/benchmarks/claims_corpus.json").read_text())
    assert fresh["rows"] == committed["rows"] and fresh["summary"] == committed["summary"]
    s = fresh["summary"]
    assert s["planted"] == sum(r["planted"] for r in fresh["rows"])
    assert s["caught"] == sum(r["caught"] for r in fresh["rows"]) <= s["planted"]
    assert s["false_alarms"] == sum(len(r["false_alarms"]) for r in fresh["rows"])
