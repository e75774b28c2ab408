"""The report's table of `archscope fit` beside published serving measurements: the file
benchmarks/fit_vs_published.py --json writes (reports/data/benchmarks/fit_vs_published.json),
one row per case with its measurement, fit's prediction and the ratio (above 1: optimistic)."""

from __future__ import annotations

from archscope.report.pages.markdown import section, table

FIT_VS_PUBLISHED = "fit_vs_published"  # benchmarks/fit_vs_published.py's file
COLUMNS = [
    ("case", lambda r: r["id"], "l"), ("engine", lambda r: r["engine"], "l"),
    ("GPUs", lambda r: f"{r['n_gpus']} x {r['gpu']}", "l"),
    ("metric", lambda r: r["metric"], "l"),
    ("measured", lambda r: f"{r['measured']:,.2f}", "r"),
    ("fit", lambda r: f"{r['predicted']:,.2f}", "r"),
    ("ratio", lambda r: f"{r['ratio']:.2f}", "r"),
    ("bound", lambda r: f"{r['allowed']:.2f} {'ok' if r['within'] else 'out'}", "l")]


def fit_published_sections(benchmarks: dict[str, dict]) -> list[str]:
    out = []
    for name, data in benchmarks.items():
        if name.startswith(FIT_VS_PUBLISHED):
            s = data["summary"]
            note = (f"{s['within']} of {s['cases']} cases within their bound (a single GPU's "
                    f"dense decode or capacity 1.25x, a multi-GPU, MoE or TTFT case 1.35x); "
                    f"worst: {s['worst']['id']} at {s['worst']['ratio']:.2f}. Ratio = fit / "
                    f"measured for rates and capacities, measured / fit for times: above 1, fit "
                    f"is optimistic. Each case and its source: "
                    f"benchmarks/data/published_serving.yaml. `{data.get('command', '')}`.")
            out.append(section("fit beside published serving measurements",
                               table(data["rows"], COLUMNS), note))
    return out
