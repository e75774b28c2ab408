"""`archscope compare`'s views for people: the default table fits 120 columns, --columns picks
exactly the columns named (text, markdown and CSV; never JSON), sizes in one unit family, and
every number printed is the JSON's, read back from the text."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from archscope.report.terminal import compare, compare_fit

DECIMAL = {"kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
BINARY = {"KiB": 2.0 ** 10, "MiB": 2.0 ** 20, "GiB": 2.0 ** 30, "TiB": 2.0 ** 40}
SUFFIX = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12, "P": 1e15}
COLUMNS = {c.name: c for c in compare_fit.COLUMNS}


def _table(out: str) -> tuple[list[str], list[list[str]]]:
    """The text table's titles and rows (cells are two or more spaces apart)."""
    lines = out.split("\n\n")[0].splitlines()
    split = [re.split(r" {2,}", line.strip()) for line in lines]
    assert all(len(row) == len(split[0]) for row in split), out
    return split[0], split[1:]


def _unit(title: str) -> float | None:
    """Bytes per unit of a size column's title ('KV cache (MB)'); None for another column."""
    m = re.search(r"\((\w+)\)$", title)
    return m and {**DECIMAL, **BINARY}.get(m[1])


def _check_number(cell: str, value, title: str) -> None:
    """The cell is the JSON value as printed: within half its last digit, or within 0.5% for a
    B/M/K/T suffix (three significant digits)."""
    if isinstance(value, bool):
        assert cell == ("yes" if value else "no"), (title, cell, value)
        return
    if value is None:  # a setup that cannot load has no speed
        assert cell == "—", (title, cell)
        return
    text = cell.replace(",", "")
    if text[-1] in SUFFIX:
        assert abs(float(text[:-1]) * SUFFIX[text[-1]] - value) <= 0.005 * value, (title, cell)
        return
    digits = len(text.split(".")[1]) if "." in text else 0
    error = abs(float(text) - value / (_unit(title) or 1))
    assert error <= 0.5001 * 10 ** -digits, (title, cell, value)


def _agrees_with_json(run_cli, args: list[str]) -> list[str]:
    """Every cell of the text view is its JSON value; returns the names of the columns shown."""
    code, out, err = run_cli("compare", *args)
    assert code == 0, err
    records = json.loads(run_cli("compare", *args, "--format", "json")[1])
    titles, rows = _table(out)
    by_title = {c.cells(records)[0]: c for c in COLUMNS.values()}
    assert [r[0].removesuffix(" *") for r in rows] == [r["model"] for r in records]
    for row, record in zip(rows, records):
        for title, cell in zip(titles[1:], row[1:]):
            column = by_title[title]
            value = column.value(record)
            if column.name == "attention":
                assert cell == value
            elif column.name != "counted":
                _check_number(cell, value, title)
    return [by_title[t].name for t in titles]


@pytest.mark.parametrize("args", [[], ["--gpu", "h100-sxm"]], ids=["compare", "gpu"])
def test_the_default_view_fits_120_columns_and_is_the_json(run_cli, args):
    code, out, _ = run_cli("compare", *args)
    assert code == 0
    assert max(map(len, out.splitlines())) <= 120
    shown = _agrees_with_json(run_cli, args)
    default = compare_fit.DEFAULT if args else compare.DEFAULT
    first = {"model", "params", "active", "kv", "weights", "flops"} if not args else \
        {"model", "fits", "max-context", "sequences", "ttft", "tpot", "tok-s"}
    assert first <= set(shown) <= set(default)


@pytest.mark.parametrize("units, family", [("GB", DECIMAL), ("GiB", BINARY)])
def test_one_unit_family_named_in_the_titles(run_cli, units, family):
    args = ["llama-3.1-8b", "falcon-h1-7b", "gpt2", "--gpu", "h100-sxm", "--columns", "all",
            "--units", units]
    _agrees_with_json(run_cli, args)
    out = run_cli("compare", *args)[1]
    titles = _table(out)[0]
    sizes = [t for t in titles if _unit(t)]
    assert len(sizes) >= 6 and all(_unit(t) in family.values() for t in sizes), titles
    other = BINARY if family is DECIMAL else DECIMAL
    assert not re.search(r"\b(%s)\b" % "|".join(other), out)
    assert ("GB = 10^9 bytes" if family is DECIMAL else "GiB = 2^30 bytes") in out


@pytest.mark.parametrize("names", [["kv", "flops"], ["tpot", "weights", "params"], ["model"],
                                   ["state", "fits"]])
def test_columns_picks_exactly_those(run_cli, names):
    models = ["llama-3.2-1b", "qwen3-8b"]  # no hybrid: a named state column shows anyway
    args = [*models, "--gpu", "h100-sxm", "--columns", ",".join(names)]
    want = ["model"] + [n for n in names if n != "model"]
    assert _agrees_with_json(run_cli, args) == want
    records = json.loads(run_cli("compare", *args, "--format", "json")[1])
    titles = [COLUMNS[n].cells(records)[0] for n in want]
    code, out, _ = run_cli("compare", *args, "--format", "markdown")
    header = [c.strip() for c in out.splitlines()[0].strip("|").split("|")]
    assert code == 0 and header == titles
    code, out, _ = run_cli("compare", *args, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == [COLUMNS[n].csv_key() for n in want]
    assert [r["model"] for r in rows] == models
    for row, record in zip(rows, records):  # CSV keeps the JSON's own values
        for n in want[1:]:
            assert row[COLUMNS[n].csv_key()] == str(COLUMNS[n].value(record))
    code, out, _ = run_cli("compare", *args, "--format", "json")
    assert json.loads(out) == records and "prefill_flops" in records[0]  # JSON: every key


def test_markdown_and_csv_hold_every_column_unless_asked(run_cli):
    args = ["llama-3.2-1b", "falcon-h1-7b"]
    records = json.loads(run_cli("compare", *args, "--format", "json")[1])
    out = run_cli("compare", *args, "--format", "markdown")[1]
    header = [c.strip() for c in out.splitlines()[0].strip("|").split("|")]
    every = [c for c in compare.COLUMNS if c.name != "counted"]  # counted: --verify's
    assert header == [c.cells(records)[0] for c in every]
    assert run_cli("compare", *args, "--format", "markdown", "--columns", "all")[1] == out
    csv_all = run_cli("compare", *args, "--format", "csv")[1]
    assert csv_all.splitlines()[0].split(",") == list(records[0])
    assert run_cli("compare", *args, "--format", "csv", "--columns", "all")[1] == csv_all
    assert run_cli("compare", *args, "--format", "csv", "--columns", "kv,all")[1] == csv_all
    text = run_cli("compare", *args, "--columns", "all")[1]
    assert run_cli("compare", *args, "--columns", "all,kv")[1] == text


@pytest.mark.parametrize("args, words", [
    (["--columns", "kv,nosuch"], "'nosuch' is no column: one of model, params"),
    (["--columns", "ttft"], "'ttft' is a column of --gpu only"),
    (["--gpu", "h100-sxm", "--columns", "bogus"], "ttft, tpot, tok-s, or all"),
])
def test_an_unknown_column_is_a_usage_error_listing_the_names(run_cli, args, words):
    code, out, err = run_cli("compare", "gpt2", *args)
    assert code == 2 and out == "" and "--columns" in err and words in err
    assert "Traceback" not in err
