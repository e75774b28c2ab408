"""reports/profiles.md: the measured runs saved by `archscope profile --save` as tables.

A run of a what-if (`--set`) is labelled with its overrides, e.g. `llama-3.2-1b (--set
n_layers=2)`, and `profile --save` gives it a file name of its own (`profile_file_name`).

A profile file is a JSON object (or a list of them) with at least `model` and `device`; any
other file in the folder (estimates.json) is not a profile and is skipped. Every other key is
optional: a missing one shows as a dash, so records from older or newer versions still render.
Machine details appear only as the data files state them.

Below them, the benchmark runs committed under reports/data/benchmarks/ (pages/benchmarks.py).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Sequence

from archscope import reads
from archscope.errors import InputError, quote, shorten
from archscope.spec.limits import DATA_JSON_BYTES_MAX, JSON_DEPTH_MAX
from archscope.report.fmt import commas, mib
from archscope.report.pages.markdown import DASH, GENERATED, page, section, table
from archscope.report.terminal.profile import model_label

_PLAIN = re.compile(r"[A-Za-z0-9_.]+=[A-Za-z0-9_.]+")


def profile_file_name(r: dict) -> str:
    """'profile-MODEL[-VARIANT]-DEVICE-DTYPE[-FORMAT][-compiled][-packed].json': the weight
    format, a compiled step and packed weights each keep a run beside the plain eager one.
    VARIANT is there when the run had `--set`
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
    if r.get("compiled"):  # beside the eager run of the same configuration
        parts.append("compiled")
    if r.get("pack_weights"):  # beside the run on the weights as they are
        parts.append("packed")
    return "-".join(parts) + ".json"


def read_json(path: Path):
    """A data file's JSON: a regular file within DATA_JSON_BYTES_MAX, nested at most
    JSON_DEPTH_MAX; InputError naming the file when it cannot be read."""
    return reads.read_json(path, DATA_JSON_BYTES_MAX, JSON_DEPTH_MAX, "data file")


def load_profiles(folder: Path) -> list[dict]:
    """Profile records of every *.json in `folder` (sorted by file name), each with `_file`,
    each checked to be tabulated (InputError naming the file and record that is not)."""
    records = []
    for path in reads.folder_files(folder, "*.json"):
        data = read_json(path)
        for k, item in enumerate(data if isinstance(data, list) else [data]):
            if isinstance(item, dict) and "model" in item and "device" in item:
                record = {**item, "_file": path.name}
                _check_record(record, path if isinstance(data, dict) else f"{path}[{k}]")
                records.append(record)
    return records


# What a record's keys hold where the tables show them (absent or null: a dash).
TEXTS = ("model", "device", "dtype", "weights", "weight_format", "decode_step", "hardware",
         "gpu_name", "cpu")
NUMBERS = ("batch", "prompt_len", "new_tokens", "threads", "prefill_ms", "predicted_prefill_ms",
           "decode_tokens_per_s", "predicted_decode_tokens_per_s", "fraction_of_bandwidth_limit",
           "peak_memory_bytes", "kv_cache_bytes_measured", "kv_cache_bytes_estimated",
           "hf_decode_tokens_per_s", "decode_speedup_vs_hf", "max_abs_logit_diff")


def _check_record(r: dict, where) -> None:
    """A record the tables can show: strings and numbers where the tables show them
    (`model` and `device` given), `overrides` a list of strings, and every cell renders."""
    for key in TEXTS + NUMBERS:
        value = r.get(key)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if (value is None and key not in ("model", "device")) or \
                (isinstance(value, str) if key in TEXTS else number):
            continue
        want = "a string" if key in TEXTS else "a number"
        raise InputError(f"{where}: {key}: expected {want}, got {quote(value)}")
    sets = r.get("overrides")
    if sets is not None and not (isinstance(sets, list) and all(isinstance(o, str) for o in sets)):
        raise InputError(f"{where}: overrides: expected a list of KEY=VALUE strings, got "
                         f"{quote(sets)}")
    for title, cell, _ in (*RUNTIME, *MEMORY):
        try:
            cell(r)
        except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError) as err:
            raise InputError(f"{where}: the '{title}' column cannot show this record "
                             f"({type(err).__name__}: {shorten(str(err), 100)}); a profile "
                             f"record holds what `archscope profile --save` writes") from None


def key_cell(key: str, fmt=str):
    """A table cell: the row's `key` through `fmt`, or a dash when it is missing."""
    def cell(r: dict) -> str:
        value = r.get(key)
        return DASH if value is None else fmt(value)
    return cell


def decimals(digits: int):
    """A formatter: thousands separated, `digits` decimals."""
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
    ("model", model_label, "l"), ("device", key_cell("device"), "l"), ("machine", _machine, "l"),
    ("dtype", key_cell("dtype"), "l"), ("weights", key_cell("weights"), "l"),
    ("weight format", lambda r: r.get("weight_format") or DASH, "l"),
    ("batch", key_cell("batch"), "r"), ("prompt", key_cell("prompt_len", commas), "r"),
    ("new tokens", key_cell("new_tokens", commas), "r"),
    ("decode step", key_cell("decode_step"), "l"),
    ("prefill ms", key_cell("prefill_ms", decimals(2)), "r"),
    ("predicted prefill ms", key_cell("predicted_prefill_ms", decimals(2)), "r"),
    ("decode tok/s", key_cell("decode_tokens_per_s", decimals(1)), "r"),
    ("predicted tok/s (roofline)", key_cell("predicted_decode_tokens_per_s", decimals(1)), "r"),
    ("roofline hardware", key_cell("hardware"), "l"),
    ("of bandwidth limit",
     key_cell("fraction_of_bandwidth_limit", lambda x: f"{100 * x:.1f}%"), "r"),
]

MEMORY = [
    ("model", model_label, "l"), ("device", key_cell("device"), "l"),
    ("dtype", key_cell("dtype"), "l"),
    ("peak memory MiB", key_cell("peak_memory_bytes", _mib), "r"),
    ("KV cache measured MiB", key_cell("kv_cache_bytes_measured", _mib), "r"),
    ("KV cache estimated MiB", key_cell("kv_cache_bytes_estimated", _mib), "r"),
    ("measured / estimated", _ratio("kv_cache_bytes_measured", "kv_cache_bytes_estimated"), "r"),
    ("HF decode tok/s", key_cell("hf_decode_tokens_per_s", decimals(1)), "r"),
    ("speed-up vs HF", key_cell("decode_speedup_vs_hf", decimals(2)), "r"),
    ("max abs logit diff vs HF", key_cell("max_abs_logit_diff", lambda x: f"{x:.3g}"), "r"),
    ("file", lambda r: f"`data/{r['_file']}`", "l"),
]


def _order(r: dict) -> tuple:
    return (str(r.get("device")), str(r.get("model")), str(r.get("dtype")), r["_file"])


def profiles_page(records: list[dict], extra: Sequence[str] = ()) -> str:
    """The page; `extra`: sections to follow the profiles' (benchmarks.benchmark_sections)."""
    head = f"# Measured profiles\n\n{GENERATED}\n\nBack to [the comparison](comparison.md).\n"
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
