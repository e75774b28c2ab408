"""--compare-hf's timing: transformers stepped through its own cache by archscope's stopwatch,
per-pair ratios, and the bandwidth wall that rejects any timing faster than the bytes allow."""

from __future__ import annotations

import json
import types

import pytest
import torch
import yaml

from archscope.estimate import kv_cache_bytes
from archscope.measure import limits, reference, roofline, timed
from archscope.measure.profile import hf_timed_generation
from archscope.nn import build_model
from archscope.spec.fields import to_mapping
from parity import tiny_spec

RUN = ("--prompt-len", "6", "--new-tokens", "4", "--repeats", "3", "--no-breakdown")


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(to_mapping(tiny_spec()), sort_keys=False))
    return str(path)


def _hardware(bandwidth: float) -> roofline.Hardware:
    return roofline.Hardware("fake", {"fp32": 1e12}, bandwidth, "a test's made-up machine")


# -- transformers stepped through its own cache -----------------------------------------------

@pytest.mark.parametrize("cache", ["dynamic", "static"])
def test_stepping_transformers_gives_its_own_generate_tokens(cache):
    spec = tiny_spec()
    model = build_model(spec, torch.device("cpu"), torch.float32, seed=3)
    prompt = torch.randint(0, spec.vocab_size, (2, 5), generator=torch.Generator().manual_seed(1))
    hf = reference.hf_twin(model)
    stepper = reference.HFStepper(hf, context=5 + 6, cache_kind=cache)
    expected = reference.hf_generate(hf, prompt, 6, cache)[0]
    for _ in range(2):  # the second run reuses (static) or replaces (dynamic) the cache
        tokens, prefill_s, decode_s = hf_timed_generation(stepper, prompt, 6)
        assert torch.equal(tokens, expected)
        assert prefill_s > 0 and decode_s > 0


# -- the bandwidth wall ------------------------------------------------------------------------

def test_a_timing_faster_than_the_wall_is_a_measurement_error():
    spec = tiny_spec()
    wall = limits.wall_for(spec, _hardware(1e9), prompt_len=6, new_tokens=4, batch=1,
                           dtype="fp32")
    # the least decode time is the decode's bytes at the bandwidth, as the roofline counts them
    decode = roofline.predict_decode(spec, _hardware(1e9), 6, 4, 1, "fp32")
    assert wall.least_decode_s == pytest.approx(decode.bytes / 1e9) and wall.least_decode_s > 0
    fake = [(2 * wall.least_prefill_s, 2 * wall.least_decode_s),     # possible
            (2 * wall.least_prefill_s, 0.5 * wall.least_decode_s),   # decode impossible
            (0.1 * wall.least_prefill_s, 3 * wall.least_decode_s)]   # prefill impossible
    prefills, decodes, errors = limits.screen(fake, wall, "archscope")
    assert prefills == [fake[0][0], fake[1][0], None]
    assert decodes == [fake[0][1], None, fake[2][1]]
    assert [(e["run"], e["phase"]) for e in errors] == [(2, "decode"), (3, "prefill")]
    assert all("measurement error" in e["message"] for e in errors)


def test_the_wall_counts_the_fewest_experts_a_batch_can_read():
    moe = tiny_spec(ffn=dict(kind="moe", n_experts=8, top_k=2, d_expert=16,
                             router=dict(method="greedy", normalize=True)))
    hw = _hardware(1e9)
    one = limits.wall_for(moe, hw, prompt_len=6, new_tokens=4, batch=1, dtype="fp32")
    eight = limits.wall_for(moe, hw, prompt_len=6, new_tokens=4, batch=8, dtype="fp32")
    # the 3 steps after a 6-token prompt read 7, 8 and 9 cached tokens per sequence
    cache_growth = sum(kv_cache_bytes(moe, n, 8, "fp32") - kv_cache_bytes(moe, n, 1, "fp32")
                       for n in (7, 8, 9))
    # the roofline expects 8 tokens to touch more experts; the wall only their bigger cache
    expected = roofline.predict_decode(moe, hw, 6, 4, 8, "fp32").bytes
    assert eight.decode_bytes < expected
    assert eight.decode_bytes - one.decode_bytes == cache_growth


def test_a_run_that_beats_the_first_probe_gets_more_probes_and_the_fastest_sets_the_wall():
    spec, first = tiny_spec(), _hardware(1e9)
    wall = limits.wall_for(spec, first, prompt_len=6, new_tokens=4, batch=1, dtype="fp32")
    fine = [(2 * wall.least_prefill_s, 2 * wall.least_decode_s)]
    calls = []

    def probe():
        calls.append(1)
        return _hardware([0.5e9, 4e9, 2e9][len(calls) - 1])

    assert limits.settle(wall, first, fine, probe) == (wall, first) and not calls
    quick = [(2 * wall.least_prefill_s, 0.5 * wall.least_decode_s)]  # 2 GB/s worth of bytes
    settled, best = limits.settle(wall, first, quick, probe)
    assert len(calls) == limits.REPROBES and best.bandwidth == 4e9
    assert settled.bandwidth == 4e9 and settled.probes == (1e9, 0.5e9, 4e9, 2e9)
    assert limits.screen(quick, settled, "archscope")[2] == []  # within the fastest probe
    too_quick = [(2 * wall.least_prefill_s, 0.1 * wall.least_decode_s)]  # 10 GB/s worth
    assert len(limits.screen(too_quick, settled, "archscope")[2]) == 1


def _fast_clock():
    """A perf_counter that advances one nanosecond a call: every timed phase looks ~free."""
    now = [0.0]

    def perf_counter():
        now[0] += 1e-9
        return now[0]

    return types.SimpleNamespace(perf_counter=perf_counter)


def _still_machine(monkeypatch) -> None:
    """The machine's probes stand still under a fast clock (seconds of reprobing otherwise): a
    test's numbers for the bandwidth, and no kernel retimed when a run beats the roofline."""
    from archscope.hardware import kernels

    monkeypatch.setattr(roofline, "calibrate", lambda device="cpu", dtype="fp32", seconds=0.3:
                        roofline.Hardware("local-cpu", {dtype: 1e11}, 2e10, "a test's numbers"))
    monkeypatch.setattr(kernels, "retime", lambda: None)


@pytest.mark.slow
def test_profile_reports_no_rate_above_the_wall_it_measured(run_cli, spec_file, monkeypatch):
    monkeypatch.setattr(timed, "time", _fast_clock())  # both models' stopwatch, not calibrate's
    monkeypatch.setattr(limits, "largest_cache_bytes", lambda: 0)  # as if it outgrew the caches
    _still_machine(monkeypatch)
    code, out, err = run_cli("profile", spec_file, *RUN, "--compare-hf", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    for key in ("prefill_ms", "decode_tokens_per_s", "hf_prefill_ms", "hf_decode_tokens_per_s",
                "decode_speedup_vs_hf", "prefill_speedup_vs_hf",
                "decode_achieved_bandwidth_bytes_per_s", "fraction_of_bandwidth_limit"):
        assert r[key] is None, key
    assert r["decode_tokens_per_s_stats"] is None and r["hf_decode_tokens_per_s_stats"] is None
    found = {(e["model"], e["phase"], e["run"]) for e in r["measurement_errors"]}
    assert found == {(m, p, i) for m in ("archscope", "transformers")
                     for p in ("prefill", "decode") for i in (1, 2, 3)}

    code, text, err = run_cli("profile", spec_file, *RUN, "--compare-hf")
    assert code == 0, err
    assert "MEASUREMENT ERRORS (12)" in text and "measurement error, left out" in text
    decode_row = next(line for line in text.splitlines() if line.startswith("decode (tokens/s)"))
    assert decode_row.split()[2] == "ERROR"


@pytest.mark.slow
def test_compare_hf_gives_per_step_figures_and_per_pair_ratios(run_cli, spec_file):
    code, out, err = run_cli("profile", spec_file, *RUN, "--compare-hf", "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    assert r["hf_tokens_match"] and r["max_abs_logit_diff"] < 1e-4
    assert r["measurement_errors"] == []  # a real run on a real machine beats no wall
    for prefix in ("", "hf_"):
        rate = r[prefix + "decode_tokens_per_s"]
        # stated in ms to 3 decimals: a tiny model's sub-millisecond step is off by up to 5e-4
        assert r[prefix + "decode_ms_per_step"] == pytest.approx(1e3 / rate, rel=1e-3, abs=5e-4)
        assert r[prefix + "decode_tokens_per_s_stats"]["n"] == 3
        # nothing presented, medians or extremes, is faster than the wall of this run
        limit = r["bandwidth_limit_tokens_per_s"]  # none where the CPU's cache holds a step
        assert limit is None or r[prefix + "decode_tokens_per_s_stats"]["max"] <= limit
        assert r[prefix + "prefill_ms_stats"]["min"] >= r["bandwidth_wall"]["least_prefill_ms"]
    for kind in ("decode", "prefill"):
        pairs = r[f"{kind}_speedup_vs_hf_stats"]
        assert pairs["n"] == 3 and pairs["min"] <= r[f"{kind}_speedup_vs_hf"] <= pairs["max"]
    assert r["bandwidth_wall"]["bandwidth_bytes_per_s"] == r["measured_bandwidth_bytes_per_s"]


def test_a_model_that_fits_the_cache_has_no_wall(run_cli, spec_file, monkeypatch):
    """A CPU's cache may hold a toy model's whole step: however fast it is timed, nothing is
    rejected, and no bandwidth limit is stated."""
    monkeypatch.setattr(timed, "time", _fast_clock())
    monkeypatch.setattr(limits, "largest_cache_bytes", lambda: 1 << 40)
    _still_machine(monkeypatch)
    code, out, err = run_cli("profile", spec_file, *RUN, "--format", "json")
    assert code == 0, err
    r = json.loads(out)
    assert r["measurement_errors"] == [] and r["decode_tokens_per_s"] > 0
    assert r["bandwidth_wall"]["least_decode_ms"] == r["bandwidth_wall"]["least_prefill_ms"] == 0
    assert r["bandwidth_limit_tokens_per_s"] is None and r["fraction_of_bandwidth_limit"] is None
