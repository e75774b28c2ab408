"""What every hostile-input test checks of a refusal: exit 2, nothing on stdout, one short line
on stderr naming what it must, no traceback, and quick."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time

from archscope.errors import MESSAGE_MAX

SECONDS = 2.0  # a refusal, in-process: the work before it is bounded by the limits


def refused(run_cli, *args, words=(), seconds: float = SECONDS) -> str:
    """Run the CLI in-process; assert a quick exit 2 with one short line; return the message."""
    start = time.perf_counter()
    code, out, err = run_cli(*map(str, args))
    elapsed = time.perf_counter() - start
    assert code == 2, (code, err[-800:])
    assert out == "", out[:300]
    assert "Traceback" not in err, err[-800:]
    line = err.strip().splitlines()[-1] if err.strip() else ""
    assert line.startswith("error: ") or line.startswith("Error: "), err[-500:]
    assert len(line) <= MESSAGE_MAX + len("error: "), len(line)
    assert elapsed < seconds, f"{elapsed:.1f} s: {err}"
    for word in words:
        assert str(word) in line, (word, line)
    return line


class Hung(Exception):
    """A call that should have been refused at once was still running."""


@contextlib.contextmanager
def within(seconds: int = 20):
    """Fail, rather than hang the suite, if the body blocks (a FIFO opened for reading waits
    for a writer forever): SIGALRM interrupts the blocking system call."""
    def handler(_signum, _frame):
        raise Hung(f"still running after {seconds} s")

    before = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid
