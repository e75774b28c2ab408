"""Every number `show`, `compare`, `report` and the claims checker print comes from one record.

For every preset, at bf16, fp8, int8 and int4 weights and at three context lengths, the
quantities each surface prints are built through that surface's own code path and compared
with `model_record` under the same conventions: they must agree exactly.
"""

from __future__ import annotations

import json

import pytest

from archscope.claims.quantities import get_quantity
from archscope.estimate import model_record
from archscope.spec import load_spec, preset_names

DTYPES = ("bf16", "fp8", "int8", "int4")
CONTEXTS = (1024, 4096, 32768)
PRESETS = preset_names()


def _claim(name: str, spec, **conditions):
    return get_quantity(name).fn(spec, **conditions)


@pytest.fixture(scope="module")
def compared():
    """compare --format json over every preset, per (dtype, context)."""
    from click.testing import CliRunner

    from archscope.cli import cli

    out = {}
    for dtype in DTYPES:
        for n in CONTEXTS:
            result = CliRunner().invoke(cli, ["compare", "--format", "json", "--dtype", dtype,
                                              "--seq-len", str(n)])
            assert result.exit_code == 0, result.output
            out[dtype, n] = {row["model"]: row for row in json.loads(result.output)}
    return out


@pytest.mark.parametrize("name", PRESETS)
def test_show_compare_and_claims_read_one_record(name, compared):
    from click.testing import CliRunner

    from archscope.cli import cli

    spec = load_spec(name)
    for dtype in DTYPES:
        for n in CONTEXTS:
            record = model_record(spec, n, weight_format=dtype)
            at = record.at(n)
            row = compared[dtype, n][name]
            assert row == record.row(n)
            shown = json.loads(CliRunner().invoke(
                cli, ["show", name, "--format", "json", "--dtype", dtype, "--seq-len", str(n)]
            ).output)
            assert shown["record"] == row  # the same element compare prints
            kv = {r["seq_len"]: r for r in shown["details"]["kv_cache"]["at_lengths"]}[n]
            mem = {r["seq_len"]: r for r in shown["details"]["inference_memory"]}[n]
            flops = {r["context"]: r for r in shown["details"]["decode_flops"]}[n]
            assert kv["bytes"] == row["kv_cache_bytes"] == mem["kv_cache"]
            assert mem["total"] == row["inference_memory_bytes"]
            assert mem["weights"] == row["weights_bytes"] == shown["details"]["weights_bytes"][
                row["dtype"]]
            assert flops["total"] == row["flops_per_token"]
            # The cache is kept in the compute dtype whatever the weight format.
            assert row["kv_dtype"] == "bf16" == shown["details"]["kv_cache"]["dtype"]
            cache_dtype = row["kv_dtype"]
            assert _claim("kv_cache_bytes", spec, seq_len=n, dtype=cache_dtype) == kv["bytes"]
            assert _claim("weights_bytes", spec, dtype=dtype) == row["weights_bytes"]
            assert _claim("decode_flops", spec, context=n) == row["flops_per_token"]
            assert _claim("prefill_flops", spec, seq_len=n) == row["prefill_flops"]
            assert _claim("params_total", spec) == row["params_total"]
            assert _claim("params_active", spec) == row["params_active"]


def test_the_report_reads_the_same_record(compared):
    """The report prices in fp16: its numbers equal `compare --dtype fp16`'s at its contexts."""
    from click.testing import CliRunner

    from archscope.cli import cli
    from archscope.report.pages.build import dive_record, model_records
    from archscope.report.costs import TABLE_LENGTHS

    specs = [load_spec(name) for name in PRESETS]
    records = {r["name"]: r for r in model_records(specs)}
    for n_index, n in enumerate(TABLE_LENGTHS):
        result = CliRunner().invoke(cli, ["compare", "--format", "json", "--dtype", "fp16",
                                          "--seq-len", str(n)])
        for row in json.loads(result.output):
            page = records[row["model"]]
            assert page["kv_cache"][n_index]["bytes"] == row["kv_cache_bytes"]
            assert page["decode_flops"][n_index]["total"] == row["flops_per_token"]
            assert page["prefill_flops"][n_index]["total"] == row["prefill_flops"]
            assert page["params"]["total"] == row["params_total"]
            assert page["weights_bytes"]["fp16"] == row["weights_bytes"]
    spec = load_spec("deepseek-v2")
    dive = dive_record(spec, {})
    row = compared["bf16", 4096]["deepseek-v2"]
    at = {r["seq_len"]: r for r in dive["inference_memory"]}[4096]
    assert at["kv_cache"] == row["kv_cache_bytes"]  # fp16 and bf16 are both 2 bytes
    assert {r["context"]: r for r in dive["decode_flops"]}[4096]["total"] == row["flops_per_token"]


def test_one_stated_mha_equivalent():
    """DeepSeek-V2's MHA-equivalent cache is stated once: 128 heads x (192 key + 128 value)."""
    from archscope.report.pages.build import model_records

    spec = load_spec("deepseek-v2")
    page = model_records([spec])[0]
    claim = _claim("kv_elements_per_token_mha", spec)
    record = model_record(spec, 4096)
    assert claim == page["attention"][0]["mha_elements_per_token"] == 40_960
    assert record.cache_groups[0].mha_elements_per_token == 40_960
