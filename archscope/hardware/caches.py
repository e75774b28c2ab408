"""This CPU's caches, as the OS reports them: how many bytes a probe must stream to read memory
rather than a cache, and how many bytes of a model's weights a cache may still hold from one
decode step to the next. No instruction set or cache size is assumed: a fixed 256 MiB once
stood for "more than any server CPU's cache", and this project's Xeon reports a 300 MiB L3
(AMD's 3D V-Cache parts report more)."""

from __future__ import annotations

import functools
import glob
from pathlib import Path

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
LEAST_FLUSH_BYTES = 256 << 20  # where the OS says nothing, or reports small caches


@functools.cache
def largest_cache_bytes() -> int:
    """The largest cache of CPU 0 (Linux sysfs `cache/index*/size`, e.g. '307200K'); 0 where
    the OS does not say."""
    largest = 0
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        try:
            text = Path(path).read_text().strip()
            largest = max(largest, int(text.rstrip("KMG")) * _UNITS.get(text[-1:], 1))
        except (OSError, ValueError):
            continue
    return largest


def flush_bytes() -> int:
    """Bytes a probe streams so that it reads memory, not a cache: twice the largest cache, at
    least LEAST_FLUSH_BYTES."""
    return max(LEAST_FLUSH_BYTES, 2 * largest_cache_bytes())
