"""`profile --pack-weights`: a bf16 CPU run whose linears read oneDNN's packed copies of their
weights, eager or compiled: the same logits and tokens as the run without it, a record that
says so, a roofline priced on packed kernels, and a clear refusal wherever packing does not
apply."""

from __future__ import annotations

import json

import pytest
import torch

from archscope.hardware import kernels

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(),
                                reason="this torch has no oneDNN")
TINY = ("llama-3.2-1b", "--set", "n_layers=1", "--set", "vocab_size=256", "--set", "d_model=64",
        "--set", "attention.n_heads=4", "--set", "attention.n_kv_heads=2",
        "--set", "attention.head_dim=16", "--set", "ffn.d_ff=128")
RUN = ("--device", "cpu", "--dtype", "bf16", "--prompt-len", "8", "--new-tokens", "4",
       "--repeats", "1", "--compare-hf", "--format", "json")


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


def test_packed_copies_that_would_not_fit_are_refused_before_packing(run_cli, monkeypatch):
    from archscope.nn import linear

    monkeypatch.setattr(linear, "packed_bytes", lambda model: 1 << 60)  # an exabyte of copies
    monkeypatch.setattr(linear, "pack_weights", lambda model: pytest.fail("packed anyway"))
    code, out, err = run_cli("profile", *TINY, *RUN, "--pack-weights")
    assert code == 2 and out == ""
    assert "--pack-weights needs" in err and "nothing was packed" in err
