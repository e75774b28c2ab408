"""One name -> one Hardware: a catalog part, or `cpu` measured on the spot."""

from __future__ import annotations

from archscope.hardware.catalog import CPU, Hardware, catalog_part
from archscope.hardware.probe import probe_cpu


def get_hardware(name: str) -> Hardware:
    """'h100-sxm' -> its catalog entry; 'cpu' -> this machine, probed once per process (about
    a second, torch imported on first use); anything else -> UnknownHardwareError (exit 2)."""
    if str(name).strip().lower() == CPU:
        return probe_cpu()
    return catalog_part(name)
