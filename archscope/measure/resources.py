"""Memory on the running machine: the peak while running. (What is free before allocating is
`archscope.devices.available_bytes`, shared with weights.placement.)

Peak on CUDA is torch.cuda.max_memory_allocated (tensors only; the CUDA context and the
allocator's cached blocks are not in it). CPU has no allocator statistics, so the peak is the
process's resident set: its high-water mark (VmHWM) minus the resident set before the model
was built. Linux lets a process reset its own high-water mark (writing 5 to
/proc/self/clear_refs), so the mark belongs to the measured region; it counts every page
touched, tensors and allocator slack alike. Memory the process freed earlier but still holds
(glibc keeps freed heap pages for reuse) would take the model without raising the mark, so
`start` first collects garbage and hands free heap pages back to the system (malloc_trim).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from pathlib import Path

import torch

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(key: str) -> int | None:
    try:
        for line in STATUS.read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _release_free_memory() -> None:
    """Free what Python no longer references and return glibc's free heap pages to the system
    (a no-op where there is no glibc)."""
    gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


class PeakMemory:
    """Call `start()` before allocating, `peak_bytes()` after; `method` says what was measured."""

    def __init__(self, device: torch.device):
        self.device = device
        self.baseline = 0
        self.method = ""

    def start(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.baseline = torch.cuda.memory_allocated(self.device)
            self.method = "cuda max_memory_allocated minus allocated before the model was built"
            return
        _release_free_memory()
        self.baseline = (_status_kib("VmRSS") or 0) * 1024
        try:
            CLEAR_REFS.write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
            self.method = ("process RSS high-water mark (VmHWM, reset before the model was built) "
                           "minus RSS before the model was built")
        except OSError:
            self.method = ("process RSS high-water mark (VmHWM, not resettable here: may predate "
                           "the run) minus RSS before the model was built")

    def peak_bytes(self) -> int | None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return torch.cuda.max_memory_allocated(self.device) - self.baseline
        hwm = _status_kib("VmHWM")
        if hwm is None:
            self.method = "unavailable (no /proc/self/status)"
            return None
        return max(hwm * 1024 - self.baseline, 0)
