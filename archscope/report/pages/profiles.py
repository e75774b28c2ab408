"""reports/profiles.md: the measured runs saved by `archscope profile --save` as tables.

A run of a what-if (`--set`) is labelled with its overrides, e.g. `llama-3.2-1b (--set
n_layers=2)`, and `profile --save` gives it a file name of its own (`profile_file_name`).

A profile file is a JSON object (or a list of them) with at least `model` and `device`; any
other file in the folder (estimates.json) is not a profile and is skipped. Every other key is
optional: a missing one shows as a dash, so records from older or newer versions still render.
Machine details appear only as the data files state them.

Benchmark runs (`benchmarks/*.py --json reports/data/benchmarks/NAME.json`) are read by
`load_benchmarks`; the page shows those it knows (QUANTIZED: benchmarks/quantized_decode.py)
under their own headings, each with the command that made it.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from archscope.errors import InputError
from archscope.report.fmt import commas, mib
from archscope.report.pages.markdown import DASH, GENERATED, page, section, table
from archscope.report.terminal.profile import model_label

_PLAIN = re.compile(r"[A-Za-z0-9_.]+=[A-Za-z0-9_.]+")


def profile_file_name(r: dict) -> str:
    """'profile-MODEL[-VARIANT]-DEVICE-DTYPE.json'. VARIANT is there when the run had `--set`
    overrides, so a variant never overwrites the preset's run: the overrides in order, '='
    as '-' (n_layers=2 -> 'n_layers-2'); a long or unusual set is cut short and ends in 8 hex
    digits of a hash of the exact strings."""
    overrides = list(r.get("overrides") or ())
    parts = ["profile", str(r["model"])]
    if overrides:
        variant = "-".join(re.sub(r"[^A-Za-z0-9_.]+", "-", o).strip("-") for o in overrides)
        if len(variant) > 40 or not all(_PLAIN.fullmatch(o) for o in overrides):
            digest = hashlib.sha1("\n".join(overrides).encode()).hexdigest()[:8]
            variant = f"{variant[:31].rstrip('-')}-{digest}"
        parts.append(variant)
    parts += [str(r["device"]).replace(":", ""), str(r["dtype"])]
    if r.get("weight_format"):  # a weight-only quantized run beside its 16-bit one
        parts.append(str(r["weight_format"]))
    return "-".join(parts) + ".json"


def load_profiles(folder: Path) -> list[dict]:
    """Profile records of every *.json in `folder` (sorted by file name), each with `_file`."""
    records = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise InputError(f"{path}: not a readable JSON file ({err})") from None
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict) and "model" in item and "device" in item:
                records.append({**item, "_file": path.name})
    return records


def _get(key: str, fmt=str):
    def cell(r: dict) -> str:
        value = r.get(key)
        return DASH if value is None else fmt(value)
    return cell


def _num(digits: int):
    return lambda x: f"{x:,.{digits}f}"


def _mib(x) -> str:
    return mib(int(x)).removesuffix(" MiB")


def _machine(r: dict) -> str:
    if r.get("gpu_name"):
        return r["gpu_name"]
    cpu = r.get("cpu")
    threads = f", {r['threads']} threads" if r.get("threads") else ""
    return f"{cpu}{threads}" if cpu else DASH


def _ratio(a: str, b: str, digits: int = 3):
    def cell(r: dict) -> str:
        if r.get(a) is None or not r.get(b):
            return DASH
        return f"{r[a] / r[b]:.{digits}f}"
    return cell


RUNTIME = [
    ("model", model_label, "l"), ("device", _get("device"), "l"), ("machine", _machine, "l"),
    ("dtype", _get("dtype"), "l"), ("weights", _get("weights"), "l"),
    ("weight format", lambda r: r.get("weight_format") or DASH, "l"),
    ("batch", _get("batch"), "r"), ("prompt", _get("prompt_len", commas), "r"),
    ("new tokens", _get("new_tokens", commas), "r"), ("decode step", _get("decode_step"), "l"),
    ("prefill ms", _get("prefill_ms", _num(2)), "r"),
    ("predicted prefill ms", _get("predicted_prefill_ms", _num(2)), "r"),
    ("decode tok/s", _get("decode_tokens_per_s", _num(1)), "r"),
    ("predicted tok/s (roofline)", _get("predicted_decode_tokens_per_s", _num(1)), "r"),
    ("roofline hardware", _get("hardware"), "l"),
    ("of bandwidth limit", _get("fraction_of_bandwidth_limit", lambda x: f"{100 * x:.1f}%"), "r"),
]

MEMORY = [
    ("model", model_label, "l"), ("device", _get("device"), "l"), ("dtype", _get("dtype"), "l"),
    ("peak memory MiB", _get("peak_memory_bytes", _mib), "r"),
    ("KV cache measured MiB", _get("kv_cache_bytes_measured", _mib), "r"),
    ("KV cache estimated MiB", _get("kv_cache_bytes_estimated", _mib), "r"),
    ("measured / estimated", _ratio("kv_cache_bytes_measured", "kv_cache_bytes_estimated"), "r"),
    ("HF decode tok/s", _get("hf_decode_tokens_per_s", _num(1)), "r"),
    ("speed-up vs HF", _get("decode_speedup_vs_hf", _num(2)), "r"),
    ("max abs logit diff vs HF", _get("max_abs_logit_diff", lambda x: f"{x:.3g}"), "r"),
    ("file", lambda r: f"`data/{r['_file']}`", "l"),
]


def load_benchmarks(folder: Path) -> dict[str, dict]:
    """{file name: JSON object} of every reports/data/benchmarks/*.json, by name."""
    out = {}
    for path in sorted((Path(folder) / "benchmarks").glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise InputError(f"{path}: not a readable JSON file ({err})") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected a JSON object, got {type(data).__name__}")
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
    ("format", _get("format"), "l"), ("decode tok/s", _get("tokens_per_s", _num(2)), "r"),
    ("x bf16", _get("ratio_to_bf16", _num(2)), "r"),
    ("x bf16 (min-max)", lambda r: f"{r['ratio_to_bf16_min']:.2f}-{r['ratio_to_bf16_max']:.2f}"
     if r.get("ratio_to_bf16_min") is not None else DASH, "r"),
    ("weight MB / step", _get("weight_bytes_per_step", lambda x: f"{x / 1e6:,.1f}"), "r"),
    ("GB/s", _get("achieved_bytes_per_s", lambda x: f"{x / 1e9:.2f}"), "r"),
    ("roofline tok/s", _get("predicted_tokens_per_s", _num(2)), "r"),
    ("bound", _get("predicted_bound"), "l"),
    ("roofline error", _get("prediction_error", lambda x: f"{100 * x:+.1f}%"), "r"),
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


def _order(r: dict) -> tuple:
    return (str(r.get("device")), str(r.get("model")), str(r.get("dtype")), r["_file"])


def profiles_page(records: list[dict], benchmarks: dict[str, dict] | None = None) -> str:
    head = f"# Measured profiles\n\n{GENERATED}\n\nBack to [the comparison](comparison.md).\n"
    extra = _quantized_sections(benchmarks or {})
    if not records:
        return page(head, "No profile results yet: run `archscope profile MODEL --save` to add "
                          "one to `reports/data/`, then `archscope report`.\n", *extra)
    rows = sorted(records, key=_order)
    runtime_note = ("medians over the timed repeats after warm-up; decode tok/s counts every "
                    "sequence of the batch; predicted: the roofline of the named hardware "
                    "(archscope.measure.roofline). Machines as the data files name them.")
    memory_note = ("MiB = 2^20 bytes; KV cache estimated by archscope.estimate.kv_cache_bytes for "
                   "the same cache length and dtype; HF columns only for runs with --compare-hf.")
    return page(head, section("Runtime", table(rows, RUNTIME), runtime_note),
                section("Memory and agreement", table(rows, MEMORY), memory_note), *extra)
