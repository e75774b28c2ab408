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


def test_a_beaten_local_roofline_is_probed_again_and_keeps_the_fastest_rates(monkeypatch):
    first = _local(1e9, 1e9)
    later = iter([_local(3e9, 0.5e9), _local(2e9, 4e9), _local(1e9, 2e9)])
    monkeypatch.setattr(predicted, "roofline_hardware", lambda *a: next(later))
    p = _predicted(first)
    faster = p["predicted_decode_tokens_per_s"] * 1.5  # a run 50% faster than predicted
    settled = predicted.settle_kernels(tiny_spec(), O, CPU, first, None, faster)
    assert (settled.peak_flops("fp32"), settled.bandwidth) == (3e9, 4e9)
    assert next(later, None) is None  # probed REPROBES more times
    assert f"probed {limits.REPROBES + 1} times" in settled.source


def test_a_roofline_not_beaten_or_a_preset_is_left_alone(monkeypatch):
    monkeypatch.setattr(predicted, "roofline_hardware", lambda *a: (_ for _ in ()).throw(
        AssertionError("probed again")))
    hw = _local(1e9, 1e9)
    p = _predicted(hw)
    slower = (p["predicted_prefill_ms"] * 1.1, p["predicted_decode_tokens_per_s"] * 0.9)
    assert predicted.settle_kernels(tiny_spec(), O, CPU, hw, *slower) is hw
    preset = roofline.PRESETS["h100"]
    assert predicted.settle_kernels(tiny_spec(), O, CPU, preset, 1e-6, 1e12) is preset
