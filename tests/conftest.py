import os

import pytest
from hypothesis import settings

from archscope.cli import main

# The fuzz tests draw the same examples on every run and machine (derandomized: seeded from
# each test's source), so a suite that passed once passes again and a failure reproduces
# anywhere; ARCHSCOPE_FUZZ_RANDOM=1 draws fresh examples, for the longer searches the README
# describes. A test's own settings() keep this unless they set derandomize themselves.
settings.register_profile("archscope", derandomize=os.environ.get("ARCHSCOPE_FUZZ_RANDOM") != "1")
settings.load_profile("archscope")


def _cli_runner(capture):
    def run(*args):
        code = 0
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out = capture.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process: returns (exit code, stdout, stderr)."""
    return _cli_runner(capsys)


@pytest.fixture
def run_cli_fd(capfd):
    """run_cli capturing file descriptors 1 and 2 (what C++ writes too)."""
    return _cli_runner(capfd)


@pytest.fixture(autouse=True)
def _no_linear_kernel_choices_leak():
    """Kernel choices (archscope.nn.linear) are process-wide, as the timings they come from:
    each test starts from none, so one test's profile cannot change another's kernels."""
    import sys

    yield
    linear = sys.modules.get("archscope.nn.linear")  # never imported here: no-torch tests
    if linear is not None:
        linear.forget_choices()
