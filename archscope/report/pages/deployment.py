"""The report's "Deployment" section: a few presets on common setups, from `archscope fit`.

`deployment_section()` is pure: it returns the markdown section and the data dict it was
rendered from (one `FitResult.row()` per setup), computing every figure with estimate/fit.py on
the catalog's parts; nothing is read from or written to disk.
"""

from __future__ import annotations

from archscope.estimate.fit import Setup, fit
from archscope.hardware import catalog_part
from archscope.report.pages.markdown import section, table
from archscope.spec import load_spec

# (model, part, Setup): the setups people ask about most, one per family of answer.
SETUPS = (
    ("llama-3.1-8b", "h100-sxm", Setup(weight_format="bf16", context=8192)),
    ("llama-3.1-8b", "l40s", Setup(weight_format="q4_k_m", context=8192)),
    ("qwen3-30b-a3b", "h100-sxm", Setup(weight_format="fp8", context=32768, batch=8)),
    ("gpt-oss-120b", "h100-sxm", Setup(weight_format="mxfp4-experts", context=32768)),
    ("deepseek-v3", "h200", Setup(n_gpus=8, ep=8, weight_format="fp8-block", context=32768,
                                  batch=16)),
    ("nemotron-h-8b", "h100-sxm", Setup(weight_format="bf16", context=8192)),
    ("qwen3-next-80b-a3b", "h200", Setup(weight_format="fp8", context=131072, batch=4)),
)


def _gb(n: int) -> str:
    return f"{n / 1e9:,.2f}"


def _setup(r: dict) -> str:
    split = f"tp {r['tp']}" + (f", ep {r['ep']}" if r["ep"] > 1 else "")
    return f"{r['n_gpus']} x {r['gpu']} ({split})"


COLUMNS = (
    ("model", lambda r: r["model"], "l"),
    ("GPUs", _setup, "l"),
    ("weights", lambda r: r["weight_format"], "l"),
    ("context", lambda r: f"{r['context']:,}", "r"),
    ("batch", lambda r: str(r["batch"]), "r"),
    ("fits", lambda r: "yes" if r["fits"] else "no", "l"),
    ("weights/GPU (GB)", lambda r: _gb(r["weights_bytes_per_gpu"]), "r"),
    ("cache/seq/GPU (GB)", lambda r: _gb(r["cache_bytes_per_sequence"]), "r"),
    ("longest context", lambda r: f"{r['max_context']:,}", "r"),
    ("sequences", lambda r: f"{r['max_concurrent_sequences']:,}", "r"),
    ("TTFT (ms)", lambda r: f"{r['ttft_ms']:,.0f} ({r['bound']['ttft']})", "r"),
    ("TPOT (ms)", lambda r: f"{r['tpot_ms']:,.2f} ({r['bound']['tpot']})", "r"),
    ("tok/s", lambda r: f"{r['decode_tokens_per_s']:,.0f}", "r"),
)

NOTE = ("Weights per GPU in the named format (estimate/formats.py: scales included, the "
        "tensors the format keeps in 16 bits priced so); memory usable at 0.9 of each GPU "
        "(vLLM's default), the rest the activation and workspace reserve; cache per sequence "
        "paged in 16-token blocks, with any constant state (a hybrid's state-mixer layers); "
        "tensor parallelism splits heads, FFN and vocabulary, MLA's latent cache is held whole "
        "on every GPU, --ep spreads whole experts. TTFT: a prompt of the context length; "
        "TPOT: one step of the batch at the context; a roofline at the cited achievable "
        "fractions of peak, each format's kernels at their share of bf16's bandwidth, plus the "
        "kernel gaps and collective latencies (archscope/hardware/achievable.yaml); the "
        "reports' profiles page sets fit beside published serving measurements "
        "(benchmarks/fit_vs_published.py). Each row: `archscope fit MODEL --gpu GPU ...`; "
        "GB = 10^9 bytes.")


def deployment_rows(setups=SETUPS) -> list[dict]:
    """One `archscope fit --format json` object per setup."""
    return [fit(load_spec(model), catalog_part(part), setup).row()
            for model, part, setup in setups]


def deployment_section(setups=SETUPS, level: int = 2) -> tuple[str, dict]:
    """(markdown section, its data: {"setups": [fit rows]})."""
    rows = deployment_rows(setups)
    body = table(rows, COLUMNS)
    return section("Deployment", body, NOTE, level=level), {"setups": rows}
