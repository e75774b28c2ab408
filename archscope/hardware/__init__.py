"""Accelerators as data: the cited catalog (catalog.yaml) and the measured local CPU.

catalog: Hardware, catalog, catalog_part; probe: probe_cpu (torch, measured on the spot and
cached for the process); lookup: get_hardware (either, by name). This unit imports only
`errors` from archscope.
"""

from archscope.hardware.catalog import (CPU, DTYPES, Hardware, UnknownHardwareError, catalog,
                                        catalog_part, hardware_names)
from archscope.hardware.lookup import get_hardware
from archscope.hardware.probe import probe_cpu

__all__ = ["CPU", "DTYPES", "Hardware", "UnknownHardwareError", "catalog", "catalog_part",
           "get_hardware", "hardware_names", "probe_cpu"]
