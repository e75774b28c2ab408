"""`profile` and `generate` with --weight-format: quantized linears run, the record reports the
bytes held and the logit difference from bf16; formats without a kernel exit 2."""

from __future__ import annotations

import json

import pytest

from archscope.estimate.formats import weights_in_format
from archscope.spec import load_spec

TINY = ("llama-3.2-1b", "--set", "n_layers=2", "--set", "d_model=128", "--set",
        "attention.n_heads=4", "--set", "attention.n_kv_heads=2", "--set",
        "attention.head_dim=32", "--set", "ffn.d_ff=256", "--set", "vocab_size=300")
RUN = ("--prompt-len", "8", "--new-tokens", "3", "--repeats", "1", "--no-breakdown")


@pytest.mark.slow
def test_profile_int4_reports_the_logit_difference_and_bytes(run_cli):
    code, out, err = run_cli("profile", *TINY, *RUN, "--weight-format", "int4", "--format",
                             "json")
    assert code == 0, err
    r = json.loads(out)
    spec = load_spec(TINY[0], [TINY[i + 1] for i in range(1, len(TINY), 2)])
    assert r["weight_format"] == "int4-g128" and r["dtype"] == "bf16"
    assert r["quantized_linears"] == 7 * 2 and r["linears_left_16bit"] == {}
    assert r["weights_bytes_in_format_estimated"] == weights_in_format(spec, "int4").total_bytes
    assert r["weights_bytes_held"] == (r["weights_bytes_in_format_estimated"]
                                       + r["kernel_layout_overhead_bytes"])
    assert r["kernel_layout_overhead_bytes"] > 0
    diff = r["logits_vs_bf16"]
    assert 0 < diff["mean_abs"] <= diff["max_abs"]  # quantized: close, never identical
    assert isinstance(diff["greedy_token_agrees"], bool)
    assert r["decode_tokens_per_s"] > 0 and r["decode_weight_bandwidth_bytes_per_s"] > 0


@pytest.mark.slow
def test_profile_text_view_runs_with_int8(run_cli):
    code, out, err = run_cli("profile", *TINY, *RUN, "--weight-format", "int8")
    assert code == 0, err


@pytest.mark.parametrize("fmt", ["fp8", "nvfp4", "q4_k_m"])
def test_formats_without_a_kernel_exit_2_naming_the_option(run_cli, fmt):
    code, out, err = run_cli("profile", *TINY, *RUN, "--weight-format", fmt)
    assert code == 2 and out == ""
    assert "--weight-format" in err and "int8, int4-g128" in err and "Traceback" not in err


@pytest.mark.parametrize("extra, says", [(("--dtype", "fp32"), "bf16"),
                                         (("--compare-hf",), "--compare-hf")])
def test_options_that_do_not_go_with_it_exit_2(run_cli, extra, says):
    code, _, err = run_cli("profile", *TINY, *RUN, "--weight-format", "int8", *extra)
    assert code == 2 and says in err


def test_generate_with_a_weight_format(run_cli, tmp_path):
    folder = tmp_path / "ckpt"
    code, _, err = run_cli("make-checkpoint", *TINY, "--weights", str(folder))
    assert code == 0, err
    code, out, err = run_cli("generate", "--weights", str(folder), "--new-tokens", "4",
                             "--weight-format", "int8", "Hello")
    assert code == 0, err
    assert "int8 linears" in err and "4 new" in err
    code, _, err = run_cli("generate", "--weights", str(folder), "--weight-format", "mxfp4",
                           "Hello")
    assert code == 2 and "--weight-format" in err
