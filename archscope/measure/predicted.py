"""What `archscope profile` predicts beside what it measures: the roofline on the chosen
hardware, and the bandwidth limit on the bandwidth this machine streams at."""

from __future__ import annotations

import dataclasses

import torch

from archscope.measure import limits, roofline
from archscope.measure.preflight import ProfileOptions
from archscope.spec import ModelSpec


def roofline_hardware(spec: ModelSpec, o: ProfileOptions, device: torch.device) -> roofline.Hardware:
    """The roofline's hardware: a preset by name, or (local, or auto without a preset for this
    GPU) this machine priced at the model's own kernels."""
    if o.hardware not in ("local", "auto"):
        return roofline.preset(o.hardware)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else ""
    preset = roofline.preset_for_gpu(gpu) if gpu and o.hardware == "auto" else None
    return preset or roofline.local_kernels(spec, str(device), o.dtype, o.batch, o.prompt_len,
                                            o.weight_format, o.pack_weights)


def settle_kernels(spec: ModelSpec, o: ProfileOptions, device: torch.device,
                   hw: roofline.Hardware, prefill_ms: float | None,
                   decode_tokens_per_s: float | None) -> roofline.Hardware:
    """The roofline's hardware to state beside the run. A probe of this machine's kernels is
    the best of a few timings; a whole forward beating it means the probe read low (a shared
    machine's moment), not that the model outran its own kernels. So, as the bandwidth wall
    does (limits.settle), a beaten local roofline has its kernels timed again REPROBES times,
    each shape keeping its fastest time (hardware/kernels.py `retime`, so that a later reading
    in this process, `fit --gpu cpu`, prices the same); a catalog preset, or a roofline not
    beaten, is left as it is."""
    def beaten(h: roofline.Hardware) -> bool:
        p = predictions(spec, o, h, h, None)
        return bool(prefill_ms and prefill_ms < p["predicted_prefill_ms"]) or bool(
            decode_tokens_per_s and decode_tokens_per_s > p["predicted_decode_tokens_per_s"])

    if not hw.name.startswith("local") or not beaten(hw):
        return hw
    from archscope.hardware import kernels

    for _ in range(limits.REPROBES):
        kernels.retime()
    settled = roofline_hardware(spec, o, device)
    return dataclasses.replace(settled, source=(
        f"{settled.source}; a run beat it, so timed {limits.REPROBES + 1} times: each kernel's "
        f"fastest"))


def predictions(spec, o: ProfileOptions, hw, local, measured: float | None) -> dict:
    """The roofline on `hw`, and the bandwidth limit on this machine's measured bandwidth."""
    fmt = o.weight_format  # weight-only formats: the bytes change, the compute dtype does not
    pre = roofline.predict_prefill(spec, hw, o.prompt_len, o.batch, o.dtype, fmt)
    dec = roofline.predict_decode(spec, hw, o.prompt_len, o.new_tokens, o.batch, o.dtype,
                                  o.mla_flops, fmt)
    limit = roofline.predict_decode(spec, local, o.prompt_len, o.new_tokens, o.batch, o.dtype,
                                    o.mla_flops, fmt)
    per_step = dec.extra["bytes_per_step"]
    from_memory = per_step - limits.cached_bytes(local)  # a CPU's cache may hold the rest
    # no limit for a step that fits the cache: it need not read memory at all
    bandwidth_limit = o.batch * local.bandwidth / from_memory if from_memory > 0 else None
    return {
        "hardware": hw.name, "hardware_source": hw.source,
        "hardware_peak_flops": hw.peak_flops(o.dtype), "hardware_bandwidth_bytes_per_s": hw.bandwidth,
        "predicted_prefill_ms": round(1e3 * pre.seconds, 3), "predicted_prefill_bound": pre.bound,
        "predicted_decode_tokens_per_s": round(dec.extra["tokens_per_s"], 3),
        "predicted_decode_bound": dec.bound,
        "local_predicted_decode_tokens_per_s": round(limit.extra["tokens_per_s"], 3),
        "measured_bandwidth_bytes_per_s": local.bandwidth,
        "measured_peak_flops": local.peak_flops(o.dtype),
        "decode_bytes_per_step": per_step,
        "decode_achieved_bandwidth_bytes_per_s": (None if measured is None
                                                  else round(measured / o.batch * per_step)),
        "bandwidth_limit_tokens_per_s": (None if bandwidth_limit is None
                                         else round(bandwidth_limit, 3)),
        "fraction_of_bandwidth_limit": (None if measured is None or bandwidth_limit is None
                                        else round(measured / bandwidth_limit, 4)),
    }
