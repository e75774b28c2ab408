"""What every hostile-input test checks of a refusal: exit 2, nothing on stdout, one short line
on stderr naming what it must, no traceback, and quick."""

from __future__ import annotations

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
