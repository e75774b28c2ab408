"""What would load, when a setup cannot: more GPUs of the same part, or a smaller format.

A setup that cannot hold its weights, or its batch of sequences at the context, gets two
answers, each found by running `fit` itself on the changed setup (so an answer is exactly what
`archscope fit` would say of it):
- the fewest GPUs of the same part, tensor-parallel over all of them (expert parallelism kept
  where it divides), in the same format: 1, 2, 4, ... up to GPUS_SEARCHED;
- on the GPUs asked for, the most precise of FALLBACK_FORMATS smaller than the setup's that fits
  (most precise: the most bytes of weights).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from archscope.errors import InputError
from archscope.estimate.formats import weights_in_format

GPUS_SEARCHED = (1, 2, 4, 8, 16, 32, 64)
# the formats serving engines load, from 8 bits down (estimate/formats.py prices each)
FALLBACK_FORMATS = ("fp8", "int8", "int4-g128", "nvfp4", "mxfp4", "q4_k_m")


@dataclass(frozen=True)
class Advice:
    """What loads instead: None where nothing searched does."""

    n_gpus: int | None  # the fewest GPUs, same format
    weight_format: str | None  # on the GPUs asked for

    def row(self) -> dict:
        return {"n_gpus": self.n_gpus, "weight_format": self.weight_format}


def advice(spec, hw, setup, fits) -> Advice:
    """`setup` (resolved) cannot load on `hw`; `fits(setup) -> bool` runs fit without advice."""
    gpus = None
    if not hw.measured:  # a measured CPU is this one machine: no more of it to add
        for n in (n for n in GPUS_SEARCHED if n > setup.n_gpus):
            ep = setup.ep if n % setup.ep == 0 else 1
            if _fits(fits, replace(setup, n_gpus=n, tp=n, ep=ep)):
                gpus = n
                break
    own = weights_in_format(spec, setup.weight_format).total_bytes
    smaller = sorted(((weights_in_format(spec, f).total_bytes, f) for f in FALLBACK_FORMATS),
                     reverse=True)
    fmt = next((f for b, f in smaller
                if b < own and _fits(fits, replace(setup, weight_format=f))), None)
    return Advice(gpus, fmt)


def _fits(fits, setup) -> bool:
    try:
        return fits(setup)
    except InputError:  # that many GPUs do not divide the model's heads or experts
        return False
