"""The accelerator catalog (catalog.yaml) as frozen records, and name lookup with a did-you-mean.

Every figure is the vendor datasheet's, converted once here to base units: bytes, bytes/s and
dense FLOP/s per dtype (the YAML header states the conventions: decimal GB, dense = half the
"with sparsity" figure, interconnect bandwidth as the datasheet quotes it, both directions).
`cpu` is not in the file: it is measured on the spot (archscope/hardware/probe.py).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from archscope.errors import InputError, quote

CATALOG_FILE = Path(__file__).with_name("catalog.yaml")
DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "fp4")  # fp32: the plain (non-tensor) peak
CPU = "cpu"


class UnknownHardwareError(InputError, KeyError):
    """A hardware name that is neither in the catalog nor `cpu`."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


@dataclass(frozen=True)
class Hardware:
    """One accelerator (or the measured local CPU), in base units."""

    name: str  # catalog key: 'h100-sxm'
    title: str  # 'NVIDIA H100 SXM5 80GB'
    vendor: str
    memory_bytes: int
    memory_bandwidth: float  # bytes/s, peak
    peak_flops: dict[str, float] = field(hash=False)  # dtype -> dense FLOP/s
    interconnect: str  # 'NVLink', 'PCIe Gen5 x16', 'Infinity Fabric', 'none'
    interconnect_bandwidth: float  # bytes/s per device, both directions summed (as quoted)
    source_title: str
    source_url: str
    confirmed_via: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()  # dtypes with no tensor-core path on this part
    missing: tuple[str, ...] = ()  # dtypes the part has but no source gave a figure for
    notes: str = ""
    device_names: tuple[str, ...] = ()  # what torch.cuda.get_device_name() holds for it
    measured: bool = False  # True for `cpu`: the figures are this machine's, just measured

    def flops(self, dtype: str) -> float | None:
        """Dense peak FLOP/s in `dtype`, or None when unsupported or not found."""
        return self.peak_flops.get(dtype)

    @property
    def one_way_bandwidth(self) -> float:
        """Bytes/s one direction of the link carries: half the datasheet's two-way figure."""
        return self.interconnect_bandwidth / 2

    def row(self) -> dict:
        """The JSON object `archscope hardware --format json` prints for this part."""
        return {"name": self.name, "title": self.title, "vendor": self.vendor,
                "memory_bytes": self.memory_bytes,
                "memory_bandwidth_bytes_per_s": self.memory_bandwidth,
                "dense_flops_per_s": dict(self.peak_flops),
                "unsupported": list(self.unsupported), "not_found": list(self.missing),
                "interconnect": {"kind": self.interconnect,
                                 "bandwidth_bytes_per_s": self.interconnect_bandwidth},
                "source": {"title": self.source_title, "url": self.source_url},
                "confirmed_via": list(self.confirmed_via), "notes": self.notes,
                "measured": self.measured}


def _part(name: str, entry: dict) -> Hardware:
    tflops = entry.get("dense_tflops", {})
    unknown = sorted(set(tflops) - set(DTYPES))
    if unknown:  # a typo in the data file should fail loudly, not vanish
        raise ValueError(f"{CATALOG_FILE.name}: {name}: unknown dtype(s) {unknown}")
    link = entry["interconnect"]
    return Hardware(
        name=name, title=entry["title"], vendor=entry["vendor"],
        memory_bytes=int(round(entry["memory_gb"] * 1e9)),
        memory_bandwidth=float(entry["bandwidth_gbs"]) * 1e9,
        peak_flops={d: float(v) * 1e12 for d, v in tflops.items() if v is not None},
        interconnect=link["kind"], interconnect_bandwidth=float(link["gbs"]) * 1e9,
        source_title=entry["source"]["title"], source_url=entry["source"]["url"],
        confirmed_via=tuple(entry.get("confirmed_via", ())),
        unsupported=tuple(entry.get("unsupported", ())),
        missing=tuple(d for d, v in tflops.items() if v is None),
        notes=entry.get("notes", ""), device_names=tuple(entry.get("device_names", ())))


@lru_cache(maxsize=1)
def catalog() -> dict[str, Hardware]:
    """Every catalog part by name, in file order (read once per process)."""
    data = yaml.safe_load(CATALOG_FILE.read_text(encoding="utf-8"))
    return {name: _part(name, entry) for name, entry in data["parts"].items()}


def hardware_names() -> list[str]:
    """The names `get_hardware` accepts: the catalog's parts, then `cpu`."""
    return [*catalog(), CPU]


def catalog_part(name: str) -> Hardware:
    """The catalogued part called `name` ('h100-sxm', 'H100-SXM'). An unknown name raises
    UnknownHardwareError naming the closest known ones (`cpu` included: lookup.py measures it)."""
    key = str(name).strip().lower()
    parts = catalog()
    if key in parts:
        return parts[key]
    close = difflib.get_close_matches(key, hardware_names(), n=3, cutoff=0.5)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    raise UnknownHardwareError(f"unknown hardware {quote(name)}{hint}; known: "
                               f"{', '.join(hardware_names())}")


def part_for_device(device_name: str) -> Hardware | None:
    """The catalog part a CUDA device name names ('NVIDIA H100 80GB HBM3' -> h100-sxm): one of
    its `device_names` as whole words, the longest match winning ('L40S' over 'L4'); None
    when no part matches (an A100 PCIe card, a GPU the catalog lacks)."""
    matches = [(len(name), part) for part in catalog().values() for name in part.device_names
               if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", device_name, re.I)]
    return max(matches, key=lambda m: m[0])[1] if matches else None
