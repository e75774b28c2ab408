"""`archscope profile` as text or markdown (the same tables, piped): measured beside predicted
(and transformers), memory, breakdown. Sizes and bandwidths in the --units byte family."""

from __future__ import annotations

from tabulate import tabulate

from archscope.report.fmt import commas
from archscope.units import byte_unit, in_unit, size, units_note


def mb(nbytes: float) -> str:
    return size(nbytes, "M")


def _per_s(nbytes_per_s: float, digits: int) -> str:
    """A bandwidth: '3,350.0 GB/s' (or GiB/s)."""
    return f"{in_unit(nbytes_per_s, 'G', digits)} {byte_unit('G')}/s"


def model_label(r: dict) -> str:
    """The model as run: 'llama-3.2-1b (--set n_layers=2)'; just the name for the preset as
    shipped (and for older records, which carry no `overrides`)."""
    sets = " ".join(f"--set {o}" for o in r.get("overrides") or ())
    return f"{r['model']} ({sets})" if sets else str(r["model"])


def _rate(x) -> str:
    return "-" if x is None else f"{x:,.2f}"


def _cached(r: dict) -> str:
    """What the bandwidth limit excused: the bytes a CPU cache may hold between steps."""
    cached = (r.get("bandwidth_wall") or {}).get("cache_bytes", 0)
    return f" for the bytes beyond its {mb(cached)} cache" if cached else ""


def _spread(stats: dict | None) -> str:
    if stats is None:
        return "no valid run (see the measurement errors)"
    return f"{stats['min']:,.2f} .. {stats['max']:,.2f} (IQR {stats['iqr']:,.2f}, n={stats['n']})"


def _measured(value) -> str:
    """A headline figure; None means every run of it was rejected as a measurement error."""
    return "ERROR" if value is None else f"{value:,.2f}"


def _pair_ratio(stats: dict | None) -> str:
    if stats is None:
        return "-"
    return f"{stats['median']:.2f} ({stats['min']:.2f} .. {stats['max']:.2f}, n={stats['n']})"


def _timing_rows(r: dict) -> list[list[str]]:
    hf = "max_abs_logit_diff" in r
    rows = []
    for label, key, ratio in (("prefill (ms, time to first token)", "prefill_ms",
                               "prefill_speedup_vs_hf"),
                              ("decode (tokens/s)", "decode_tokens_per_s",
                               "decode_speedup_vs_hf")):
        predicted = r["predicted_" + key]
        row = [label, _measured(r[key]), _spread(r[key + "_stats"]), _rate(predicted)]
        if hf:
            row += [_measured(r["hf_" + key]), _pair_ratio(r.get(ratio + "_stats"))]
        rows.append(row)
    return rows


def _error_lines(r: dict) -> list[str]:
    """Timings that beat the bandwidth wall: shown, never as results."""
    errors = r.get("measurement_errors") or []
    if not errors:
        return []
    return ["", f"MEASUREMENT ERRORS ({len(errors)}): timings faster than the bandwidth "
                f"measured in this run allows, left out of every figure above"] + [
        f"  {e['message']}" for e in errors]


def _memory_rows(r: dict) -> list[list[str]]:
    peak = r["peak_memory_bytes"]
    return [["weights", mb(r["weights_bytes_measured"]), mb(r["weights_bytes_estimated"])],
            [f"KV cache ({r['kv_cache_len']} tokens x batch {r['batch']})",
             mb(r["kv_cache_bytes_measured"]), mb(r["kv_cache_bytes_estimated"])],
            ["peak (weights + cache + activations)", "-" if peak is None else mb(peak),
             mb(r["estimated_memory_bytes"])]]


def _breakdown_lines(b: dict, tablefmt: str, gap: list[str]) -> list[str]:
    unit = "device" if b["time"] == "cuda" else "host"
    lines = ["", f"Where a decode step goes ({b['step']}; {unit} time, "
                 f"{b['step_ms']:.3f} ms per step inside operators)", *gap]
    mods = [[m["name"], m["calls_per_step"], f"{m['ms_per_step']:.3f}", m["percent"]]
            for m in b["modules"]]
    lines += tabulate(mods, ["module (inclusive)", "calls/step", "ms/step", "%"],
                      tablefmt=tablefmt, floatfmt="g").splitlines()
    lines.append("")
    ops = [[o["name"], o["calls_per_step"], f"{o['ms_per_step']:.3f}", o["percent"]]
           for o in b["ops"]]
    lines += tabulate(ops, ["operator (self)", "calls/step", "ms/step", "%"],
                      tablefmt=tablefmt, floatfmt="g").splitlines()
    return lines


def profile_text(r: dict, markdown: bool = False) -> str:
    """The record of archscope.measure.profile.profile, for people: aligned tables, or (markdown)
    pipe tables set off by blank lines."""
    tablefmt, gap = ("pipe", [""]) if markdown else ("simple", [])
    where = r.get("gpu_name") or f"{r['cpu']}, {r['threads']} threads"
    lines = [f"{model_label(r)} on {r['device']} ({where}), {r['dtype']}, weights {r['weights']}",
             f"  batch {r['batch']}, prompt {r['prompt_len']}, {r['new_tokens']} new tokens; "
             f"{r['decode_step']} decode step; median of {r['repeats']} after {r['warmup']} "
             f"warm-up; torch {r['torch_version']}", ""]
    head = ["", "measured", "spread (min .. max)", "roofline"]
    if "max_abs_logit_diff" in r:
        head += ["transformers", "archscope/transformers per pair (speed)"]
    lines += tabulate(_timing_rows(r), head, tablefmt=tablefmt,
                      disable_numparse=True).splitlines()
    lines += _error_lines(r)
    lines += [*gap, f"roofline: {r['hardware']} ({r['hardware_source']}): "
              f"{r['hardware_peak_flops'] / 1e12:,.2f} TFLOP/s {r['dtype']}, "
              f"{_per_s(r['hardware_bandwidth_bytes_per_s'], 1)}; prefill "
              f"{r['predicted_prefill_bound']}-bound, decode {r['predicted_decode_bound']}-bound"]
    if r["fraction_of_bandwidth_limit"] is not None:
        lines += ["", f"Decode moves {mb(r['decode_bytes_per_step'])} per step (weights + "
                      f"cache): achieved {_per_s(r['decode_achieved_bandwidth_bytes_per_s'], 2)}, "
                      f"{100 * r['fraction_of_bandwidth_limit']:.1f}% of the "
                      f"{_rate(r['bandwidth_limit_tokens_per_s'])} tokens/s that this machine's "
                      f"measured {_per_s(r['measured_bandwidth_bytes_per_s'], 1)} allows"
                      f"{_cached(r)}."]
    if "max_abs_logit_diff" in r:
        speedup = r["decode_speedup_vs_hf"]
        lines.append(f"transformers ({r['hf_attention']}, {r['hf_cache']} cache; stepped through "
                     f"its own cache, same timer, runs interleaved): archscope decodes "
                     f"{'-' if speedup is None else f'{speedup:.2f}x'} as fast (median per "
                     f"pair); max |logit diff| {r['max_abs_logit_diff']:.3g}; same greedy "
                     f"tokens: {'yes' if r['hf_tokens_match'] else 'no'}")
    if "compiled_tokens_match_eager" in r:
        lines.append(f"eager step: {_measured(r['eager_decode_tokens_per_s'])} tokens/s; same "
                     f"tokens as compiled: {'yes' if r['compiled_tokens_match_eager'] else 'no'}")
    lines += ["", "Memory", *gap]
    lines += tabulate(_memory_rows(r), ["", "measured", "estimated"], tablefmt=tablefmt,
                      disable_numparse=True).splitlines()
    lines += [*gap, f"  peak: {r['peak_memory_method']} "
                    f"({commas(r['peak_memory_bytes'] or 0)} B); {units_note()}"]
    if "breakdown" in r:
        lines += _breakdown_lines(r["breakdown"], tablefmt, gap)
    return "\n".join(lines) + "\n"
