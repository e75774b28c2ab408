"""`archscope compare`: the JSON contract, what-ifs, verification, bad input."""

import json

import pytest

from archscope.estimate import count_params, kv_cache_bytes
from archscope.spec import load_spec, preset_names

INT_KEYS = ("params_total", "params_active", "params_embedding", "kv_cache_bytes",
            "flops_per_token", "prefill_flops", "weights_bytes")


def test_json_covers_every_preset_with_integer_keys(run_cli):
    code, out, _ = run_cli("compare", "--format", "json", "--seq-len", "4096", "--dtype", "bf16")
    assert code == 0
    rows = json.loads(out)
    assert [r["model"] for r in rows] == preset_names()
    for row in rows:
        spec = load_spec(row["model"])
        # a model without attention layers (a pure Mamba stack) holds a state and no KV cache;
        # shared blocks (Zamba 2) attend at every use
        attends = spec.shared is not None or any(layer.attention is not None
                                                  for layer in spec.plan)
        for key in INT_KEYS if attends else [*INT_KEYS, "state_bytes"]:
            if key == "kv_cache_bytes" and not attends:
                assert row[key] == 0, row["model"]
                continue
            assert type(row[key]) is int and row[key] > 0, (row["model"], key)
        assert row["params_total"] == count_params(spec).total
        assert row["kv_cache_bytes"] == kv_cache_bytes(spec, 4096, 1, "bf16")
        assert row["weights_bytes"] == 2 * row["params_total"]
        assert row["exceeds_context"] == (4096 > spec.max_seq_len)


def test_what_if_shows_what_gqa_saves(run_cli):
    _, out, _ = run_cli("compare", "llama-3.2-1b", "--format", "json")
    _, mha, _ = run_cli("compare", "llama-3.2-1b", "--set", "attention.n_kv_heads=32",
                        "--format", "json")
    gqa, mha = json.loads(out)[0], json.loads(mha)[0]
    assert mha["kv_cache_bytes"] == 4 * gqa["kv_cache_bytes"]  # 32 KV heads instead of 8
    assert mha["params_total"] > gqa["params_total"]


def test_verify_adds_counted_params(run_cli):
    code, out, _ = run_cli("compare", "gpt2", "deepseek-v2-lite", "--verify", "--format", "json")
    assert code == 0
    for row in json.loads(out):
        assert row["params_counted"] == row["params_total"]


@pytest.mark.parametrize("fmt, marker", [("table", "KV cache (GB)"), ("markdown", "|:--"),
                                         ("csv", "params_total")])
def test_text_formats(fmt, marker, run_cli):
    code, out, _ = run_cli("compare", "llama-3.2-1b", "mistral-7b-v0.1", "--format", fmt)
    assert code == 0 and marker in out and "mistral-7b-v0.1" in out


def test_past_the_context_is_flagged(run_cli):
    code, out, _ = run_cli("compare", "gpt2", "--seq-len", "2048")
    assert code == 0 and "gpt2 *" in out and "exceeds the model's context" in out


@pytest.mark.parametrize("args, words", [
    (["--set", "attention.n_kv_heads=7"], "must be a multiple"),
    (["--set", "atention.n_heads=8"], "did you mean 'attention'"),
    (["nosuchmodel"], "unknown model"),
    (["--seq-len", "0"], "--seq-len"),
    (["--seq-len", "-5"], "--seq-len"),
    (["--batch", "0"], "--batch"),
    (["--dtype", "fp7"], "unknown weight format"),
])
def test_bad_input_exits_2(args, words, run_cli):
    code, out, err = run_cli("compare", "llama-3.2-1b", *args) if args[0] != "nosuchmodel" \
        else run_cli("compare", *args)
    assert code == 2 and words in err and "Traceback" not in err and out == ""


def test_verify_exits_1_when_counts_disagree(run_cli, monkeypatch):
    import archscope.measure.counted as counted

    monkeypatch.setattr(counted, "counted_params", lambda spec: 1)
    code, _, err = run_cli("compare", "gpt2", "--verify", "--format", "json")
    assert code == 1 and "analytic parameters" in err


def test_attention_flops_full_adds_the_masked_half(run_cli):
    from archscope.estimate import prefill_flops

    _, causal, _ = run_cli("compare", "llama-3.2-1b", "--seq-len", "128", "--format", "json")
    _, full, _ = run_cli("compare", "llama-3.2-1b", "--seq-len", "128", "--attention-flops",
                         "full", "--format", "json")
    causal, full = json.loads(causal)[0], json.loads(full)[0]
    spec = load_spec("llama-3.2-1b")
    assert full["prefill_flops"] == prefill_flops(spec, 128, attention="full").total
    assert causal["prefill_flops"] == prefill_flops(spec, 128).total < full["prefill_flops"]
