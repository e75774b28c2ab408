"""The long commands (plan, make-checkpoint, profile, report) draw one progress bar, on stderr,
that moves on every step; stdout stays the command's output (valid JSON with --format json).
The bar is forced on here (ARCHSCOPE_PROGRESS=1: stderr is no terminal under pytest), where it
draws every step; by default it shows on a terminal only."""

from __future__ import annotations

import io
import json
import re
import sys

import pytest
import yaml

from archscope.progress import ENV
from archscope.spec.fields import to_mapping
from parity import tiny_spec

PLAN = ("plan", "llama-3.2-1b", "--set", "n_layers=2", "--tp", "2")


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setenv(ENV, "1")


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "tiny.yaml"  # a vocabulary make-checkpoint's tokenizer can be trained to
    path.write_text(yaml.safe_dump(to_mapping(tiny_spec(vocab_size=300)), sort_keys=False))
    return str(path)


def draws(err: str, command: str) -> list[tuple[int, int | None, str]]:
    """(steps done, total or None, label) of each time `command`'s bar was drawn in `err`."""
    found = []
    for line in re.split(r"[\r\n]", err):
        # "plan:  25%|██▌  | 1/4 [00:00<00:01, 2.96step/s, rank 0 built]"; no total: "3step ["
        bar = re.match(rf"{re.escape(command)}: +(?:\d+%\|[^|]*\| *)?"
                       r"(\d+)(?:/(\d+))?\w* \[([^\]]*)\]", line)
        if bar:
            done, total, inside = bar.groups()
            parts = inside.split(", ", 2)  # time, rate, then the label (if any)
            label = parts[2] if len(parts) == 3 else ""
            found.append((int(done), total and int(total), label))
    return found


def moved_through(err: str, command: str) -> list[str]:
    """The labels of `command`'s bar, checked to have been drawn at 0 and then once per step,
    up to its total (counted before the work, so it is checked against the steps made)."""
    seen = draws(err, command)
    assert [done for done, _, _ in seen] == list(range(len(seen))), seen
    assert {total for _, total, _ in seen} == {len(seen) - 1}, seen
    return [label for _, _, label in seen[1:]]


def no_bar(text: str) -> None:
    assert "\r" not in text and "step/s" not in text and "s/step" not in text


def test_plan_shows_each_rank_built_and_stepped(run_cli, forced):
    code, out, err = run_cli(*PLAN, "--format", "json")
    assert code == 0, err
    record = json.loads(out)  # the bar left stdout alone
    ranks = [f"rank {r['rank']} {done}" for r in record["ranks"] for done in ("built", "stepped")]
    assert moved_through(err, "plan") == ["torch imported", *ranks]


def test_make_checkpoint_shows_each_layer_drawn_and_each_shard_written(run_cli, forced,
                                                                       spec_file, tmp_path):
    folder = tmp_path / "ckpt"
    code, out, err = run_cli("make-checkpoint", spec_file, "--weights", str(folder), "--dtype",
                             "fp32", "--shard-size", "30KB")
    assert code == 0, err
    no_bar(out)
    assert out.startswith("wrote ")
    shards = sorted(p.name for p in folder.glob("*.safetensors"))
    assert len(shards) > 1
    layers = yaml.safe_load(open(spec_file))["n_layers"]
    assert moved_through(err, "make-checkpoint") == [
        *(f"layer {k}/{layers}" for k in range(1, layers + 1)), *shards, "tokenizer"]


@pytest.mark.slow
def test_profile_shows_each_phase(run_cli, forced, spec_file):
    code, out, err = run_cli("profile", spec_file, "--prompt-len", "4", "--new-tokens", "3",
                             "--warmup", "2", "--repeats", "2", "--breakdown", "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert (record["warmup"], record["repeats"]) == (2, 2)
    labels = moved_through(err, "profile")  # the total (preflight.progress_units) checked there
    timed = [label for label in labels if label.startswith("kernel ")]  # first, on a CPU
    assert {f"kernel {k['rows']}x{k['cols']} at {k['tokens']} tokens"
            for k in record["linear_kernels"]} == set(timed) and labels[:len(timed)] == timed
    layers = yaml.safe_load(open(spec_file))["n_layers"]
    assert labels[len(timed):] == ["calibrated", *(f"layer {k}/{layers}" for k in
                                                   range(1, layers + 1)),
                                   "built", "warm-up 1/2", "warm-up 2/2", "repeat 1/2",
                                   "repeat 2/2", "breakdown"]


@pytest.mark.slow
def test_profile_of_a_checkpoint_counts_its_steps_too(run_cli, forced, spec_file, tmp_path):
    """No layer is drawn: the weights are read (under the loader's own bar, also on stderr)."""
    folder = tmp_path / "ckpt"
    code, _, err = run_cli("make-checkpoint", spec_file, "--weights", str(folder), "--dtype",
                           "fp32")
    assert code == 0, err
    code, out, err = run_cli("profile", spec_file, "--weights", str(folder), "--prompt-len",
                             "4", "--new-tokens", "3", "--repeats", "1", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["weights"] == str(folder)
    labels = moved_through(err, "profile")
    assert labels[-3:] == ["built", "warm-up 1/1", "repeat 1/1"]
    assert not any(label.startswith("layer ") for label in labels)
    assert draws(err, f"loading {folder.name}")  # the loader's bar, the same helper's


def test_report_shows_each_model_page_and_figure(run_cli, forced, monkeypatch, tmp_path):
    """Two presets (preset_names patched) and a stand-in for the families' coverage (which
    imports transformers' whole model mapping): every model's deep dive and figure ticks."""
    import archscope.cli.documents as documents
    import archscope.spec as spec

    names = ["gpt2", "llama-3.2-1b"]
    monkeypatch.setattr(spec, "preset_names", lambda: names)
    monkeypatch.setattr(documents, "coverage_record", lambda: {"transformers": "0", "rows": []})
    out_dir, empty = tmp_path / "out", tmp_path / "empty"
    empty.mkdir()
    code, out, err = run_cli("report", "--out", str(out_dir), "--data", str(empty), "--claims",
                             str(empty))
    assert code == 0, err
    assert out == ""
    labels = moved_through(err, "report")
    pages = labels.index("pages")
    assert labels[:pages] == ["families", "estimates", *names]
    figures = {str(p.relative_to(out_dir)) for p in out_dir.rglob("*.png")}
    assert len(figures) > len(names) and sorted(labels[pages + 1:]) == sorted(figures)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("setting, terminal, shown", [
    (None, False, False),  # a log or a pipe: no bar
    (None, True, True),    # a terminal: the bar
    ("0", True, False),    # asked off
    ("1", False, True),    # asked on
])
def test_the_bar_shows_on_a_terminal_or_when_asked(run_cli, monkeypatch, setting, terminal,
                                                   shown):
    if setting is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, setting)
    stderr = _Terminal() if terminal else None
    if stderr is not None:
        monkeypatch.setattr(sys, "stderr", stderr)
    code, out, err = run_cli(*PLAN, "--format", "json")
    err = stderr.getvalue() if stderr is not None else err
    assert code == 0, err
    assert json.loads(out)["agrees"]
    no_bar(out)
    assert bool(draws(err, "plan")) == shown


def test_profile_counts_the_compiled_check_when_compiling_by_default(monkeypatch):
    """On CUDA the step compiles unless told not to: the total counts its eager check then,
    as it does for --compile (the bar would otherwise run past its end)."""
    import torch

    from archscope.measure import preflight
    from archscope.measure.preflight import ProfileOptions, progress_units

    monkeypatch.setattr(preflight, "resolve_device", lambda _name: torch.device("cuda"))
    spec = tiny_spec()
    steps = {compile_: progress_units(spec, ProfileOptions(device="cuda", prompt_len=8,
                                                            new_tokens=4, compile=compile_))
             for compile_ in (None, True, False)}
    assert steps[None] == steps[True] > steps[False]
