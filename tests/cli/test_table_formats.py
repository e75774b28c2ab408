"""Every command that prints a table takes --format text|json|markdown|csv (issue 36): the JSON
parses, the CSV parses with the csv module and holds the JSON's rows, the markdown holds a pipe
table whose numbers are the JSON's; and the text for people uses one byte family: kB/MB/GB/TB
by default, KiB/MiB/GiB/TiB with --units GiB.

Each command runs small (a 1B preset, a two-layer tiny model for profile and plan); the outputs
are compared with the JSON of the same command, never with numbers written here."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

FORMATS = ("text", "json", "markdown", "csv")
TINY = ("--set", "n_layers=2", "--set", "d_model=64", "--set", "attention.n_heads=4",
        "--set", "attention.n_kv_heads=2", "--set", "attention.head_dim=16",
        "--set", "ffn.d_ff=96", "--set", "vocab_size=96")
PROFILE = ("profile", "llama-3.2-1b", *TINY, "--prompt-len", "4", "--new-tokens", "3",
           "--repeats", "1", "--no-breakdown")
CLAIMS = str(Path(__file__).resolve().parents[1] / "claims" / "planted_errors.txt")
SLOW = pytest.mark.slow

# command -> (its arguments, the JSON's rows its CSV holds)
COMMANDS = {
    "list": (("list",), lambda j: j),
    "show": (("show", "llama-3.2-1b"), lambda j: [j["record"]]),  # the --seq-len row
    "fit": (("fit", "llama-3.2-1b", "--gpu", "h100-sxm"), lambda j: [j]),
    "fit-catalog": (("fit", "llama-3.2-1b"), lambda j: j),
    "hardware": (("hardware", "h100-sxm", "mi300x"), lambda j: j),
    "plan": (("plan", "llama-3.2-1b", *TINY, "--tp", "2"), lambda j: j["ranks"]),
    "profile": (PROFILE, lambda j: [j]),
    "diff": (("diff", "llama-3.2-1b", "llama-3.2-3b"), lambda j: j["differences"]),
    "check-claims": (("check-claims", CLAIMS), lambda j: j),
    "families": (("families",), lambda j: j["rows"]),
}
# torch or transformers' model mapping: seconds a run
SLOW_COMMANDS = {"profile", "families"}
# the commands that print byte sizes for people
SIZED = ("show", "fit", "hardware", "profile", "diff")


def _params(name: str):
    return [pytest.param(name, marks=SLOW) if name in SLOW_COMMANDS else name]


CASES = [p for name in COMMANDS for p in _params(name)]
_runs: dict = {}


@pytest.fixture
def run(run_cli):
    """(command name, --format, extra args) -> stdout; each run once per test session (profile's
    timings differ run to run: its CSV and JSON are compared on the keys that do not)."""
    def go(name: str, fmt: str, *extra: str) -> str:
        key = (name, fmt, extra)
        if key not in _runs:
            code, out, err = run_cli(*COMMANDS[name][0], "--format", fmt, *extra)
            assert code == 0, (name, fmt, err)
            _runs[key] = out
        return _runs[key]

    return go


def _flat(record: dict, prefix: str = "") -> dict:
    """What a CSV cell holds for each JSON value: dotted keys, lists as JSON text, str()."""
    out = {}
    for key, value in record.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = ("" if value is None else json.dumps(value)
                                 if isinstance(value, list) else str(value))
    return out


def _pipe_tables(markdown: str) -> list[list[dict]]:
    """Every GitHub pipe table in the text: a title row, a separator row (|---|:--|), rows."""
    lines, tables = markdown.splitlines(), []
    for k, line in enumerate(lines[1:], 1):
        if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line) and lines[k - 1].startswith("|"):
            cells = [[c.strip() for c in row.strip().strip("|").split("|")]
                     for row in [lines[k - 1]] + list(_rows_from(lines[k + 1:]))]
            assert all(len(c) == len(cells[0]) for c in cells), cells
            tables.append([dict(zip(cells[0], c)) for c in cells[1:]])
    return tables


def _rows_from(lines):
    for line in lines:
        if not line.startswith("|"):
            return
        yield line


def _number(cell: str) -> float:
    """'1,235.81' -> 1235.81; '1.24B' -> 1.24e9; '+96.00 MiB' -> 96.0 (the unit is checked
    apart)."""
    m = re.match(r"([+-]?[\d,]*\.?\d+)([KMBT]?)(?![A-Za-z])", cell)
    assert m, cell
    return float(m[1].replace(",", "")) * {"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m[2]]


def _close(shown: float, exact: float, digits_of: str) -> bool:
    """A shown number agrees with the exact one to the rounding it was printed with (3
    significant digits for B/M/K, else the decimals shown)."""
    if re.search(r"\d[KMBT]\b", digits_of):
        return abs(shown - exact) <= 0.005 * abs(exact)
    decimals = len(digits_of.split(".")[1].split()[0]) if "." in digits_of else 0
    return abs(shown - exact) <= 0.5 * 10 ** -decimals + 1e-9


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_table_command_takes_the_four_formats(run, name, fmt):
    out = run(name, fmt)
    assert out.strip()
    if fmt == "json":
        json.loads(out)
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert rows and all(None not in r for r in rows)  # no row longer than the titles
    elif fmt == "markdown":
        assert _pipe_tables(out), out
    else:
        assert not _pipe_tables(out)


@pytest.mark.parametrize("name", CASES)
def test_the_csv_holds_the_json_rows(run, name):
    rows = list(csv.DictReader(io.StringIO(run(name, "csv"))))
    want = [_flat(r) for r in COMMANDS[name][1](json.loads(run(name, "json")))]
    if name == "profile":  # timings differ between two runs: the sizes and settings do not
        keys = [k for k in want[0] if k.endswith(("_bytes_estimated", "_len", "batch", "dtype"))]
        assert keys and {k: rows[0][k] for k in keys} == {k: want[0][k] for k in keys}
        assert set(rows[0]) == set(want[0])
    elif name == "show":  # one row per context length; the --seq-len one is the JSON's record
        assert [r for r in rows if r["seq_len"] == want[0]["seq_len"]] == want
        assert len(rows) > 1
    elif name == "diff":  # then the total A -> B
        assert rows[:-1] == [{**dict.fromkeys(rows[0], ""), **w} for w in want]
        total = json.loads(run(name, "json"))["costs"]["total"]
        assert rows[-1]["alone.params"] == str(total["params"])
    else:
        assert rows == [{**dict.fromkeys(rows[0], ""), **w} for w in want]


def test_list_markdown_has_each_presets_parameters(run):
    table = _pipe_tables(run("list", "markdown"))[0]
    for row, record in zip(table, json.loads(run("list", "json")), strict=True):
        assert row["model"] == record["model"]
        assert _close(_number(row["params"]), record["params_total"], row["params"])
        assert _close(_number(row["active"]), record["params_active"], row["active"])


def test_show_markdown_has_the_json_numbers_under_headings(run):
    out, record = run("show", "markdown"), json.loads(run("show", "json"))
    details = record["details"]
    assert "### Weights" in out and "### Inference memory" in out
    tables = _pipe_tables(out)
    weights = next(t for t in tables if "dtype" in t[0])
    assert {r["dtype"]: int(r["bytes"].replace(",", "")) for r in weights} == \
        details["weights_bytes"]
    kv = next(t for t in tables if "seq_len" in t[0] and "bytes" in t[0])
    assert [int(r["bytes"].replace(",", "")) for r in kv] == \
        [r["bytes"] for r in details["kv_cache"]["at_lengths"]]
    for row, at in zip(kv, details["kv_cache"]["at_lengths"]):
        assert _close(_number(row["MB"]), at["bytes"] / 1e6, row["MB"])


def test_fit_markdown_has_the_json_numbers(run):
    out, record = run("fit", "markdown"), json.loads(run("fit", "json"))
    cells = {r["quantity"]: r["value"] for r in _pipe_tables(out)[0]}
    weights = cells["weights per GPU"]
    assert weights.endswith("GB)") and _close(_number(weights), record["weights_bytes_per_gpu"]
                                              / 1e9, weights.split(" of ")[0])
    assert cells["concurrent sequences"].startswith(f"{record['max_concurrent_sequences']:,} ")
    catalog = _pipe_tables(run("fit-catalog", "markdown"))[0]
    shown = {(r["gpu"], f): r[f] for r in catalog for f in r if f != "gpu"}
    assert shown == {(c["gpu"], c["weight_format"]): f"{c['min_gpus']}x" if c["min_gpus"]
                     else "-" for c in json.loads(run("fit-catalog", "json"))}


def test_hardware_markdown_has_the_json_numbers(run):
    table = _pipe_tables(run("hardware", "markdown"))[0]
    for row, part in zip(table, json.loads(run("hardware", "json")), strict=True):
        assert row["name"] == part["name"]
        assert _close(_number(row["memory GB"]), part["memory_bytes"] / 1e9, row["memory GB"])
        assert _close(_number(row["bandwidth GB/s"]), part["memory_bandwidth_bytes_per_s"] / 1e9,
                      row["bandwidth GB/s"])


def test_plan_markdown_has_each_ranks_figures(run):
    table = _pipe_tables(run("plan", "markdown"))[0]
    ranks = json.loads(run("plan", "json"))["ranks"]
    assert {(int(r["rank"]), r["figure"]): int(r["planned"].replace(",", "")) for r in table} \
        == {(r["rank"], k): r[k + "_planned"] for r in ranks
            for k in ("params", "collective_bytes_per_step")}


@SLOW
def test_profile_markdown_has_the_estimated_sizes(run):
    memory = next(t for t in _pipe_tables(run("profile", "markdown")) if "estimated" in t[0])
    record = json.loads(run("profile", "json"))
    weights = memory[0]["estimated"]
    assert weights.endswith(" MB")
    assert _close(_number(weights), record["weights_bytes_estimated"] / 1e6, weights)


def test_diff_markdown_has_what_each_difference_costs(run):
    table = _pipe_tables(run("diff", "markdown"))[0]
    differences = json.loads(run("diff", "json"))["differences"]
    for row, d in zip(table, differences):
        assert row["key"] == d["key"]
        shown = row["params alone"]
        assert _close(_number(shown), d["alone"]["params"], shown)


def test_check_claims_markdown_counts_every_claim(run):
    summary = _pipe_tables(run("check-claims", "markdown"))[0]  # each document, then the total
    assert [int(r["claims"]) for r in summary][-1] == len(json.loads(run("check-claims", "json")))


# A byte unit as printed for people: a number, a space, the unit ('80GB' in a product name is
# not one). The families: what each --units allows.
UNIT = re.compile(r"\d \+?([kKMGT]i?B)\b")
FAMILY = {"GB": {"kB", "MB", "GB", "TB"}, "GiB": {"KiB", "MiB", "GiB", "TiB"}}


def _people_part(name: str, text: str) -> str:
    """hardware's source notes quote their datasheets as written: the table and its footnote."""
    return re.split(r"\n(?:  |- )\[1\] ", text)[0] if name == "hardware" else text


@pytest.mark.parametrize("name", [p for n in SIZED for p in _params(n)])
@pytest.mark.parametrize("units", ["GB", "GiB"])
def test_human_output_uses_one_unit_family(run, name, units):
    for fmt in ("text", "markdown"):
        out = run(name, fmt, *(("--units", units) if units != "GB" else ()))
        text = _people_part(name, out)
        titles = set(re.findall(r"\b([kKMGT]i?B)(?:/s)?\b(?=[ )|]|$)", text, re.M))
        found = set(UNIT.findall(text)) | titles
        assert found, (name, fmt, units)  # the command does print sizes
        assert found <= FAMILY[units], (name, fmt, units, found - FAMILY[units])
        note = "GB = 10^9 bytes" if units == "GB" else "GiB = 2^30 bytes"
        assert note in text, (name, fmt)


def test_units_gib_prints_the_same_bytes_in_binary_units(run):
    """show's Weights sizes in GiB are the JSON's bytes / 2^30."""
    weights = json.loads(run("show", "json"))["details"]["weights_bytes"]
    table = next(t for t in _pipe_tables(run("show", "markdown", "--units", "GiB"))
                 if "dtype" in t[0])
    for row in table:
        assert row["size"].endswith(" GiB")
        assert _close(_number(row["size"]), weights[row["dtype"]] / 2**30, row["size"])
