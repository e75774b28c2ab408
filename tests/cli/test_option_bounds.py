"""Numbers without bounds (issue 35): every numeric option has a range that --help shows, from
archscope/spec/limits.py, and a value outside it (10**30, 10**400, a 5,000-digit number, nan,
inf, a seed past 64 bits) is refused at once naming the option: no OverflowError, no run that
goes on until killed."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from archscope.cli import cli
from archscope.spec import limits
from hostile import refused

HUGE = ["1" + "0" * 30, "1" + "0" * 400, "9" * 5000, "-1"]
NOT_FINITE = ["nan", "inf", "-inf", "1e400"]

# (the command up to the option, the option): every numeric option of every command
CASES = [
    (["show", "gpt2"], "--seq-len"), (["show", "gpt2"], "--batch"),
    (["compare", "gpt2"], "--seq-len"), (["compare", "gpt2"], "--batch"),
    (["diff", "gpt2", "gpt2-medium"], "--seq-len"),
    (["sweep", "gpt2", "--grid", "n_layers=1,2"], "--seq-len"),
    (["sweep", "gpt2", "--grid", "n_layers=1,2"], "--batch"),
    (["fit", "gpt2", "--gpu", "h100-sxm"], "--context"), (["fit", "gpt2"], "--n-gpus"),
    (["fit", "gpt2", "--gpu", "h100-sxm"], "--batch"), (["fit", "gpt2"], "--tp"),
    (["fit", "gpt2"], "--ep"), (["plan", "gpt2"], "--tp"), (["plan", "gpt2"], "--ep"),
    (["profile", "gpt2"], "--batch"), (["profile", "gpt2"], "--prompt-len"),
    (["profile", "gpt2"], "--new-tokens"), (["profile", "gpt2"], "--repeats"),
    (["profile", "gpt2"], "--warmup"), (["profile", "gpt2"], "--seed"),
    (["profile", "gpt2"], "--tp"), (["profile", "gpt2"], "--ep"),
    (["generate", "Hi", "--weights", "nowhere"], "--new-tokens"),
    (["generate", "Hi", "--weights", "nowhere"], "--top-k"),
    (["generate", "Hi", "--weights", "nowhere"], "--seed"),
    (["make-checkpoint", "gpt2", "--weights", "nowhere"], "--seed"),
]
FLOAT_CASES = [
    (["fit", "gpt2", "--gpu", "h100-sxm"], "--gpu-memory-utilization"),
    (["fit", "gpt2", "--gpu", "h100-sxm"], "--bandwidth-fraction"),
    (["fit", "gpt2", "--gpu", "h100-sxm"], "--compute-fraction"),
    (["generate", "Hi", "--weights", "nowhere"], "--temperature"),
    (["generate", "Hi", "--weights", "nowhere"], "--top-p"),
]


@pytest.mark.parametrize("value", HUGE, ids=["1e30", "1e400", "5000-digits", "-1"])
@pytest.mark.parametrize("command, option", CASES, ids=[f"{c[0]}{o}" for c, o in CASES])
def test_an_integer_out_of_range_is_refused_naming_the_option(command, option, value, run_cli):
    line = refused(run_cli, *command, f"{option}={value}", words=(option,))
    assert len(line) < 200 and ("range" in line or "not a valid" in line), line


@pytest.mark.parametrize("value", NOT_FINITE + ["-1"])
@pytest.mark.parametrize("command, option", FLOAT_CASES,
                         ids=[f"{c[0]}{o}" for c, o in FLOAT_CASES])
def test_a_number_that_is_not_finite_or_out_of_range_is_refused(command, option, value, run_cli):
    refused(run_cli, *command, f"{option}={value}", words=(option,))


def test_every_numeric_option_has_an_upper_bound():
    """A new numeric option without a range fails here (click's INT and FLOAT take anything)."""
    unbounded = []
    for name, command in cli.commands.items():
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            t = param.type
            if t in (click.INT, click.FLOAT) or (isinstance(t, (click.IntRange, click.FloatRange))
                                                 and t.max is None):
                unbounded.append(f"{name} {param.opts[0]}")
    assert not unbounded, f"give these a range from archscope/spec/limits.py: {unbounded}"


@pytest.mark.parametrize("command, option, top", [
    ("compare", "--seq-len", limits.CONTEXT_MAX), ("compare", "--batch", limits.BATCH_MAX),
    ("fit", "--n-gpus", limits.GPUS_MAX), ("plan", "--tp", limits.RANKS_MAX),
    ("profile", "--repeats", limits.REPEATS_MAX), ("generate", "--seed", limits.SEED_MAX),
    ("generate", "--temperature", limits.TEMPERATURE_MAX),
])
def test_the_help_shows_the_range(command, option, top):
    result = CliRunner().invoke(cli, [command, "--help"], terminal_width=200)
    line = next(line for line in result.output.splitlines() if line.strip().startswith(option))
    assert re.search(rf"<=x<={re.escape(str(top))}\]", line), line


def test_the_largest_values_are_computed_without_overflow(run_cli):
    code, out, err = run_cli("compare", "llama-3.2-1b", "--seq-len", str(limits.CONTEXT_MAX),
                             "--batch", str(limits.BATCH_MAX), "--format", "json")
    assert code == 0 and '"exceeds_context": true' in out, err
    code, out, err = run_cli("fit", "llama-3.2-1b", "--gpu", "h100-sxm", "--tp", "8",
                             "--n-gpus", str(limits.GPUS_MAX), "--context",
                             str(limits.CONTEXT_MAX), "--batch", str(limits.BATCH_MAX))
    assert code == 0 and "Traceback" not in err, err


def test_plan_refuses_more_layer_shards_than_its_limit_in_seconds(run_cli):
    """--tp 1024 on a widened model ran past a minute: each rank's layers are built in turn."""
    refused(run_cli, "plan", "llama-3.2-1b", "--tp", "1024", "--set", "attention.n_heads=1024",
            "--set", "attention.n_kv_heads=1024", "--set", "attention.head_dim=64",
            "--set", "d_model=65536", "--set", "vocab_size=131072", seconds=20,  # the first import of torch.distributed
            words=("--tp 1024 x 16 layers", f"{limits.PLAN_LAYERS_MAX:,}", "archscope fit"))


def test_profile_refuses_more_cpu_ranks_than_a_few_per_cpu(run_cli, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    refused(run_cli, "profile", "llama-3.2-1b", "--set", "n_layers=1", "--tp", "16",
            "--set", "attention.n_kv_heads=32", "--device", "cpu",
            words=("--tp 16", "2 CPUs", "at most 8 ranks"))
