"""`archscope profile` as text: measured beside predicted (and transformers), memory, breakdown."""

from __future__ import annotations

from tabulate import tabulate

from archscope.report.fmt import commas, mb


def model_label(r: dict) -> str:
    """The model as run: 'llama-3.2-1b (--set n_layers=2)'; just the name for the preset as
    shipped (and for older records, which carry no `overrides`)."""
    sets = " ".join(f"--set {o}" for o in r.get("overrides") or ())
    return f"{r['model']} ({sets})" if sets else str(r["model"])


def _rate(x) -> str:
    return "-" if x is None else f"{x:,.2f}"


def _spread(stats: dict) -> str:
    return f"{stats['min']:,.2f} .. {stats['max']:,.2f} (IQR {stats['iqr']:,.2f}, n={stats['n']})"


def _timing_rows(r: dict) -> list[list[str]]:
    rows = [["prefill (ms, time to first token)", _rate(r["prefill_ms"]),
             _spread(r["prefill_ms_stats"]), _rate(r["predicted_prefill_ms"]),
             _rate(r.get("hf_prefill_ms"))],
            ["decode (tokens/s)", _rate(r["decode_tokens_per_s"]),
             _spread(r["decode_tokens_per_s_stats"]), _rate(r["predicted_decode_tokens_per_s"]),
             _rate(r.get("hf_decode_tokens_per_s"))]]
    return rows


def _memory_rows(r: dict) -> list[list[str]]:
    peak = r["peak_memory_bytes"]
    return [["weights", mb(r["weights_bytes_measured"]), mb(r["weights_bytes_estimated"])],
            [f"KV cache ({r['kv_cache_len']} tokens x batch {r['batch']})",
             mb(r["kv_cache_bytes_measured"]), mb(r["kv_cache_bytes_estimated"])],
            ["peak (weights + cache + activations)", "-" if peak is None else mb(peak),
             mb(r["estimated_memory_bytes"])]]


def _breakdown_lines(b: dict) -> list[str]:
    unit = "device" if b["time"] == "cuda" else "host"
    lines = ["", f"Where a decode step goes ({b['step']}; {unit} time, "
                 f"{b['step_ms']:.3f} ms per step inside operators)"]
    mods = [[m["name"], m["calls_per_step"], f"{m['ms_per_step']:.3f}", m["percent"]]
            for m in b["modules"]]
    lines += tabulate(mods, ["module (inclusive)", "calls/step", "ms/step", "%"],
                      tablefmt="simple", floatfmt="g").splitlines()
    lines.append("")
    ops = [[o["name"], o["calls_per_step"], f"{o['ms_per_step']:.3f}", o["percent"]]
           for o in b["ops"]]
    lines += tabulate(ops, ["operator (self)", "calls/step", "ms/step", "%"],
                      tablefmt="simple", floatfmt="g").splitlines()
    return lines


def profile_text(r: dict) -> str:
    """The record of archscope.measure.profile.profile, for people."""
    where = r.get("gpu_name") or f"{r['cpu']}, {r['threads']} threads"
    lines = [f"{model_label(r)} on {r['device']} ({where}), {r['dtype']}, weights {r['weights']}",
             f"  batch {r['batch']}, prompt {r['prompt_len']}, {r['new_tokens']} new tokens; "
             f"{r['decode_step']} decode step; median of {r['repeats']} after {r['warmup']} "
             f"warm-up; torch {r['torch_version']}", ""]
    lines += tabulate(_timing_rows(r), ["", "measured", "spread (min .. max)", "roofline",
                                        "transformers"],
                      tablefmt="simple", disable_numparse=True).splitlines()
    lines += [f"roofline: {r['hardware']} ({r['hardware_source']}): "
              f"{r['hardware_peak_flops'] / 1e12:,.2f} TFLOP/s {r['dtype']}, "
              f"{r['hardware_bandwidth_bytes_per_s'] / 1e9:,.1f} GB/s; prefill "
              f"{r['predicted_prefill_bound']}-bound, decode {r['predicted_decode_bound']}-bound"]
    lines += ["", f"Decode moves {mb(r['decode_bytes_per_step'])} per step (weights + cache): "
                  f"achieved {r['decode_achieved_bandwidth_bytes_per_s'] / 1e9:,.2f} GB/s, "
                  f"{100 * r['fraction_of_bandwidth_limit']:.1f}% of the "
                  f"{_rate(r['bandwidth_limit_tokens_per_s'])} tokens/s that this machine's "
                  f"measured {r['measured_bandwidth_bytes_per_s'] / 1e9:,.1f} GB/s allows."]
    if "max_abs_logit_diff" in r:
        lines.append(f"transformers ({r['hf_attention']}, {r['hf_cache']} cache): archscope "
                     f"decodes {r['decode_speedup_vs_hf']:.2f}x as fast; max |logit diff| "
                     f"{r['max_abs_logit_diff']:.3g}; same greedy tokens: "
                     f"{'yes' if r['hf_tokens_match'] else 'no'}")
    if "compiled_tokens_match_eager" in r:
        lines.append(f"eager step: {_rate(r['eager_decode_tokens_per_s'])} tokens/s; same "
                     f"tokens as compiled: {'yes' if r['compiled_tokens_match_eager'] else 'no'}")
    lines += ["", "Memory"]
    lines += tabulate(_memory_rows(r), ["", "measured", "estimated"], tablefmt="simple",
                      disable_numparse=True).splitlines()
    lines.append(f"  peak: {r['peak_memory_method']} ({commas(r['peak_memory_bytes'] or 0)} B)")
    if "breakdown" in r:
        lines += _breakdown_lines(r["breakdown"])
    return "\n".join(lines) + "\n"
