"""`archscope fit` beside published serving measurements: each prediction, its measurement, the
ratio, and whether it is within the issue's bounds.

    python benchmarks/fit_vs_published.py [--json reports/data/benchmarks/fit_vs_published.json]

The cases are benchmarks/data/published_serving.yaml (each cited there). Each is run through
archscope.api.fit, the code `archscope fit` runs. The ratio is predicted / measured for rates and
capacities (above 1: fit is optimistic) and measured / predicted for times, so that above 1
always means too optimistic. Bounds (issue 32): a single-GPU dense decode or capacity case
within 25%; a multi-GPU, MoE or time-to-first-token case within 35%; none off by more than 2x.
Nothing is timed here: the script only prices, so its output is the same on every machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml
from common import write_json  # benchmarks/common.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "published_serving.yaml"
TIMES = ("ttft_ms", "tpot_ms")


def _spec(case: dict, folder: Path):
    """The case's model: a preset, or its config.json written out and read."""
    from archscope.spec import load_spec

    if "hf_config" not in case:
        return load_spec(case["model"], case.get("set", []))
    path = folder / case["id"]
    path.mkdir()
    (path / "config.json").write_text(json.dumps({**case["hf_config"],
                                                  "_name_or_path": case["model"]}))
    return load_spec(str(path), case.get("set", []))


def predict(case: dict, folder: Path) -> tuple[float, bool]:
    """fit's figure for the case's metric, and whether the model is a mixture of experts."""
    import archscope.api as arch
    from archscope.estimate.fit import ENGINES

    spec = _spec(case, folder)
    result = arch.fit(spec, case.get("gpu") or case["proxy_gpu"],
                      n_gpus=case.get("n_gpus", 1), tp=case.get("tp"), ep=case.get("ep", 1),
                      weight_format=case.get("weight_format"), kv_dtype=case.get("kv_dtype"),
                      context=case["context"], batch=case.get("batch", 1),
                      gpu_memory_utilization=case.get("gpu_memory_utilization", 0.9),
                      # the engine's memory view where fit has one (vLLM's reserve)
                      engine=case["engine"] if case["engine"] in ENGINES else "raw",
                      max_batched_tokens=case.get("max_batched_tokens"))
    value = {"decode_tokens_per_s": lambda: result.decode_tokens_per_s,
             "tpot_ms": lambda: 1e3 * result.decode.seconds,
             "ttft_ms": lambda: 1e3 * result.prefill.seconds,
             "kv_capacity_tokens": lambda: result.kv_capacity_tokens}[case["metric"]]()
    return value, spec.moe


def allowed(case: dict, moe: bool) -> float:
    """The allowed ratio: 1.25 for one GPU's dense decode or capacity, else 1.35."""
    one = case.get("n_gpus", 1) == 1 and not moe and case["metric"] != "ttft_ms"
    return 1.25 if one else 1.35


def rows(cases: list[dict]) -> list[dict]:
    """One row per case: the measurement, fit's prediction, the ratio and its bound."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            predicted, moe = predict(case, Path(tmp))
            measured = float(case["value"])
            ratio = measured / predicted if case["metric"] in TIMES else predicted / measured
            limit = allowed(case, moe)
            out.append({"id": case["id"], "metric": case["metric"], "engine": case["engine"],
                        "gpu": case.get("gpu") or f"{case['proxy_gpu']} (proxy)",
                        "n_gpus": case.get("n_gpus", 1), "moe": moe, "measured": measured,
                        "predicted": round(predicted, 3), "ratio": round(ratio, 3),
                        "allowed": limit,
                        "within": 1 / limit <= ratio <= limit, "source": case["source"]})
    return out


def summary(table: list[dict]) -> dict:
    """How many cases hold their bound, and the worst ratio either way."""
    worst = max(table, key=lambda r: max(r["ratio"], 1 / r["ratio"]))
    return {"cases": len(table), "within": sum(r["within"] for r in table),
            "worst": {"id": worst["id"], "ratio": worst["ratio"]},
            "over_2x": [r["id"] for r in table if not 0.5 <= r["ratio"] <= 2]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the rows and summary here")
    args = parser.parse_args(argv)
    table = rows(yaml.safe_load(DATA.read_text(encoding="utf-8")))
    width = max(len(r["id"]) for r in table)
    print(f"{'case':<{width}}  {'metric':<19} {'measured':>10} {'fit':>10} {'ratio':>6}  bound")
    for r in table:
        mark = "ok" if r["within"] else "OUT"
        print(f"{r['id']:<{width}}  {r['metric']:<19} {r['measured']:>10,.2f} "
              f"{r['predicted']:>10,.2f} {r['ratio']:>6.2f}  {r['allowed']:.2f} {mark}")
    s = summary(table)
    print(f"\n{s['within']} of {s['cases']} within their bound; worst {s['worst']['id']} at "
          f"{s['worst']['ratio']:.2f}; more than 2x off: {', '.join(s['over_2x']) or 'none'}. "
          f"Ratio above 1: fit is optimistic.")
    if args.json:
        write_json(args.json, {"what": "archscope fit beside published serving measurements",
                               "rows": table, "summary": s})
    return 0


if __name__ == "__main__":
    sys.exit(main())
