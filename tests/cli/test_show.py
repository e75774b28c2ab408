"""`archscope show`: JSON contract and the per-component tables."""

import json

from archscope.estimate import count_params, kv_cache_bytes, structure
from archscope.spec import load_spec

from no_torch import assert_runs_without_torch


def test_json_contract_with_verify(run_cli):
    code, out, _ = run_cli("show", "llama-3.2-1b", "--verify", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["model"] == "llama-3.2-1b"
    assert data["spec"]["attention"]["n_kv_heads"] == 8
    assert data["params_total"] == data["params_active"] == data["params_counted"] == 1_235_814_400
    kv = data["details"]["kv_cache"]
    assert [g["elements_per_token"] for g in kv["groups"]] == [2 * 8 * 64]
    spec = load_spec("llama-3.2-1b")
    at = kv["at_lengths"][1]
    assert (at["seq_len"], at["bytes"], at["decompressed_bytes"], at["mha_bytes"]) == (
        4096, kv_cache_bytes(spec, 4096), kv_cache_bytes(spec, 4096),
        4 * kv_cache_bytes(spec, 4096))
    assert data["record"]["kv_cache_bytes"] == at["bytes"]
    shares = [row["percent"] for row in data["details"]["params_breakdown"]]
    assert abs(sum(shares) - 100) < 1e-9


def test_text_has_the_documents_tables(run_cli):
    code, out, _ = run_cli("show", "llama-3.2-1b", "--verify")
    assert code == 0
    for heading in ("Modules of layer 0-15", "Parameter breakdown", "KV cache (bf16, batch 1)",
                    "Decode FLOPs per token", "Weights", "Inference memory", "matches"):
        assert heading in out
    assert "self_attn.k_proj          Linear   weight[512, 2048]" in out


def test_show_accepts_an_hf_config(tmp_path, run_cli):
    from archscope.spec.hf import write_hf_config

    spec = load_spec("mistral-7b-v0.1")
    write_hf_config(spec, tmp_path)
    code, out, _ = run_cli("show", str(tmp_path), "--format", "json")
    assert code == 0 and json.loads(out)["params_total"] == count_params(spec).total


def test_show_text_never_imports_torch():
    """The module tables come from the spec (estimate/structure.py): text mode stays fast."""
    assert_runs_without_torch(["show", "deepseek-v2"], ["show", "qwen3-next-80b-a3b"])


def test_verify_exits_1_when_the_module_tables_differ(run_cli, monkeypatch):
    # the spec side names the FFN sublayer differently from the builder's `mlp`
    monkeypatch.setitem(structure.SUBLAYER_MODULES, "ffn", "feed_forward")
    code, out, err = run_cli("show", "llama-3.2-1b", "--verify")
    assert code == 1
    assert "feed_forward.gate_proj" in out  # what the spec side printed
    assert "error: module table of llama-3.2-1b: layer 0:" in err and "mlp.gate_proj" in err
