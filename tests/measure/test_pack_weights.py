"""`profile --pack-weights`: a bf16 CPU run whose linears read oneDNN's packed copies of their
weights, eager or compiled: the same logits and tokens as the run without it, a record that
says so, a roofline priced on packed kernels, and a clear refusal wherever packing does not
apply."""

from __future__ import annotations

import json

import pytest
import torch

from archscope.hardware import kernels
from archscope.nn import linear
from archscope.nn.linear import packing_unavailable

needs_packing = pytest.mark.skipif(packing_unavailable() is not None,
                                   reason=f"no packed bf16 weights here: {packing_unavailable()}")
TINY = ("llama-3.2-1b", "--set", "n_layers=1", "--set", "vocab_size=256", "--set", "d_model=64",
        "--set", "attention.n_heads=4", "--set", "attention.n_kv_heads=2",
        "--set", "attention.head_dim=16", "--set", "ffn.d_ff=128")
RUN = ("--device", "cpu", "--dtype", "bf16", "--prompt-len", "8", "--new-tokens", "4",
       "--repeats", "1", "--compare-hf", "--format", "json")


@needs_packing
@pytest.mark.slow
def test_a_packed_run_gives_the_unpacked_logits_and_says_it_was_packed(run_cli, tmp_path):
    kernels.forget()
    code, out, err = run_cli("profile", *TINY, *RUN)
    assert code == 0, err
    plain = json.loads(out)
    code, out, err = run_cli("profile", *TINY, *RUN, "--pack-weights", "--hardware", "local",
                             "--save", "--save-dir", str(tmp_path))
    assert code == 0, err
    packed = json.loads(out)
    assert (plain["pack_weights"], packed["pack_weights"]) == (False, True)
    # q, k, v, o, gate, up, down and the head: every linear of the one layer, packed
    assert packed["decode_step"] == "eager, 8 linears on packed weights"
    # the same kernel on another layout: transformers' logits differ from both by the same
    assert packed["max_abs_logit_diff"] == plain["max_abs_logit_diff"]
    assert "bf16 packed matmuls" in packed["hardware_source"]
    (saved,) = tmp_path.glob("*.json")  # beside, not over, the unpacked run's file
    assert saved.name.endswith("-cpu-bf16-packed.json")


@needs_packing
@pytest.mark.slow
def test_a_compiled_packed_run_gives_the_eager_tokens_and_the_unpacked_logits(run_cli):
    code, out, err = run_cli("profile", *TINY, *RUN, "--compile", "--pack-weights")
    assert code == 0, err
    record = json.loads(out)
    # fused first (q/k/v and gate/up one linear each), then packed: qkv, o, gate_up, down, head
    assert record["decode_step"].endswith(", 5 linears on packed weights")
    assert record["decode_step"].startswith("torch.compile (")
    assert record["compiled_tokens_match_eager"] is True
    code, out, err = run_cli("profile", *TINY, *RUN, "--compile")
    assert code == 0, err
    assert record["max_abs_logit_diff"] == json.loads(out)["max_abs_logit_diff"]


@pytest.mark.parametrize("args, expected", [
    (("--dtype", "fp32"), "dtype 'fp32'"),
    (("--dtype", "bf16", "--weight-format", "int8"), "--weight-format int8"),
])
def test_packing_where_it_does_not_apply_exits_2_naming_the_option(run_cli, args, expected):
    code, out, err = run_cli("profile", *TINY, "--device", "cpu", "--prompt-len", "8",
                             "--new-tokens", "4", "--repeats", "1", "--pack-weights", *args,
                             "--format", "json")
    assert code == 2 and out == ""
    assert "--pack-weights is for a bf16 run on the CPU" in err and expected in err


@needs_packing
@pytest.mark.slow
def test_packed_copies_that_would_not_fit_are_refused_before_packing(run_cli, monkeypatch):
    monkeypatch.setattr(linear, "packed_bytes", lambda model: 1 << 60)  # an exabyte of copies
    monkeypatch.setattr(linear, "pack_weights", lambda model: pytest.fail("packed anyway"))
    code, out, err = run_cli("profile", *TINY, *RUN, "--pack-weights")
    assert code == 2 and out == ""
    assert "--pack-weights needs" in err and "nothing was packed" in err


def test_a_cpu_that_cannot_pack_refuses_in_one_line(run_cli, monkeypatch):
    """As on issue 35's AVX2-only AMD EPYC, where the reorder raised a RuntimeError traceback:
    the probe's answer, before anything is built."""
    monkeypatch.setattr(linear, "packing_unavailable",
                        lambda: "oneDNN packs bf16 weights only on a CPU with AVX-512 (BW, VL "
                                "and DQ) or AVX-NE-CONVERT, and this one has neither")
    monkeypatch.setattr(linear, "pack_weights", lambda model: pytest.fail("packed anyway"))
    code, out, err = run_cli("profile", *TINY, *RUN, "--pack-weights")
    assert code == 2 and out == ""
    assert "--pack-weights cannot run here: oneDNN packs bf16 weights only" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@needs_packing
@pytest.mark.slow
def test_the_packed_kernel_runs_where_it_was_timed_fastest_and_the_record_says_so(
        run_cli, monkeypatch):
    times = {"aten": 2.0, "packed": 1.0}  # a machine on which the packed copy wins everywhere
    monkeypatch.setattr(kernels, "linear_seconds",
                        lambda rows, cols, tokens, dtype, device, kernel, nbytes, step_bytes,
                        impl, **rivals: times[impl])
    calls = []
    real = linear.onednn_linear
    monkeypatch.setattr(linear, "onednn_linear", lambda *a: calls.append(1) or real(*a))
    code, out, err = run_cli("profile", *TINY, *RUN, "--pack-weights")
    assert code == 0, err
    record = json.loads(out)
    assert {k["kernel"] for k in record["linear_kernels"]} == {"packed"}
    assert calls  # the model's linears ran on their packed copies
    times.update(packed=3.0)  # now the plain weight wins: nothing runs packed
    kernels.forget()
    calls.clear()
    code, out, err = run_cli("profile", *TINY, *RUN, "--pack-weights")
    assert code == 0, err
    assert {k["kernel"] for k in json.loads(out)["linear_kernels"]} == {"aten"}
    assert not calls
