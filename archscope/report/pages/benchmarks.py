"""reports/profiles.md's benchmark sections: the runs committed under
reports/data/benchmarks/ by `benchmarks/*.py --json`, shown under their own headings, each with
the command that made it. Known: QUANTIZED (benchmarks/quantized_decode.py), VERSUS_HF
(benchmarks/decode_vs_hf.py), CPU_LINEAR (benchmarks/cpu_linear.py), COMPARE_SPEED and
SWEEP_SPEED (benchmarks/compare_speed.py, sweep_speed.py); a file of another benchmark is read
but not shown.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from archscope.errors import InputError, shorten
from archscope.reads import folder_files
from archscope.report.pages.fit_published import fit_published_sections
from archscope.report.pages.markdown import DASH, section, table
from archscope.report.pages.profiles import decimals, key_cell, read_json


def load_benchmarks(folder: Path) -> dict[str, dict]:
    """{file name: JSON object} of every reports/data/benchmarks/*.json, by name; a file whose
    sections cannot be built from it is refused naming it (InputError)."""
    out = {}
    folder = Path(folder) / "benchmarks"
    for path in folder_files(folder, "*.json") if folder.is_dir() else []:
        data = read_json(path)
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected a JSON object, got {type(data).__name__}")
        try:  # built once alone, so that a mistyped value is named with its file
            benchmark_sections({path.name: data})
        except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError,
                statistics.StatisticsError) as err:
            raise InputError(f"{path}: cannot be tabulated ({type(err).__name__}: "
                             f"{shorten(str(err), 100)}); a benchmark file holds what its "
                             f"benchmarks/*.py --json writes") from None
        out[path.name] = data
    return out


QUANTIZED = "quantized_decode"  # benchmarks/quantized_decode.py's files: quantized_decode*.json


def _logits(r: dict) -> str:
    d = r.get("logits_vs_bf16")
    if not d:
        return DASH
    token = "same" if d.get("greedy_token_agrees") else "differs"
    return f"{d['max_abs']:.3f} / {d['mean_abs']:.4f} ({token})"


QUANTIZED_COLUMNS = [
    ("format", key_cell("format"), "l"),
    ("decode tok/s", key_cell("tokens_per_s", decimals(2)), "r"),
    ("x bf16", key_cell("ratio_to_bf16", decimals(2)), "r"),
    ("x bf16 (min-max)", lambda r: f"{r['ratio_to_bf16_min']:.2f}-{r['ratio_to_bf16_max']:.2f}"
     if r.get("ratio_to_bf16_min") is not None else DASH, "r"),
    ("weight MB / step", key_cell("weight_bytes_per_step", lambda x: f"{x / 1e6:,.1f}"), "r"),
    ("GB/s", key_cell("achieved_bytes_per_s", lambda x: f"{x / 1e9:.2f}"), "r"),
    ("roofline tok/s", key_cell("predicted_tokens_per_s", decimals(2)), "r"),
    ("bound", key_cell("predicted_bound"), "l"),
    ("roofline error", key_cell("prediction_error", lambda x: f"{100 * x:+.1f}%"), "r"),
    ("logits vs bf16: max / mean abs (greedy token)", _logits, "l"),
]


def _quantized_sections(benchmarks: dict[str, dict]) -> list[str]:
    out = []
    for name, data in benchmarks.items():
        if not name.startswith(QUANTIZED):
            continue
        machine = data.get("machine") or {}
        note = (f"{data.get('title', DASH)}; {machine.get('cpu', DASH)}, "
                f"{machine.get('cores', DASH)} cores. Rounds alternate the formats; tok/s is the "
                "median round, x bf16 the median of the per-round ratios. Roofline: what "
                "`archscope profile --hardware local` predicts for the run (this machine's "
                "kernels in each format at the model's shapes, so dequantisation is in their "
                "time); error = predicted / measured - 1. GB/s: weight bytes a step reads x "
                f"tok/s. Command: `{data.get('command', DASH)}`; data: `data/benchmarks/{name}`.")
        out.append(section("Weight-only quantized decode against bf16",
                           table(data.get("formats", []), QUANTIZED_COLUMNS), note))
    return out


VERSUS_HF = "decode_vs_hf"  # benchmarks/decode_vs_hf.py's files: decode_vs_hf*.json


def _median(key: str, fmt):
    def cell(r: dict) -> str:
        values = r.get(key)
        return fmt(statistics.median(values)) if values else DASH
    return cell


def _rate(side: str):
    """A side's median: tok/s for a decode case, seconds for a prefill case."""
    def cell(r: dict) -> str:
        if r.get(f"{side}_tokens_per_s"):
            return f"{statistics.median(r[f'{side}_tokens_per_s']):,.2f} tok/s"
        values = r.get(f"{side}_prefill_s")
        return f"{statistics.median(values):,.3f} s" if values else DASH
    return cell


VERSUS_HF_COLUMNS = [
    ("case", key_cell("case"), "l"), ("archscope", _rate("archscope"), "r"),
    ("transformers", _rate("transformers"), "r"),
    ("speed ratio", _median("ratios", lambda x: f"{x:.3f}"), "r"),
    ("ratio min-max", lambda r: f"{min(r['ratios']):.3f}-{max(r['ratios']):.3f}"
     if r.get("ratios") else DASH, "r"),
    ("archscope GB/s", _median("archscope_bytes_per_s", lambda x: f"{x / 1e9:.2f}"), "r"),
    ("of matrix-vector bandwidth", _median("fraction_of_gemv", lambda x: f"{100 * x:.1f}%"), "r"),
    ("of its own products", _median("fraction_of_own_products", lambda x: f"{100 * x:.1f}%"),
     "r"),
    ("same greedy tokens", lambda r: "yes" if r.get("same_tokens") else "no", "l"),
    ("measurement errors", lambda r: str(len(r.get("errors") or [])), "r"),
]


def _versus_hf_sections(benchmarks: dict[str, dict]) -> list[str]:
    out = []
    for name, data in benchmarks.items():
        if not name.startswith(VERSUS_HF):
            continue
        what = f"{data.get('model', DASH)}" + (
            f" (--set {' '.join(data['overrides'])})" if data.get("overrides") else "")
        note = (f"{what}, random weights, on {data.get('gpu_name') or data.get('cpu', DASH)} "
                f"({data.get('device', DASH)}, {data.get('threads', DASH)} threads), torch "
                f"{data.get('torch', DASH)}; archscope step {data.get('step', DASH)}, "
                f"transformers cache {data.get('hf_cache', DASH)}; "
                f"{data.get('new_tokens', DASH)} new tokens per decode run, "
                f"{data.get('runs', DASH)} interleaved pairs per case. Speed ratio: archscope / "
                "transformers per pair, median (> 1: archscope faster). Of matrix-vector "
                "bandwidth (batch 1): archscope's bytes/s over what the model's own "
                "matrix-vector products reach at its shapes, timed once in the same process; "
                "of its own products: after each run, the generation stepped again with each "
                "step followed by a pass through the model's own weight matrices and nothing "
                "else, the step's bytes/s over the pass's, median per run (pairs a fraction of "
                "a second apart: this machine's bandwidth drifts by tens of percent between "
                "minutes). "
                f"Command: `{data.get('command', DASH)}`; data: `data/benchmarks/{name}`.")
        step = f", archscope's {data['step']} decode step" if data.get("step") else ""
        if data.get("pack_weights"):
            step += " on packed weights (archscope.nn.linear.pack_weights)"
            note += (" Packed run: the matrix-vector probe times plain weights, so its column "
                     "is left empty; its own products are the packed ones.")
        out.append(section(f"Decode and prefill against transformers{step}",
                           table(data.get("results", []), VERSUS_HF_COLUMNS), note))
    return out


CPU_LINEAR = "cpu_linear"  # benchmarks/cpu_linear.py's files: cpu_linear*.json


def _seconds(key: str):
    return key_cell(key, lambda x: f"{1e3 * x:,.1f}")


CPU_LINEAR_COLUMNS = [
    ("phase", key_cell("phase"), "l"),
    ("its matmuls with F.linear, ms", _seconds("f_linear_s"), "r"),
    ("with archscope's choice, ms", _seconds("archscope_s"), "r"),
    ("ratio", key_cell("ratio", decimals(2)), "r"),
    ("kernels chosen", lambda r: ", ".join(r.get("kernels", [])) or DASH, "l"),
]


def _cpu_linear_sections(benchmarks: dict[str, dict]) -> list[str]:
    out = []
    for name, data in benchmarks.items():
        if not name.startswith(CPU_LINEAR):
            continue
        dtype = data.get("dtype", "fp32")
        why_not = data.get("packing_unavailable")
        note = (f"{data.get('model', DASH)}'s weight shapes in {dtype} on "
                f"{data.get('cpu', DASH)} ({data.get('threads', DASH)} threads), torch "
                f"{data.get('torch', DASH)}. archscope times its candidate kernels at each "
                f"shape ({', '.join(data.get('candidates', [])) or DASH}: aten is F.linear, "
                "onednn oneDNN's fp32 kernel, packed oneDNN's kernel on a packed bf16 copy; "
                "archscope/nn/linear.py) and runs the fastest, F.linear unless another takes "
                f"at most {1 - data.get('margin', 0):.0%} of its time"
                + (f"; no packed copy here: {why_not}" if why_not else "")
                + ". This table times that choice against F.linear again, in alternation "
                "(fastest of several calls; a decode-sized product over copies of its matrix "
                "that outgrow the caches), summed over the phase's matmuls; where F.linear "
                "was chosen both are the same call. Ratio: F.linear / archscope's choice "
                f"(> 1: the choice is faster). Command: `{data.get('command', DASH)}`; data: "
                f"`data/benchmarks/{name}`.")
        out.append(section(f"{dtype} linears on the CPU: F.linear against archscope's choice",
                           table(data.get("results", []), CPU_LINEAR_COLUMNS), note))
    return out


COMPARE_SPEED, SWEEP_SPEED = "compare_speed", "sweep_speed"  # their files: NAME*.json


def _spread(d: dict) -> str:
    return f"{d['median']:.3f} s ({d['min']:.3f}-{d['max']:.3f}, {d['runs']} runs)"


def _analytic_rows(name: str, data: dict) -> list[dict]:
    """One file's rows of the analytic-speed table: what was timed, its time, its rate."""
    source = f"`data/benchmarks/{name}`"
    if name.startswith(COMPARE_SPEED):
        ours, hf = data["archscope_compare_s"], data["transformers_meta_s"]
        n = data["models"]
        return [{"work": f"`archscope compare`, every preset ({n} models), a fresh process "
                         "(start-up and imports included)", "time": _spread(ours),
                 "rate": f"{n / ours['median']:,.1f} models/s", "data": source},
                {"work": f"transformers: the same {n} models built on the meta device and "
                         "counted (in process, imports done)", "time": _spread(hf),
                 "rate": f"{data['ratio']:.1f}x archscope's time", "data": source}]
    sw, cmp = data["sweep"], data["compare"]
    return [{"work": f"`archscope sweep {data['model']}`: {sw['variants']:,} variants "
                     f"({sw['invalid']:,} invalid, each validated) over "
                     f"{' x '.join(g.split('=')[0] for g in data['grid'])}",
             "time": f"{sw['seconds']:.3f} s (median of {data['runs']})",
             "rate": f"{sw['variants_per_s']:,.0f} variants/s", "data": source},
            {"work": f"compare's record for every preset ({cmp['models']} models: spec file "
                     "read, validated, recorded), in process",
             "time": f"{cmp['seconds']:.3f} s (median of {data['runs']})",
             "rate": f"{cmp['models_per_s']:,.0f} models/s", "data": source}]


ANALYTIC_COLUMNS = [("work", key_cell("work"), "l"), ("time", key_cell("time"), "r"),
                    ("rate", key_cell("rate"), "r"), ("data", key_cell("data"), "l")]


def _analytic_sections(benchmarks: dict[str, dict]) -> list[str]:
    rows, notes = [], []
    for name, data in benchmarks.items():
        if name.startswith((COMPARE_SPEED, SWEEP_SPEED)):
            rows += _analytic_rows(name, data)
            notes.append(f"`{data.get('command', DASH)}` ({data.get('cpu', DASH)}, "
                         f"{data.get('cores', DASH)} cores)")
    if not rows:
        return []
    note = ("Every number here is analytic: no torch in the timed work of archscope's rows. "
            f"Commands: {'; '.join(notes)}.")
    return [section("Analytic speed: compare and sweep", table(rows, ANALYTIC_COLUMNS), note)]


STATE_MIXER_DECODE = "state_mixer_decode"  # benchmarks/state_mixer_decode.py's files
STATE_MIXER_COLUMNS = [
    ("mixer kind", lambda r: r["kind"], "l"), ("preset (its shape)", lambda r: r["preset"], "l"),
    ("step ms", lambda r: f"{r['step_ms']:.3f}", "r"),
    ("matmuls ms", lambda r: f"{r['matmul_ms']:.3f}", "r"),
    ("step / matmuls", lambda r: DASH if r["ratio"] is None else f"{r['ratio']:.2f}", "r"),
    ("wall ms", lambda r: f"{r['wall_ms']:.3f}", "r")]


def _state_mixer_sections(benchmarks: dict[str, dict]) -> list[str]:
    out = []
    for name, data in benchmarks.items():
        if name.startswith(STATE_MIXER_DECODE):
            note = (f"One mixer module at the preset's width, fp32, batch 1, a one-token decode "
                    f"step under the breakdown's profiler: its operators' time beside its matrix "
                    f"products' (bar: {data['bar']:g}x). `{data.get('command', DASH)}` "
                    f"({data.get('cpu', DASH)}, {data.get('threads', DASH)} threads, torch "
                    f"{data.get('torch', DASH)}).")
            out.append(section("State mixers: a decode step against its matmuls",
                               table(data["results"], STATE_MIXER_COLUMNS), note))
    return out


def benchmark_sections(benchmarks: dict[str, dict]) -> list[str]:
    """The sections of the benchmark files `load_benchmarks` read: the quantized decode runs,
    the CPU linears, the runs against transformers (each kind in file-name order), the state
    mixers' decode steps, then the analytic commands' speed."""
    return (_quantized_sections(benchmarks) + _cpu_linear_sections(benchmarks)
            + _versus_hf_sections(benchmarks) + _state_mixer_sections(benchmarks)
            + _analytic_sections(benchmarks) + fit_published_sections(benchmarks))
