"""`archscope diff A B`: only what differs, what each difference costs alone on A, and the
total A -> B, for any two presets, YAML specs, config.json files or what-ifs."""

from __future__ import annotations

import json

import pytest

from archscope.estimate import model_record
from archscope.estimate.diff import spec_diff
from archscope.spec import load_spec, preset_names


def _json(run_cli, *args):
    code, out, err = run_cli("diff", *map(str, args), "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_llama_1b_against_3b(run_cli):
    d = _json(run_cli, "llama-3.2-1b", "llama-3.2-3b", "--seq-len", "8192")
    keys = {x["key"]: x for x in d["differences"]}
    assert set(keys) == {"d_model", "n_layers", "attention.n_heads", "attention.head_dim"}
    assert keys["n_layers"]["a"] == 16 and keys["n_layers"]["b"] == 28
    # Each cost is the record's: A with that key alone, minus A.
    a = model_record(load_spec("llama-3.2-1b"), 8192)
    alone = model_record(load_spec("llama-3.2-1b", ["n_layers=28"]), 8192)
    assert keys["n_layers"]["alone"] == {
        "params": alone.params.total - a.params.total,
        "cache_bytes": alone.at(8192).cache_bytes - a.at(8192).cache_bytes,
        "decode_flops": alone.at(8192).decode.total - a.at(8192).decode.total}
    b = model_record(load_spec("llama-3.2-3b"), 8192)
    assert d["costs"]["total"]["params"] == b.params.total - a.params.total == 1_976_935_424
    assert d["costs"]["b"]["cache_bytes"] == b.at(8192).cache_bytes


def test_a_model_against_its_own_what_if(run_cli):
    d = _json(run_cli, "llama-3.2-1b", "llama-3.2-1b:attention.n_kv_heads=32")
    assert d["b"] == "llama-3.2-1b:attention.n_kv_heads=32"
    [x] = d["differences"]
    assert x["key"] == "attention.n_kv_heads" and x["alone"] == d["costs"]["total"]
    assert x["alone"]["cache_bytes"] == 3 * d["costs"]["a"]["cache_bytes"]  # 8 -> 32 KV heads
    code, out, _ = run_cli("diff", "llama-3.2-1b", "llama-3.2-1b")
    assert code == 0 and "the two specs are the same" in out


def test_a_kind_change_is_one_difference_and_hybrid_layers_are_summarised(run_cli):
    d = _json(run_cli, "mistral-7b-v0.1", "nemotron-h-4b")
    keys = {x["key"]: x for x in d["differences"]}
    assert keys["ffn"]["a"]["kind"] == "swiglu" and keys["ffn"]["b"]["kind"] == "relu2"
    assert keys["layers"]["alone"] is None and "not valid on A alone" in keys["layers"]["note"]
    assert any("linear_attention" in line for line in d["layers"]["b"])
    assert keys["mixer"]["a"] is None and keys["mixer"]["alone"]["cache_bytes"] < 0


def test_every_preset_as_a_and_as_b():
    names = preset_names()
    for a, b in zip(names, names[1:] + names[:1]):
        d = spec_diff(load_spec(a), load_spec(b), 4096)
        assert d.differences, (a, b)
        assert d.total.params == model_record(load_spec(b), 4096).params.total - \
            model_record(load_spec(a), 4096).params.total


def test_config_json_and_text_and_markdown(run_cli, tmp_path):
    from archscope.spec.hf import write_hf_config

    write_hf_config(load_spec("llama-3.2-3b"), tmp_path / "cfg")
    d = _json(run_cli, "llama-3.2-1b", tmp_path / "cfg" / "config.json")
    assert d["costs"]["b"]["params"] == model_record(load_spec("llama-3.2-3b")).params.total
    code, out, _ = run_cli("diff", "llama-3.2-1b", "llama-3.2-3b", "--set", "n_layers=2")
    table = out.split("key", 1)[1].split("total")[0]
    assert code == 0 and "n_layers" not in table and "B: llama-3.2-3b:n_layers=2" in out
    code, out, _ = run_cli("diff", "llama-3.2-1b", "mistral-7b-v0.1", "--format", "markdown")
    assert code == 0 and out.startswith("# llama-3.2-1b vs mistral-7b-v0.1")
    assert "| attention.window | absent | 4096 |" in out


@pytest.mark.parametrize("args, message", [
    (["no-such-model", "gpt2"], "no-such-model"),
    (["gpt2", "gpt2:n_layers=0"], "n_layers"),
])
def test_bad_models_exit_2(run_cli, args, message):
    code, out, err = run_cli("diff", *args)
    assert code == 2 and out == "" and message in err and "Traceback" not in err
