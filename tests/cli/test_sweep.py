"""`archscope sweep`: every variant equals `compare --set` of it, invalid combinations are
listed with the validation's key and reason, the csv/json shapes, the plot, and no torch."""

import csv
import io
import json
import re

import pytest

from no_torch import assert_runs_without_torch

GRID = ("--grid", "attention.n_kv_heads=1,3,8", "--grid", "n_layers=2,4",
        "--grid", "ffn.d_ff=512,1024")


def _sweep(run_cli, *args):
    code, out, err = run_cli("sweep", "llama-3.2-1b", *GRID, "--seq-len", "2048", *args)
    assert code == 0, err
    return out, err


def test_every_variant_is_compare_with_its_overrides(run_cli):
    out, _ = _sweep(run_cli, "--format", "json")
    result = json.loads(out)
    assert len(result["rows"]) == 2 * 2 * 2  # n_kv_heads=3 does not divide 32 heads
    for row in result["rows"]:
        sets = [f"{k}={row[k]}" for k in ("attention.n_kv_heads", "n_layers", "ffn.d_ff")]
        args = [a for s in sets for a in ("--set", s)]
        code, cmp_out, err = run_cli("compare", "llama-3.2-1b", *args, "--seq-len", "2048",
                                     "--format", "json")
        assert code == 0, err
        expected = json.loads(cmp_out)[0]
        del expected["overrides"]
        expected["model"] = "llama-3.2-1b"  # compare labels a what-if; sweep has grid columns
        assert {k: v for k, v in row.items() if "." not in k and k != "n_layers"} == expected


def test_invalid_combinations_carry_the_validation_key_and_reason(run_cli):
    out, _ = _sweep(run_cli, "--format", "json")
    invalid = json.loads(out)["invalid"]
    assert len(invalid) == 4
    assert {tuple(sorted(b["values"].items())) for b in invalid} == {
        (("attention.n_kv_heads", 3), ("ffn.d_ff", f), ("n_layers", n))
        for f in (512, 1024) for n in (2, 4)}
    code, _, err = run_cli("compare", "llama-3.2-1b", "--set", "attention.n_kv_heads=3")
    assert code == 2
    for bad in invalid:
        assert bad["key"] == "attention.n_kv_heads"
        assert err.strip() == f"error: llama-3.2-1b: overrides: {bad['key']}: {bad['reason']}"
    text, _ = _sweep(run_cli)
    assert "invalid combinations (4):" in text
    assert "attention.n_kv_heads=3, n_layers=2, ffn.d_ff=512: attention.n_kv_heads:" in text


def test_json_shape(run_cli):
    result = json.loads(_sweep(run_cli, "--format", "json")[0])
    assert set(result) == {"model", "seq_len", "grid", "rows", "invalid"}
    assert result["grid"] == {"attention.n_kv_heads": [1, 3, 8], "n_layers": [2, 4],
                              "ffn.d_ff": [512, 1024]}
    assert result["model"] == "llama-3.2-1b" and result["seq_len"] == 2048


def test_csv_rows_have_grid_columns_then_compare_keys(run_cli):
    out, err = _sweep(run_cli, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 8
    header = out.splitlines()[0].split(",")
    assert header[:3] == ["attention.n_kv_heads", "n_layers", "ffn.d_ff"]
    _, cmp_out, _ = run_cli("compare", "llama-3.2-1b", "--format", "json")
    assert header[3:] == list(json.loads(cmp_out)[0])
    assert err.count("invalid: attention.n_kv_heads=3") == 4  # stderr: stdout stays one table


@pytest.mark.parametrize("fmt", ["csv", "json", "text"])
def test_plot_writes_a_png_and_says_where_on_stderr(run_cli, tmp_path, fmt):
    png = tmp_path / "front.png"
    out, err = _sweep(run_cli, "--plot", "kv_cache_bytes,-params_total", "--out", str(png),
                      "--format", fmt)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    wrote = [line for line in err.splitlines() if line.startswith("wrote ")]
    assert wrote == [f"wrote {png}: -params_total against kv_cache_bytes, 8 variants"]
    assert out == _sweep(run_cli, "--format", fmt)[0]  # stdout: the same table, CSV or JSON


def test_units_pick_the_tables_family(run_cli):
    family = {"GB": ("kB", "MB", "GB", "TB"), "GiB": ("KiB", "MiB", "GiB", "TiB")}
    for units, other in (("GB", "GiB"), ("GiB", "GB")):
        out, _ = _sweep(run_cli, "--units", units)
        titled = set(re.findall(r"\((\w+)\)", out.splitlines()[2]))  # the header line
        assert titled & set(family[units]), out
        assert not re.search(r"\b(%s)\b" % "|".join(family[other]), out)


@pytest.mark.parametrize("args, message", [
    (("--plot", "kv_cache_bytes,attention", "--out", "x.png"), "not a numeric column"),
    (("--plot", "kv_cache_bytes,params_total"), "go together"),
    (("--grid", "n_layers=2"), "given twice"),
])
def test_bad_plot_or_grid_is_refused(run_cli, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("sweep", "llama-3.2-1b", "--grid", "n_layers=2,4", *args)
    assert code == 2 and message in err and out == ""
    assert not (tmp_path / "x.png").exists()


def test_pareto_front_minimises_or_maximises():
    from archscope.estimate.sweep import pareto

    rows = [{"a": 1, "b": 5}, {"a": 2, "b": 3}, {"a": 3, "b": 4}, {"a": 4, "b": 1}]
    assert pareto(rows, "a", "b") == [0, 1, 3]
    assert pareto(rows, "a", "-b") == [0]


def test_sweep_never_imports_torch():
    assert_runs_without_torch(['sweep', 'llama-3.2-1b', '--grid', 'n_layers=2,4', '--format',
                               'json'])
