"""`archscope fit` and `compare --gpu` on the command line: exit codes, messages, JSON contract,
speed (no torch import), and the split arithmetic's refusals."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from archscope.cli import main
from archscope.errors import InputError
from archscope.estimate.formats import weights_in_format
from archscope.estimate.parallel import split
from archscope.spec import load_spec, preset_names

from no_torch import assert_runs_without_torch

KEYS = ("fits", "weights_bytes_per_gpu", "cache_bytes_per_sequence", "max_context",
        "max_concurrent_sequences", "ttft_ms", "tpot_ms", "decode_tokens_per_s", "bound")
COUNTS = ("weights_bytes_per_gpu", "cache_bytes_per_sequence", "max_context",
          "max_concurrent_sequences", "kv_bytes_per_sequence", "state_bytes_per_sequence",
          "usable_bytes_per_gpu", "cache_budget_bytes_per_gpu", "n_gpus", "tp", "ep", "batch")


def _run(args, capsys):
    with pytest.raises(SystemExit) as stop:
        main(args)
        raise SystemExit(0)
    out = capsys.readouterr()
    return stop.value.code or 0, out.out, out.err


def test_json_keys_are_present_and_counts_are_integers(capsys):
    code, out, _ = _run(["fit", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--weight-format", "fp8",
                         "--batch", "4", "--format", "json"], capsys)
    row = json.loads(out)
    assert code == 0 and set(KEYS) <= set(row)
    for key in COUNTS:
        assert isinstance(row[key], int) and not isinstance(row[key], bool), key
    assert isinstance(row["fits"], bool) and set(row["bound"]) == {"ttft", "tpot"}
    assert row["fractions"]["bandwidth_source"] and row["fractions"]["compute_source"]


@pytest.mark.parametrize("gpus", [["--n-gpus", "3"], []])  # --n-gpus defaults to --tp
def test_a_tp_that_does_not_divide_the_kv_heads_exits_2_naming_them(gpus, capsys):
    code, out, err = _run(["fit", "llama-3.1-8b", "--gpu", "h100-sxm", *gpus, "--tp", "3"],
                          capsys)
    assert code == 2 and out == ""
    assert "KV heads (8)" in err and "Traceback" not in err


@pytest.mark.parametrize("args, words", [
    (["--n-gpus", "4", "--tp", "3"], "--tp 3 must divide --n-gpus 4"),
    (["--ep", "2"], "no routed experts"),
    (["--gpu-memory-utilization", "0"], "--gpu-memory-utilization"),
    (["--weight-format", "q3_k"], "unknown weight format"),
    (["--bandwidth-fraction", "3"], "--bandwidth-fraction"),
])
def test_bad_options_exit_2_naming_the_option(args, words, capsys):
    code, out, err = _run(["fit", "llama-3.1-8b", "--gpu", "h100-sxm", *args], capsys)
    assert code == 2 and out == "" and words in err


def test_experts_that_do_not_divide_by_ep_are_named():
    with pytest.raises(InputError, match=r"experts \(8\) by 3"):
        split(load_spec("mixtral-8x7b"), 3, 3, "bf16")


def test_more_gpus_than_kv_heads_replicates_one_kv_head_per_gpu():
    spec = load_spec("llama-3.1-8b")  # 8 KV heads over 16 GPUs: one each, each held twice
    sp = split(spec, 16, 1, "bf16")
    assert set(sp.kv_heads_per_gpu) == {1}


def test_one_gpu_holds_exactly_the_formats_bytes_on_every_preset():
    for name in preset_names():
        spec = load_spec(name)
        assert split(spec, 1, 1, "q4_k_m").weights_bytes_per_gpu == \
            weights_in_format(spec, "q4_k_m").total_bytes, name


def test_the_catalog_table_without_gpu(capsys):
    code, out, _ = _run(["fit", "llama-3.1-8b", "--format", "json"], capsys)
    cells = json.loads(out)
    h100 = {c["weight_format"]: c["min_gpus"] for c in cells if c["gpu"] == "h100-sxm"}
    assert code == 0 and h100["bf16"] == 1 and all(isinstance(n, int) for n in h100.values())
    code, out, _ = _run(["fit", "deepseek-v3"], capsys)
    assert code == 0 and "h200" in out and "8x" in out


def test_compare_gpu_adds_the_fit(capsys):
    code, out, _ = _run(["compare", "llama-3.1-8b", "gpt2", "--gpu", "h100-sxm",
                         "--format", "json"], capsys)
    rows = json.loads(out)
    assert code == 0 and all(set(KEYS) <= set(r["fit"]) for r in rows)
    code, out, _ = _run(["compare", "llama-3.1-8b", "--gpu", "h100-sxm"], capsys)
    assert code == 0 and "TPOT (ms)" in out and "sequences" in out


def test_fit_text_names_the_verdict_and_the_sources():
    result = CliRunner().invoke(
        __import__("archscope.cli", fromlist=["cli"]).cli,
        ["fit", "deepseek-v2", "--gpu", "h100-sxm", "--n-gpus", "8", "--weight-format", "fp8"])
    assert result.exit_code == 0, result.output
    assert "not split by heads" in result.output and "bandwidth fraction:" in result.output


def test_fit_never_imports_torch():
    """Fast by construction: the analytic path stays clear of torch (and its import time)."""
    assert_runs_without_torch(['fit', 'deepseek-v3', '--gpu', 'h200', '--n-gpus', '8', '--ep',
                               '8', '--weight-format', 'fp8-block', '--format', 'json'],
                              ['fit', 'kimi-k2'])
