"""The shared options of the analytic commands: --format text = table, --dtype's values and
messages, compare's per-model what-ifs (MODEL:KEY=VALUE) and their labels, and an error in one
of several models naming that model."""

from __future__ import annotations

import json

import pytest

from archscope.api import model_label, split_model_overrides
from archscope.errors import InputError


def _bad(result, *needles):
    code, out, err = result
    assert code == 2, (code, out, err)
    assert out == "" and "Traceback" not in err and len(err.strip()) < 400, err
    for needle in needles:
        assert needle in err, err
    return err


# -- --format: text and table are the same view ---------------------------------------------------

@pytest.mark.parametrize("command", [["show", "gpt2"], ["compare", "gpt2", "llama-3.2-1b"]])
def test_text_and_table_print_the_same(run_cli, command):
    code, text, _ = run_cli(*command, "--format", "text")
    assert code == 0
    assert run_cli(*command, "--format", "table") == (0, text, "")
    assert text == run_cli(*command)[1]  # the default view


def test_a_format_a_command_lacks_is_usage_error(run_cli):
    # every table command has text, json, markdown and csv (issue 36): none has yaml
    err = _bad(run_cli("show", "gpt2", "--format", "yaml"), "--format", "'yaml'")
    assert "text" in err and "table" in err


# -- --dtype ------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["show", "compare"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "fp8", "int8", "int4"])
def test_analytic_commands_take_every_format(run_cli, command, dtype):
    code, out, err = run_cli(command, "gpt2", "--dtype", dtype, "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    # the weight format's canonical name: int4 is int4-g128 everywhere (spec/weight_formats.py)
    assert (data["record"] if command == "show" else data[0])["dtype"] == \
        {"int4": "int4-g128"}.get(dtype, dtype)


@pytest.mark.parametrize("command", ["show", "compare"])
def test_analytic_commands_read_torch_names_and_refuse_the_rest(run_cli, command):
    code, out, _ = run_cli(command, "gpt2", "--dtype", "bfloat16", "--kv-dtype", "half",
                           "--format", "json")
    record = json.loads(out)["record"] if command == "show" else json.loads(out)[0]
    assert code == 0 and (record["dtype"], record["kv_dtype"]) == ("bf16", "fp16")
    _bad(run_cli(command, "gpt2", "--dtype", "fp64"), "unknown weight format 'fp64'",
         "known: bf16, fp16, fp32, fp8, fp8-block")
    _bad(run_cli(command, "gpt2", "--kv-dtype", "fp7"), "unknown dtype 'fp7'", "--kv-dtype")


# -- compare MODEL:KEY=VALUE ----------------------------------------------------------------------

@pytest.mark.parametrize("arg, parsed", [
    ("llama-3.2-1b", ("llama-3.2-1b", [])),
    ("llama-3.2-1b:attention.n_kv_heads=32", ("llama-3.2-1b", ["attention.n_kv_heads=32"])),
    ("gpt2:n_layers=2,d_model=512", ("gpt2", ["n_layers=2", "d_model=512"])),
    ("dir:with:colons/spec.yaml:n_layers=2", ("dir:with:colons/spec.yaml", ["n_layers=2"])),
    ("odd=name.yaml", ("odd=name.yaml", [])),  # no ':' before the first '='
    ("a/b:c.yaml", ("a/b:c.yaml", [])),  # no '=' at all
])
def test_model_arguments_split_on_the_last_colon_before_the_first_equals(arg, parsed):
    assert split_model_overrides(arg) == parsed


def test_an_empty_model_before_the_overrides_is_refused():
    with pytest.raises(InputError, match="MODEL:KEY=VALUE"):
        split_model_overrides(":n_layers=2")


def test_a_model_with_its_own_what_if_beside_the_preset(run_cli):
    code, out, _ = run_cli("compare", "llama-3.2-1b", "llama-3.2-1b:attention.n_kv_heads=32",
                           "--format", "json")
    assert code == 0
    gqa, mha = json.loads(out)
    assert gqa["model"] == "llama-3.2-1b" and "overrides" not in gqa  # as ModelRecord.row
    assert (mha["model"], mha["overrides"]) == ("llama-3.2-1b:attention.n_kv_heads=32",
                                                ["attention.n_kv_heads=32"])
    assert mha["kv_cache_bytes"] == 4 * gqa["kv_cache_bytes"]
    code, table, _ = run_cli("compare", "llama-3.2-1b", "llama-3.2-1b:attention.n_kv_heads=32")
    rows = table.splitlines()
    assert rows[1].startswith("llama-3.2-1b ")
    assert rows[2].startswith("llama-3.2-1b:attention.n_kv_heads=32 ")


def test_global_set_comes_first_and_labels_the_row(run_cli):
    code, out, _ = run_cli("compare", "llama-3.2-1b", "gpt2:n_layers=4", "--set", "n_layers=2",
                           "--format", "json")
    assert code == 0
    llama, gpt2 = json.loads(out)
    assert (llama["model"], llama["overrides"]) == ("llama-3.2-1b:n_layers=2", ["n_layers=2"])
    assert (gpt2["model"], gpt2["overrides"]) == ("gpt2:n_layers=2,n_layers=4",
                                                  ["n_layers=2", "n_layers=4"])
    single = json.loads(run_cli("compare", "gpt2:n_layers=4", "--format", "json")[1])[0]
    assert gpt2["params_total"] == single["params_total"]  # the model's own value wins


def test_the_csv_carries_the_label(run_cli):
    code, out, _ = run_cli("compare", "gpt2:n_layers=2", "gpt2:n_layers=3,ffn.d_ff=1024",
                           "--format", "csv")
    header, first, second = out.splitlines()
    assert code == 0 and header.startswith("model,") and "overrides" not in header
    assert first.startswith("gpt2:n_layers=2,")
    assert second.startswith('"gpt2:n_layers=3,ffn.d_ff=1024",')  # quoted: it holds a comma


def test_show_labels_its_record_as_compare_does(run_cli):
    code, out, _ = run_cli("show", "gpt2", "--set", "n_layers=2", "--format", "json")
    shown = json.loads(out)
    compared = json.loads(run_cli("compare", "gpt2:n_layers=2", "--format", "json")[1])[0]
    assert code == 0 and shown["model"] == "gpt2"
    assert shown["record"] == compared
    assert compared["model"] == "gpt2:n_layers=2" and compared["overrides"] == ["n_layers=2"]


def test_labels():
    assert model_label("gpt2", []) == "gpt2"
    assert model_label("gpt2", ["a=1", "b=2"]) == "gpt2:a=1,b=2"


# -- an error in one of several models names it -------------------------------------------------

def test_an_override_one_model_rejects_names_that_model(run_cli):
    err = _bad(run_cli("compare", "llama-3.2-1b", "gpt2", "--set", "attention.window=8192"),
               "error: gpt2: ", "attention.window", "8192")
    assert err.count("\n") == 1


def test_a_per_model_override_error_names_the_argument(run_cli):
    _bad(run_cli("compare", "gpt2", "llama-3.2-1b:attention.n_kv_heads=7"),
         "error: llama-3.2-1b:attention.n_kv_heads=7: ", "must be a multiple")


def test_an_unknown_model_is_named_once(run_cli):
    code, _, err = run_cli("compare", "gpt2", "nosuchmodel:n_layers=2")
    assert code == 2 and err.startswith("error: nosuchmodel: unknown model")
