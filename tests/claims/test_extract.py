"""`archscope check-claims DOC.md`: claims found in markdown by themselves, a planted-error
document whose every mistake is found, model names, overrides and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archscope.claims.extract import extract_claims
from archscope.claims.extract.names import Resolver

PLANTED = Path(__file__).with_name("planted_errors.txt")
MAP = ("--model-map", "Our Model=llama-3.2-1b")


def _check(run_cli, *args):
    code, out, err = run_cli("check-claims", *map(str, args), "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _find(results, model, quantity, stated):
    hits = [r for r in results if r["model"] == model and r["quantity"] == quantity
            and r["stated"] == stated]
    assert len(hits) == 1, (model, quantity, stated, hits)
    return hits[0]


@pytest.mark.parametrize("model, quantity, stated, computed, cause", [
    ("llama-3.1-8b", "n_layers", "30", 32, ""),
    ("llama-3.2-3b", "group_size", "4:1", 3, ""),
    ("gpt2", "norm_position", "Post-Norm", "pre", ""),
    ("llama-3.2-3b", "kv_cache_bytes", "896 MB", 939524096, "MiB printed as MB"),
    ("mistral-7b-v0.1", "kv_cache_bytes", "1,073.7 MB", 536870912, "sliding window left out"),
    ("llama-3.2-3b", "params_total", "~3.6B", 3212749824, "a tied lm_head counted twice"),
    ("llama-3.2-3b", "weights_bytes", "~3.2GB", 12850999296, "1 byte per element"),
])
def test_every_planted_error_is_found(run_cli, model, quantity, stated, computed, cause):
    r = _find(_check(run_cli, PLANTED, *MAP), model, quantity, stated)
    assert r["verdict"] == "wrong" and r["computed"] == computed and cause in r["cause"], r
    assert r["text"] and r["document"] == PLANTED.name


def test_the_rest_agrees_or_is_unverifiable(run_cli):
    results = _check(run_cli, PLANTED, *MAP)
    wrong = [r for r in results if r["verdict"] == "wrong"]
    assert len(wrong) == 7, [(r["model"], r["quantity"], r["stated"]) for r in wrong]
    assert _find(results, "llama-3.2-1b", "params_total", "1.24B")["verdict"] == "agree"
    assert _find(results, "llama-3.2-3b", "kv_bytes_per_token", "114,688 bytes")["verdict"] == \
        "agree"
    flops = _find(results, "llama-3.1-8b", "decode_flops", "~15 GFLOPs")
    assert flops["verdict"] == "agree"
    gpt4 = [r for r in results if r["model"] == "GPT-4"]
    assert [r["verdict"] for r in gpt4] == ["unverifiable"] and "--model-map" in gpt4[0]["note"]
    assert "did you mean" in gpt4[0]["note"]  # the nearest preset name, for a misspelling
    for r in results:
        assert {"text", "model", "quantity", "stated", "computed", "verdict"} <= set(r)


def test_a_config_json_through_model_map(run_cli, tmp_path):
    from archscope.spec import load_spec
    from archscope.spec.hf import write_hf_config

    write_hf_config(load_spec("llama-3.2-1b"), tmp_path / "ours")
    results = _check(run_cli, PLANTED, "--model-map", f"Our Model={tmp_path / 'ours'}")
    r = [r for r in results if r["stated"] == "1.24B"][0]
    # checked against the file, labelled by the document's own name for it
    assert r["verdict"] == "agree" and r["model"] == "Our Model"
    assert not any(str(tmp_path) in r["model"] for r in results)


def test_transcriptions_override_what_is_found(run_cli, tmp_path):
    yaml = tmp_path / "planted.yaml"
    yaml.write_text(
        "- {id: t1, document: planted_errors.txt, section: Shapes, model: llama-3.1-8b,"
        " quantity: n_layers, stated: '30', note: 'transcribed'}\n"
        "- {id: t2, document: planted_errors.txt, section: Words, model: llama-3.2-3b,"
        " quantity: vocab_size, stated: '128,000', note: 'only in the transcription'}\n",
        encoding="utf-8")
    alone = _check(run_cli, PLANTED, *MAP)
    both = _check(run_cli, PLANTED, yaml, *MAP)
    layers = [r for r in both if r["model"] == "llama-3.1-8b" and r["quantity"] == "n_layers"]
    assert [r["id"] for r in layers] == ["t1"]  # the transcription's claim, once
    assert any(r["id"] == "t2" and r["verdict"] == "wrong" for r in both)
    assert len(both) == len(alone) + 1


@pytest.mark.parametrize("written, model", [
    ("Llama 3.2-1B-Instruct", "llama-3.2-1b"), ("GPT-2 (124M)", "gpt2"),
    ("GPT-3 (175B)", "gpt3-175b"), ("Mistral 7B", "mistral-7b-v0.1"),
    ("DeepSeek-V2 (236B)", "deepseek-v2"), ("Granite 3B", "granite-3b-code"),
    ("Llama 3.1", "llama-3.1-8b"), ("Qwen3-8B", "qwen3-8b"), ("gpt-oss-20b", "gpt-oss-20b"),
    ("GPT-4", None), ("GPT-style", "")])
def test_model_names(written, model):
    found = Resolver().mentions(written)
    assert (found[0][3] if found else "") == model


def test_a_family_word_is_the_documents_model_of_that_family():
    r = Resolver(default="llama-3.2-3b")
    assert r.only_model("Llama") == "llama-3.2-3b" and r.only_model("the 8B model") == \
        "llama-3.1-8b"


def test_nothing_is_claimed_from_prose_without_a_model_or_quantity():
    assert extract_claims("# Notes\n\nIt costs 5 GB and 3 GFLOPs.\n\n| a | b |\n|---|---|\n"
                          "| 1 | 2 |\n", "notes.md") == []


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "no such file"),
    (lambda p: p.write_bytes(b"\xff\xfe\x00bad"), "cannot read as UTF-8"),
])
def test_bad_documents_exit_2_naming_the_file(run_cli, tmp_path, make, message):
    path = tmp_path / "doc.md"
    make(path)
    code, out, err = run_cli("check-claims", str(path))
    assert code == 2 and out == "" and str(path) in err and message in err, err


def test_bad_model_map_exits_2(run_cli):
    code, out, err = run_cli("check-claims", str(PLANTED), "--model-map", "Ours")
    assert code == 2 and out == "" and "NAME=MODEL" in err
    code, _, err = run_cli("check-claims", str(PLANTED), "--model-map", "Ours=no-such-model")
    assert code == 2 and "neither a preset nor a file" in err
