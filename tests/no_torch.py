"""The analytic commands' promise, checked in a fresh interpreter: they run without importing
torch (its import alone takes seconds)."""

import subprocess
import sys


def assert_runs_without_torch(*commands: list[str]) -> None:
    """Run each `archscope` argument list in one new interpreter; each must succeed, and torch
    must not be in sys.modules afterwards."""
    code = ("import sys\nfrom archscope.cli import main\n"
            f"for args in {list(commands)!r}:\n"
            "    try:\n        main(args)\n    except SystemExit as e:\n"
            "        assert not e.code, (args, e.code)\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
