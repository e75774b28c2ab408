"""One option vocabulary: the README's "Options shared by all commands" table agrees with every
command's --help (names, which commands, the same choices), and no two commands use different
names for the same thing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from archscope.cli import cli

README = Path(__file__).resolve().parents[2] / "README.md"
COMMANDS = sorted(cli.commands)
# (command, option) pairs whose owner has still to switch to the shared factory in options.py:
# check-claims (archscope/cli/documents.py) still has its own --format [table|markdown|json].
PENDING: set = set()
# Other names people use for the options the table lists: none may appear anywhere.
SYNONYMS = ("--max-new-tokens", "--max-tokens", "--num-tokens", "--n-tokens", "--tokens",
            "--precision", "--weights-dir", "--checkpoint", "--ckpt", "--folder",
            "--output-format", "--fmt", "--batch-size", "--seqlen", "--context-len",
            "--override", "--overrides", "--kv-cache-dtype", "--cache-dtype")


def _help(command: str) -> str:
    result = CliRunner().invoke(cli, [command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def _options(command: str) -> dict[str, list[str] | None]:
    """--name -> its choices ([a|b] in the help), or None for a free-form value or a flag; an
    option with two names (`--dtype, --weight-format FORMAT`) is listed under both."""
    found = {}
    for line in _help(command).splitlines():
        m = re.match(r"^  (?:-\w, )?(--[a-z][\w-]*)((?:, --[\w-]+)*)(?: / --[\w-]+)?"
                     r"(?: (\S+(?: RANGE)?))?", line)
        if m:
            spec = m[3] or ""
            for name in [m[1], *re.findall(r"--[\w-]+", m[2])]:
                found[name] = spec[1:-1].split("|") if spec.startswith("[") else None
    return found


def _table() -> dict[str, dict]:
    """The README's table: option -> {"commands": [...], "choices": {command: [...]}|None}."""
    text = README.read_text()
    section = text[text.index("## Options shared by all commands"):]
    section = section[:section.index("\n## ", 4)] if "\n## " in section[4:] else section
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`--"):
            continue
        option, values, commands = cells[0].strip("`"), cells[1], cells[2]
        commands = [c.strip() for c in commands.split(",")]
        tokens = re.findall(r"`([\w-]+)`(?:\s*\(([^)]*)\))?", values)
        choices = None
        if tokens:
            choices = {c: [v for v, only in tokens
                           if not only or c in [x.strip() for x in only.split(",")]]
                       for c in commands}
        rows[option] = {"commands": commands, "choices": choices}
    return rows


def test_the_readme_table_lists_the_shared_options():
    assert set(_table()) == {"--set", "--dtype", "--format", "--batch", "--seq-len",
                             "--new-tokens", "--device", "--weights", "--kv-dtype",
                             "--attention-flops", "--mla-flops", "--weight-format", "--units"}


@pytest.mark.parametrize("option", sorted(_table()))
def test_each_listed_command_has_the_option_with_the_same_choices(option):
    row = _table()[option]
    for command in row["commands"]:
        assert command in COMMANDS, (option, command)
        options = _options(command)
        assert option in options, f"{command} --help has no {option}"
        want = row["choices"] and sorted(row["choices"][command])
        got = options[option] and sorted(options[option])
        assert got == (want or None), (command, option, got, want)


@pytest.mark.parametrize("option", sorted(_table()))
def test_no_command_takes_a_listed_option_the_table_does_not_name(option):
    row = _table()[option]
    for command in COMMANDS:
        if option in _options(command) and (command, option) not in PENDING:
            assert command in row["commands"], f"README: {option} is missing {command}"


def test_no_command_uses_another_name_for_a_shared_option():
    for command in COMMANDS:
        used = set(_options(command))
        assert not used & set(SYNONYMS), (command, used & set(SYNONYMS))
        hidden = {opt for p in cli.commands[command].params for opt in p.opts} - used
        assert not hidden & set(SYNONYMS), (command, hidden & set(SYNONYMS))


def test_one_value_name_is_one_flag_across_commands():
    """The same parameter (the name the code receives) has the same flag everywhere."""
    flags: dict[str, tuple[str, str]] = {}
    for name in COMMANDS:
        for param in cli.commands[name].params:
            if not param.opts or not param.opts[0].startswith("--"):
                continue
            first = flags.setdefault(param.name, (name, param.opts[0]))
            assert param.opts[0] == first[1], (param.name, first, (name, param.opts[0]))


@pytest.mark.parametrize("command", [c for c in COMMANDS if "--format" in _options(c)])
def test_text_and_table_are_the_same_human_view_everywhere(command):
    if (command, "--format") in PENDING:
        pytest.xfail(f"{command} still has its own --format (see PENDING)")
    assert {"text", "table"} <= set(_options(command)["--format"])
