"""`archscope profile` through the shared vocabulary: --format text = table, torch.profiler's
own chatter kept out of the output, and --save checked before the run, written atomically."""

from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

from archscope.spec.fields import to_mapping
from parity import tiny_spec

RUN = ("--prompt-len", "4", "--new-tokens", "3", "--repeats", "1")
NOISE = ("USDT:", "STAGE:", "profiler_start", "profiler_stop", "ActivityProfiler")


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(to_mapping(tiny_spec()), sort_keys=False))
    return str(path)


@pytest.mark.slow
def test_the_breakdown_leaks_nothing_from_torch_profiler(run_cli_fd, spec_file):
    code, out, err = run_cli_fd("profile", spec_file, *RUN, "--breakdown", "--format",
                             "json")
    assert code == 0, err
    assert json.loads(out)["breakdown"]["modules"]
    for noise in NOISE:
        assert noise not in out and noise not in err, (noise, err)


@pytest.mark.slow
def test_the_text_view_has_the_breakdown_and_no_profiler_lines(run_cli_fd, spec_file):
    code, out, err = run_cli_fd("profile", spec_file, *RUN, "--format", "table")
    assert code == 0, err
    assert out.startswith("tiny") and "Where a decode step goes" in out
    assert not any(noise in out + err for noise in NOISE), err


def test_quiet_profiler_passes_on_what_is_not_profiler_chatter(capfd):
    from archscope.measure.breakdown import quiet_profiler

    with quiet_profiler():
        os.write(2, b"STAGE:2024-01-01 12:00:00 1:1 ActivityProfilerController.cpp:312] x\n")
        os.write(2, b"USDT:2026-11-23 15:49:56 1:1 SyncActivityProfilerHandler.cpp:52] y\n")
        os.write(2, b"archscope: something worth seeing\n")
        print("a Python line on stderr", file=sys.stderr)
    err = capfd.readouterr().err
    assert "something worth seeing" in err and "a Python line on stderr" in err
    assert "STAGE" not in err and "USDT" not in err


@pytest.mark.slow
def test_format_text_and_table_are_one_view(run_cli_fd, spec_file):
    code, _, err = run_cli_fd("profile", spec_file, *RUN, "--format", "text",
                           "--no-breakdown")
    assert code == 0, err
    # a format profile lacks (it has text, json, markdown and csv: issue 36) names its choices
    code, _, err = run_cli_fd("profile", spec_file, *RUN, "--format", "yaml")
    assert code == 2 and "'yaml'" in err and "text" in err and "table" in err


@pytest.mark.slow
def test_save_writes_the_record_atomically(run_cli, spec_file, tmp_path):
    save_dir = tmp_path / "runs" / "new"
    code, out, err = run_cli("profile", spec_file, *RUN, "--format", "json", "--save",
                             "--save-dir", str(save_dir))
    assert code == 0, err
    (saved,) = save_dir.iterdir()
    assert json.loads(saved.read_text()) == json.loads(out)
    assert f"saved {saved}" in err


@pytest.mark.parametrize("where", ["file", "under-file"])
def test_a_save_dir_that_cannot_be_written_is_refused_before_the_run(run_cli, spec_file,
                                                                     tmp_path, monkeypatch,
                                                                     where):
    import archscope.measure.profile as prof

    def no_run(*args, **kwargs):
        raise AssertionError("the model was built")

    monkeypatch.setattr(prof, "build_model", no_run)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    save_dir = blocker if where == "file" else blocker / "runs"
    code, out, err = run_cli("profile", spec_file, *RUN, "--save", "--save-dir", str(save_dir))
    assert code == 2 and out == "" and "Traceback" not in err and len(err) < 400
    assert str(save_dir) in err and "--save-dir" in err
    assert blocker.read_text() == "x"
