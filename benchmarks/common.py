"""What the benchmark scripts share: the fastest of repeated calls, and the command line a
script's --json file records (quoted, so that it can be run again as written)."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path


def fastest(call, calls: int, warmup: int = 1) -> float:
    """Seconds of the fastest of `calls` timed calls of `call`, after `warmup` untimed ones."""
    for _ in range(warmup):
        call()
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def command_line() -> str:
    """`python benchmarks/SCRIPT ARGS...` of the running script, each argument shell-quoted."""
    script = f"benchmarks/{Path(sys.argv[0]).name}"
    return " ".join(shlex.quote(arg) for arg in ["python", script, *sys.argv[1:]])
