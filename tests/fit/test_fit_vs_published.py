"""benchmarks/fit_vs_published.py: fit beside 30 published serving measurements (issue 32).

The script is run here as the README says; its rows must be the committed ones (the report
shows those), and the cases outside their bound must be exactly OUT below: a case that falls
out, or one that comes in, fails until this list says so (and the closing note why).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "reports" / "data" / "benchmarks" / "fit_vs_published.json"
# Outside their bound today, and why:
OUT = {
    # SGLang v0.4.1's day-one DeepSeek-V3 figures (PR #2643; the GPU not named): 30 tok/s at
    # batch 1 is ~6x under fit, and under later engines (InferenceX's R1 at batch 8: within
    # 10%): fit models no engine's missing kernels
    "sglang-deepseek-v3-h200x8-tp8-bs1", "sglang-deepseek-v3-h200x8-tp8-bs8",
    # vLLM V1 on an L40S keeps about 6 GB out of the cache where fit's vLLM view (activation
    # peak + non-torch memory) keeps 0.6 GB: the log does not say what else (CUDA graphs,
    # torch.compile, the batch size of the profiling run)
    "vllm-llama3.1-8b-l40s-kv",
}


def test_the_script_reproduces_the_committed_table(tmp_path):
    out = tmp_path / "run.json"
    done = subprocess.run([sys.executable, "benchmarks/fit_vs_published.py", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    fresh, committed = json.loads(out.read_text()), json.loads(COMMITTED.read_text())
    assert fresh["rows"] == committed["rows"] and fresh["summary"] == committed["summary"]
    assert len(fresh["rows"]) >= 15
    for r in fresh["rows"]:
        measured, predicted = r["measured"], r["predicted"]
        ratio = measured / predicted if r["metric"].endswith("_ms") else predicted / measured
        assert abs(ratio - r["ratio"]) < 1e-3, r["id"]
        assert r["within"] == (1 / r["allowed"] <= r["ratio"] <= r["allowed"]), r["id"]
    assert {r["id"] for r in fresh["rows"] if not r["within"]} == OUT
    assert "of 30 within their bound" in done.stdout
