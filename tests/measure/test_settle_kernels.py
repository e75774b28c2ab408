"""The kernel roofline stated beside a profile: a run that beats the local kernels' prediction
makes them be probed again, and each rate is the fastest any probe saw (as the bandwidth wall
settles); a roofline not beaten, or a catalog preset, is left as it was."""

from __future__ import annotations

import torch

from archscope.measure import limits, predicted, roofline
from archscope.measure.preflight import ProfileOptions
from parity import tiny_spec

O = ProfileOptions(device="cpu", dtype="fp32", prompt_len=6, new_tokens=4)
CPU = torch.device("cpu")


def _local(flops: float, bandwidth: float) -> roofline.Hardware:
    return roofline.Hardware("local-cpu", {"fp32": flops}, bandwidth, "probed (a test's numbers)")


def _predicted(hw: roofline.Hardware) -> dict:
    return predicted.predictions(tiny_spec(), O, hw, hw, None)


def test_a_beaten_local_roofline_is_timed_again_and_read_at_each_kernels_fastest(monkeypatch):
    from archscope.hardware import kernels

    first, settled_hw = _local(1e9, 1e9), _local(3e9, 4e9)
    retimed = []
    monkeypatch.setattr(kernels, "retime", lambda: retimed.append(1))
    monkeypatch.setattr(predicted, "roofline_hardware", lambda *a: settled_hw)
    p = _predicted(first)
    faster = p["predicted_decode_tokens_per_s"] * 1.5  # a run 50% faster than predicted
    settled = predicted.settle_kernels(tiny_spec(), O, CPU, first, None, faster)
    assert len(retimed) == limits.REPROBES
    assert (settled.peak_flops("fp32"), settled.bandwidth) == (3e9, 4e9)
    assert f"timed {limits.REPROBES + 1} times" in settled.source


def test_settled_kernels_are_what_a_later_reading_in_the_process_sees(monkeypatch):
    """The settled roofline is read from the kernels' timings, so fit --gpu cpu after a profile
    (the CPU calibration) prices the same rates the profile states."""
    from archscope.hardware import kernels

    rounds: dict = {}  # each shape: the first round slow, the second fastest, then slower
    monkeypatch.setattr(kernels, "_time_linear", lambda *key: 1e-3 * next(
        rounds.setdefault(key, iter([2.0, 1.0, 1.5, 3.0]))))
    monkeypatch.setattr(kernels, "_time_together",  # candidates timed together: the same
                        lambda keys: [kernels._time_linear(*key) for key in keys])
    kernels.forget()
    try:
        first = predicted.roofline_hardware(tiny_spec(), O, CPU)
        settled = predicted.settle_kernels(tiny_spec(), O, CPU, first, 1e-9, None)
        again = predicted.roofline_hardware(tiny_spec(), O, CPU)
    finally:
        kernels.forget()
    assert settled.bandwidth > first.bandwidth
    assert (again.bandwidth, again.peak_flops("fp32")) == (
        settled.bandwidth, settled.peak_flops("fp32"))


def test_a_roofline_not_beaten_or_a_preset_is_left_alone(monkeypatch):
    monkeypatch.setattr(predicted, "roofline_hardware", lambda *a: (_ for _ in ()).throw(
        AssertionError("probed again")))
    hw = _local(1e9, 1e9)
    p = _predicted(hw)
    slower = (p["predicted_prefill_ms"] * 1.1, p["predicted_decode_tokens_per_s"] * 0.9)
    assert predicted.settle_kernels(tiny_spec(), O, CPU, hw, *slower) is hw
    preset = roofline.preset("h100-sxm")
    assert predicted.settle_kernels(tiny_spec(), O, CPU, preset, 1e-6, 1e12) is preset
