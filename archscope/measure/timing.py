"""Honest timing helpers: device synchronisation, dtype names, median and spread of repeats."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch

from archscope.estimate import canonical_dtype

TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def to_torch_dtype(name: str) -> torch.dtype:
    dtype = canonical_dtype(name)
    if dtype not in TORCH_DTYPES:
        from archscope.errors import InputError

        raise InputError(f"dtype {dtype} cannot run the model; use one of {', '.join(TORCH_DTYPES)}")
    return TORCH_DTYPES[dtype]


def sync(device) -> None:
    """Wait for queued kernels: CUDA launches return before the work is done."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


@dataclass(frozen=True)
class Stats:
    """Median and spread of repeated measurements."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def min(self) -> float:
        return min(self.values)

    @property
    def max(self) -> float:
        return max(self.values)

    @property
    def iqr(self) -> float:
        """Interquartile range (0 with fewer than two values)."""
        if len(self.values) < 2:
            return 0.0
        q = statistics.quantiles(self.values, n=4, method="inclusive")
        return q[2] - q[0]

    def as_dict(self, digits: int = 3) -> dict:
        return {"median": round(self.median, digits), "min": round(self.min, digits),
                "max": round(self.max, digits), "iqr": round(self.iqr, digits),
                "n": len(self.values)}
