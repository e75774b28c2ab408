"""The running machine: which device a `device` name means, and how much memory is free on it.

A leaf below every layer that touches torch (it imports only torch, psutil when installed, and
archscope.errors): `weights.placement` refuses a checkpoint that cannot fit before reading it,
and `measure.preflight` refuses a profiling run the same way, without either importing the other.
"""

from __future__ import annotations

from pathlib import Path

import torch

from archscope.errors import InputError, quote


def resolve_device(name: str) -> torch.device:
    """`name` as a torch.device; InputError for a malformed name or a GPU that is not here."""
    try:
        device = torch.device(name)
    except RuntimeError:
        raise InputError(f"device {quote(name)}: expected cpu or cuda (cuda:N)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        raise InputError(f"device {quote(name)}: no CUDA device is available here (torch "
                         f"{torch.__version__}, {build}); use device='cpu'")
    if device.type not in ("cpu", "cuda"):
        raise InputError(f"device {quote(name)}: expected cpu or cuda")
    return device


def available_bytes(device: torch.device) -> int | None:
    """Free memory now: CUDA free device memory; CPU MemAvailable (psutil or /proc/meminfo)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
