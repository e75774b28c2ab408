"""`report --data` with deep or mistyped JSON (issue 35): a RecursionError, a TypeError or a
ValueError from a format string, or a record tabulated as nonsense, became one message naming
the file (and the record, column or key) before anything is written."""

from __future__ import annotations

import json

import pytest

from archscope.spec import limits
from hostile import refused

GOOD = {"model": "llama-3.2-1b", "device": "cpu", "dtype": "fp32", "prefill_ms": 12.5,
        "decode_tokens_per_s": 40.0, "batch": 1}


def report(run_cli, tmp_path, data, *words):
    refused(run_cli, "report", "--out", tmp_path / "out", "--data", data, "--claims",
            tmp_path / "no-claims", words=words, seconds=20)
    assert not (tmp_path / "out").exists()  # nothing half-written


def data_folder(tmp_path, files: dict) -> str:
    folder = tmp_path / "data"
    for name, body in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(body if isinstance(body, str) else json.dumps(body))
    return str(folder)


def test_deep_json_is_refused_before_it_is_parsed(tmp_path, run_cli):
    folder = data_folder(tmp_path, {"p.json": "[" * 100_000 + "]" * 100_000})
    report(run_cli, tmp_path, folder, "p.json", "nested deeper than 64 levels")


@pytest.mark.parametrize("record, words", [
    ({**GOOD, "prefill_ms": "fast"}, ("prefill_ms: expected a number, got 'fast'",)),
    ({**GOOD, "batch": [1]}, ("batch: expected a number, got [1]",)),
    ({**GOOD, "peak_memory_bytes": "lots"}, ("peak_memory_bytes: expected a number",)),
    ({**GOOD, "dtype": 16}, ("dtype: expected a string, got 16",)),
    ({**GOOD, "model": 5}, ("model: expected a string, got 5",)),
    ({**GOOD, "device": None}, ("device: expected a string, got None",)),
    ({**GOOD, "overrides": "n_layers=2"}, ("overrides: expected a list",)),
])
def test_a_mistyped_profile_record_names_its_file(record, words, tmp_path, run_cli):
    folder = data_folder(tmp_path, {"profile-x.json": record})
    report(run_cli, tmp_path, folder, "profile-x.json", *words)


def test_a_record_in_a_list_is_named_by_its_index(tmp_path, run_cli):
    folder = data_folder(tmp_path, {"runs.json": [GOOD, {**GOOD, "prefill_ms": "fast"}]})
    report(run_cli, tmp_path, folder, "runs.json[1]", "prefill_ms: expected a number")


@pytest.mark.parametrize("name, body", [
    ("quantized_decode-x.json", {"formats": [{"format": "int8", "tokens_per_s": "fast"}]}),
    ("decode_vs_hf-x.json", {"results": [{"case": "b1", "ratios": "fast"}]}),
    ("compare_speed-x.json", {"models": 3}),
    ("cpu_linear-x.json", {"results": [{"phase": "decode", "ratio": [2]}]}),
])
def test_a_mistyped_benchmark_file_names_its_file(name, body, tmp_path, run_cli):
    folder = data_folder(tmp_path, {f"benchmarks/{name}": body})
    report(run_cli, tmp_path, folder, name, "cannot be tabulated")


def test_a_data_file_beyond_the_limit(tmp_path, run_cli):
    folder = tmp_path / "data"
    folder.mkdir()
    with (folder / "p.json").open("wb") as out:
        out.truncate(limits.DATA_JSON_BYTES_MAX + 1)  # sparse
    report(run_cli, tmp_path, str(folder), "p.json", "beyond the limit")


def test_good_records_still_make_the_page(tmp_path):
    from archscope.report.pages.profiles import load_profiles, profiles_page

    folder = data_folder(tmp_path, {"profile-x.json": [GOOD, {"model": "gpt2", "device": "cpu",
                                                              "decode_step": None}]})
    page = profiles_page(load_profiles(tmp_path / "data"))
    assert "llama-3.2-1b" in page and "12.50" in page and "gpt2" in page
