"""What the benchmark scripts share: the fastest of repeated calls, the command line a
script's --json file records (quoted, so that it can be run again as written), the processor it
names, and the writing of that file."""

from __future__ import annotations

import json
import platform
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


def cpu_name() -> str:
    """The processor a --json file names: its model name and widest vector instructions from
    /proc/cpuinfo where there is one (results differ between AVX2 and AVX-512 processors), else
    what the platform says."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            fields = {k.strip(): v.strip() for k, v in
                      (line.split(":", 1) for line in info if ":" in line)}
    except OSError:
        return name
    flags = set(fields.get("flags", "").split())
    isa = next((label for flag, label in (("avx512f", "AVX-512"), ("avx2", "AVX2"))
                if flag in flags), "")
    model = fields.get("model name", name)
    return f"{model}, {isa}" if isa else model


def write_json(path: str | Path, data: dict) -> None:
    """`data` as indented JSON at `path` (its folder made if need be), its "what" first and the
    command line after it, so that a committed file says how to make it again."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"what": data.get("what"), "command": command_line(), **data}  # "what" stays first
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"-> {path}")
