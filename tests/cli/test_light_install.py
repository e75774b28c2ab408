"""The light install (`pip install -e .`, pyproject's base dependencies) against the `full`
extra: with every module of the extra made unimportable, the torch-free commands run and give
the same output as with it, and a command that needs the extra says so in one line, exit 2.

The modules blocked are read from pyproject.toml's `full` extra, so a dependency moved from the
base list into the extra (or a light command that starts importing one) shows here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from archscope.cli import FULL_EXTRA

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
ROOT = Path(__file__).resolve().parents[2]
# distribution name -> the module it installs, where the two differ
IMPORT_NAME = {"pyyaml": "yaml"}
BLOCKER = """
import importlib.abc, sys
BLOCKED = set(sys.argv[1].split(","))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from archscope.cli import main
main(sys.argv[2:])
"""
LIGHT = [["list"], ["show", "llama-3.2-1b"], ["compare", "llama-3.2-1b", "qwen3-8b"],
         ["compare", "llama-3.2-1b", "--format", "markdown"],
         ["compare", "llama-3.2-1b", "--format", "csv"],
         ["check-claims", "DOC", "--format", "markdown"],
         ["compare", "llama-3.2-1b", "--gpu", "h100-sxm"],
         ["fit", "llama-3.1-8b", "--gpu", "h100-sxm"],
         ["sweep", "llama-3.2-1b", "--grid", "n_layers=8,16"],
         ["diff", "llama-3.2-1b", "llama-3.2-3b"], ["hardware"], ["check-claims", "DOC"],
         ["show", "llama-3.2-1b", "--format", "markdown", "--units", "GiB"],
         ["show", "llama-3.2-1b", "--format", "csv"], ["fit", "llama-3.1-8b", "--format", "csv"],
         ["list", "--format", "markdown"], ["diff", "llama-3.2-1b", "gpt2", "--format", "csv"]]
FULL = [["show", "llama-3.2-1b", "--verify"], ["plan", "llama-3.2-1b", "--tp", "2"],
        ["families"]]


def _names(requirements: list[str]) -> set[str]:
    names = {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}
    return {IMPORT_NAME.get(n, n.replace("-", "_")) for n in names}


def _extra() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base, full = _names(project["dependencies"]), _names(project["optional-dependencies"]["full"])
    assert not base & full
    assert "archscope[full]" in project["optional-dependencies"]["test"]  # the README's tests
    return full


def _run(args: list[str], blocked: set[str], tmp_path) -> subprocess.CompletedProcess:
    doc = tmp_path / "doc.md"
    doc.write_text("Llama 3.1 8B has 8 billion parameters and 32 layers.\n")
    args = [str(doc) if a == "DOC" else a for a in args]
    return subprocess.run([sys.executable, "-c", BLOCKER, ",".join(sorted(blocked)) or "-",
                           *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_the_cli_names_every_module_of_the_full_extra():
    assert _extra() <= FULL_EXTRA


@pytest.mark.parametrize("args", LIGHT, ids=lambda a: " ".join(a))
def test_a_light_command_runs_without_the_full_extra(args, tmp_path):
    light = _run(args, _extra() | {"numpy", "huggingface_hub"}, tmp_path)
    assert light.returncode == 0, light.stderr
    full = _run(args, set(), tmp_path)
    assert full.returncode == 0, full.stderr
    assert light.stdout == full.stdout and light.stdout


@pytest.mark.parametrize("args", FULL, ids=lambda a: " ".join(a[:2]))
def test_a_command_that_needs_the_extra_says_so_in_one_line(args, tmp_path):
    run = _run(args, _extra(), tmp_path)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert f"`archscope {args[0]}` needs" in lines[0] and '".[full]"' in lines[0]
