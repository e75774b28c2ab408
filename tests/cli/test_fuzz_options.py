"""Fuzz the option values of every command: numbers of every size and sign, NaN and infinity,
words, empty and odd text, each option's own choices. The analytic commands run whole (exit
0, or exit 2 with one short line; nothing else escapes, quickly); the commands that build or
run a model (profile, generate, make-checkpoint, plan) are parsed only, and whatever
parses lies within the ranges of archscope/spec/limits.py.

The budget, as in tests/spec/test_fuzz.py: ARCHSCOPE_FUZZ_EXAMPLES examples per target (default
200) and ARCHSCOPE_FUZZ_SECONDS per case (default 10)."""

from __future__ import annotations

import math
import os
import time

import click
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from archscope.cli import cli
from archscope.errors import MESSAGE_MAX

FUZZ_EXAMPLES = int(os.environ.get("ARCHSCOPE_FUZZ_EXAMPLES", "200"))
# a bound against hangs, not a timing: a loaded 2-core run took 5.7 s for one fit case
FUZZ_SECONDS = float(os.environ.get("ARCHSCOPE_FUZZ_SECONDS", "10"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

NUMBERS = ["0", "1", "-1", "2", "7", "4096", "131072", "134217728", "134217729", "1048576",
           "1048577", "18446744073709551615", "18446744073709551616", "1e30", "1" + "0" * 30,
           "1" + "0" * 400, "9" * 5000, "-0", "0.5", "1.0", "1e-320", "5e-324", "1e308", "nan",
           "NaN", "inf", "-inf", "0x10", "1_000", "1,000", " 3 ", "", "x", "é", "🦙", "\x00",
           "--seq-len", "-", "0.0", "2", "100", "100.1"]
# The analytic commands, run whole, with arguments that make each a quick valid call.
RUN = {"show": ["gpt2"], "compare": ["gpt2", "llama-3.2-1b"], "diff": ["gpt2", "gpt2-medium"],
       "sweep": ["gpt2", "--grid", "n_layers=1,2"], "fit": ["llama-3.2-1b"],
       "hardware": [], "check-claims": ["--quantities"]}
PARSE = {"profile": ["gpt2"], "generate": ["Hi", "--weights", "nowhere"],
         "make-checkpoint": ["gpt2", "--weights", "nowhere"], "plan": ["gpt2"]}
SKIP = {"--verify", "--help", "--probe-cpu", "--out", "--save", "--save-dir", "--data",
        "--claims", "--weights", "--plot"}  # slow, or writes: their own tests cover them


def options(command: str) -> list[click.Option]:
    return [p for p in cli.commands[command].params
            if isinstance(p, click.Option) and p.opts[0] not in SKIP]


def value_for(draw, option: click.Option) -> list[str]:
    name = option.opts[0]
    if option.is_flag:
        return [name] if draw(st.booleans()) else []
    if isinstance(option.type, click.Choice) and draw(st.booleans()):
        return [name, draw(st.sampled_from(list(option.type.choices)))]
    if name in ("--gpu", "--hardware") and draw(st.booleans()):
        return [name, draw(st.sampled_from(["h100-sxm", "h200", "cpu", "mi300x", "nope"]))]
    if name == "--set" and draw(st.booleans()):
        return [name, draw(st.sampled_from(["n_layers=2", "n_layers=1:30", "attention.n_heads=0",
                                            "position.theta=1e300", "x"]))]
    return [name, draw(st.one_of(st.sampled_from(NUMBERS), st.text(max_size=8)))]


@st.composite
def calls(draw, commands: dict) -> list[str]:
    command = draw(st.sampled_from(sorted(commands)))
    argv = [command, *commands[command]]
    for option in draw(st.lists(st.sampled_from(options(command)), max_size=4)):
        argv += value_for(draw, option)
    return argv


def test_fuzz_the_analytic_commands(run_cli):
    @FUZZ
    @given(calls(RUN))
    @example(["compare", "gpt2", "--seq-len", "1" + "0" * 400])  # an OverflowError
    @example(["fit", "llama-3.2-1b", "--gpu", "h100-sxm", "--context", "1e30"])
    @example(["fit", "llama-3.2-1b", "--gpu", "h100-sxm", "--bandwidth-fraction", "nan"])
    def check(argv):
        start = time.perf_counter()
        code, out, err = run_cli(*argv)
        elapsed = time.perf_counter() - start
        assert code in (0, 2), (argv, code, err[-500:])
        assert "Traceback" not in err, err[-500:]
        if code == 2:
            last = err.strip().splitlines()[-1]
            assert last.startswith(("error: ", "Error: ")) and len(last) < MESSAGE_MAX + 20, last
        assert elapsed < FUZZ_SECONDS, (argv, f"took {elapsed:.2f} s")

    check()


def test_fuzz_the_running_commands_parse_within_bounds():
    @FUZZ
    @given(calls(PARSE))
    @example(["profile", "gpt2", "--seed", str(2**70)])
    @example(["generate", "Hi", "--weights", "x", "--temperature", "1e-320"])
    @example(["generate", "Hi", "--weights", "x", "--new-tokens", str(10**9)])
    def check(argv):
        command = cli.commands[argv[0]]
        try:
            with command.make_context(argv[0], argv[1:]) as ctx:
                params = ctx.params
        except (click.UsageError, click.BadParameter) as err:
            assert len(err.format_message()) < MESSAGE_MAX, err.format_message()
            return
        for param in command.params:
            value = params.get(param.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                t = param.type
                assert math.isfinite(value), (argv, param.name, value)
                assert t.min is None or value >= t.min, (argv, param.name, value)
                assert value <= t.max, (argv, param.name, value)

    check()
