"""Input files that are not regular files, or too large, or too deep (archscope/reads.py and
every reader that goes through it): refused naming the path, never blocking on a FIFO and
never reading a device without end. Each CLI case runs under `within`, so a regression fails
the test instead of hanging the suite."""

from __future__ import annotations

import json
import os
import time

import pytest

from archscope.errors import InputError
from archscope.reads import check_regular, deeper_than, parse_json, read_bytes, read_text
from archscope.spec import limits
from hostile import refused, within

ZERO = "/dev/zero"
needs_dev_zero = pytest.mark.skipif(not os.path.exists(ZERO), reason="no /dev/zero here")


def fifo(path):
    os.mkfifo(path)
    return path


# --- the module ------------------------------------------------------------------------------

def test_a_fifo_a_folder_and_a_missing_file_are_refused_without_opening(tmp_path):
    with within(10):
        with pytest.raises(InputError, match="is a FIFO"):
            read_bytes(fifo(tmp_path / "f"), 100)
    with pytest.raises(InputError, match="is a folder"):
        check_regular(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        read_text(tmp_path / "missing", 100)


@needs_dev_zero
def test_a_device_is_refused_and_so_is_a_link_to_one(tmp_path):
    (tmp_path / "link").symlink_to(ZERO)
    for path in (ZERO, tmp_path / "link"):
        with pytest.raises(InputError, match="is a character device; the spec must be a "
                                             "regular file"):
            read_bytes(path, 100, "spec")


def test_the_size_limit_and_utf8(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(InputError, match="101 bytes, beyond the limit of 100"):
        read_bytes(tmp_path / "big", 100)
    assert read_bytes(tmp_path / "big", 101) == b"x" * 101
    (tmp_path / "bad").write_bytes(b"ok\xff")
    with pytest.raises(InputError, match="cannot read as UTF-8 text.* at byte 2"):
        read_text(tmp_path / "bad", 100)


def test_json_nesting_is_refused_before_the_parser_recurses():
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(InputError, match="nested deeper than 64 levels"):
        parse_json(deep, "x.json", 64)
    ok = "[" * 64 + "]" * 64
    assert parse_json(ok, "x.json", 64) is not None
    assert not deeper_than('{"a": "[[[[[[[[", "b": "\\"[[[["}', 1)  # brackets in strings
    with pytest.raises(InputError, match="not valid JSON"):
        parse_json('{"a": ' + "9" * 5000 + "}", "x.json", 64)


def test_the_nesting_scan_is_linear():
    """Twice the text takes about twice the time (well under four times), for the shapes a
    backtracking scan would make quadratic: escaped quotes, brackets, long strings."""
    def timed(text):
        best = float("inf")
        for _ in range(2):
            start = time.perf_counter()
            deeper_than(text, 64)
            best = min(best, time.perf_counter() - start)
        return best

    with within(60):  # a quadratic scan would take hours here
        for unit in ('"\\"', "[1],", '"abc", '):
            small, large = unit * 50_000, unit * 100_000
            assert timed(large) < 3.5 * timed(small) + 0.01, unit


# --- through the commands ---------------------------------------------------------------------

def test_a_fifo_spec_or_config_is_refused(tmp_path, run_cli):
    with within():
        refused(run_cli, "show", fifo(tmp_path / "spec.yaml"), words=("is a FIFO", "spec"))
        (tmp_path / "folder").mkdir()
        fifo(tmp_path / "folder" / "config.json")
        refused(run_cli, "show", tmp_path / "folder", words=("config.json", "is a FIFO"))


@needs_dev_zero
def test_dev_zero_as_a_model_a_document_or_a_model_map(tmp_path, run_cli):
    doc = tmp_path / "doc.md"
    doc.write_text("# Llama 3.2-1B\n\nIt has 16 layers.\n")
    with within():
        refused(run_cli, "show", ZERO, words=("/dev/zero: is a character device",))
        refused(run_cli, "check-claims", ZERO, words=("/dev/zero: is a character device",))
        refused(run_cli, "check-claims", doc, "--model-map", f"Llama={ZERO}",
                words=("--model-map", "/dev/zero: is a character device"))


def test_a_fifo_document_or_claims_file_is_refused(tmp_path, run_cli):
    (tmp_path / "claims").mkdir()
    fifo(tmp_path / "claims" / "a.yaml")
    doc = tmp_path / "doc.md"
    doc.write_text("# Llama 3.2-1B\n\nIt has 16 layers.\n")
    with within():
        refused(run_cli, "check-claims", fifo(tmp_path / "doc2.md"), words=("is a FIFO",))
        refused(run_cli, "check-claims", doc, tmp_path / "claims", words=("a.yaml", "is a FIFO"))


def test_a_document_beyond_the_limit_is_refused(tmp_path, run_cli):
    doc = tmp_path / "huge.md"
    with doc.open("wb") as out:
        out.truncate(limits.DOCUMENT_BYTES_MAX + 1)  # sparse: no disk used
    refused(run_cli, "check-claims", doc, words=("beyond the limit", "limits.py"))


def test_a_fifo_in_report_inputs_is_refused_before_anything_is_written(tmp_path, run_cli):
    data = tmp_path / "data"
    data.mkdir()
    fifo(data / "profile-x.json")
    with within(60):
        refused(run_cli, "report", "--out", tmp_path / "out", "--data", data,
                "--claims", tmp_path / "none", words=("profile-x.json", "is a FIFO"), seconds=30)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("entry", ["config.json", "model.safetensors.index.json",
                                   "tokenizer.json", "generation_config.json"])
def test_a_fifo_in_a_checkpoint_folder_is_refused(entry, tmp_path, run_cli):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    if entry == "config.json":
        (folder / "config.json").unlink()
    fifo(folder / entry)
    with within():
        refused(run_cli, "generate", "--weights", folder, "Hi", words=(entry, "is a FIFO"),
                seconds=20)  # the first import of torch and transformers included
        refused(run_cli, "profile", "llama-3.2-1b", "--weights", folder,
                words=(entry, "is a FIFO"), seconds=20)
