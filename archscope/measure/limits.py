"""The bandwidth wall as a check on measurements: no timing may beat it.

A prefill reads at least the weights once and writes the prompt's cache; a decode step reads
at least the weights and the cache (roofline.predict_prefill / predict_decode count those
bytes). At the memory bandwidth measured in the same process (roofline.calibrate: the fastest
of its streaming kernels), those bytes take a least time; a measured phase faster than that did
not happen as timed (a clock or synchronisation error, a step that skipped work), so it is
reported as a measurement error and left out of every result: medians, spreads and ratios.

Routed experts: the roofline counts the experts a batch is expected to touch; the wall counts
the fewest it can touch (every token routed alike: top_k per layer, what one token reads), so
that a lucky routing is no error.

A machine shared with other work measures its bandwidth low at times (this project's 2-core
machines have read from under 10 to 35 GB/s), so a run that seems to beat the first probe gets
a second look: the probe is repeated (REPROBES times) and the fastest reading is the wall. Only
a timing that beats every probe of the process is an error.

A CPU's last-level cache can hold part of the weights from one step to the next (this
project's Xeon reports a 300 MiB L3 beside a 1.3 GB step of one-layer llama-3.2-1b, and timed
such steps faster than a probe streaming twice its cache allows), so on a CPU the wall counts
only the bytes no cache could have held: each phase's bytes less the largest cache the OS reports
(hardware/caches.py; `cache_bytes` in the record). A model that fits the cache has no wall.
Each error names the bytes per step beside the wall.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from archscope.hardware.caches import largest_cache_bytes
from archscope.measure import roofline
from archscope.spec import ModelSpec


@dataclass(frozen=True)
class BandwidthWall:
    """The least time each phase can take at the bandwidth measured in this run."""

    bandwidth: float  # bytes/s: the fastest probe
    source: str  # the kernel that measured it
    prefill_bytes: int
    decode_bytes: int  # all decode steps of one generation together
    decode_steps: int
    probes: tuple[float, ...] = ()  # every bandwidth probe of the run, bytes/s
    cache_bytes: int = 0  # what a cache may hold between phases: not counted (module doc)

    @property
    def least_prefill_s(self) -> float:
        return max(0, self.prefill_bytes - self.cache_bytes) / self.bandwidth

    @property
    def least_decode_s(self) -> float:
        return max(0, self.decode_bytes - self.decode_steps * self.cache_bytes) / self.bandwidth

    def as_dict(self) -> dict:
        return {"bandwidth_bytes_per_s": self.bandwidth, "source": self.source,
                "least_prefill_ms": round(1e3 * self.least_prefill_s, 6),
                "least_decode_ms": round(1e3 * self.least_decode_s, 6),
                "decode_bytes_per_step": self.decode_bytes // max(self.decode_steps, 1),
                "cache_bytes": self.cache_bytes, "probes_bytes_per_s": list(self.probes)}

    def beaten_by(self, runs: list[tuple[float, float]]) -> bool:
        return any(p < self.least_prefill_s or d < self.least_decode_s for p, d in runs)


def wall_for(spec: ModelSpec, local: roofline.Hardware, prompt_len: int, new_tokens: int,
             batch: int, dtype: str, mla_flops: str = "absorbed",
             weight_format: str | None = None) -> BandwidthWall:
    """The wall of one generation of `spec` on the machine `local` was calibrated on (weights
    in `weight_format` when the run quantizes them)."""
    pre = roofline.predict_prefill(spec, local, prompt_len, batch, dtype, weight_format)
    dec = roofline.predict_decode(spec, local, prompt_len, new_tokens, batch, dtype, mla_flops,
                                  weight_format)
    steps = new_tokens - 1

    def read(tokens: int) -> int:
        return roofline.weights_read_bytes(spec, dtype, tokens, weight_format)

    fewest = read(1)  # see the module doc: routed experts
    pre_bytes = pre.bytes - (read(batch * prompt_len) - fewest)
    dec_bytes = dec.bytes - steps * (read(batch) - fewest)
    return BandwidthWall(local.bandwidth, local.source, pre_bytes, dec_bytes, steps,
                         (local.bandwidth,), cached_bytes(local))


def cached_bytes(local: roofline.Hardware) -> int:
    """Bytes of a phase a cache of the machine `local` was measured on may hold from the phase
    before: the CPU's largest cache (see the module doc); none on a GPU."""
    return largest_cache_bytes() if local.name.startswith("local-cpu") else 0


REPROBES = 3


def settle(wall: BandwidthWall, local: roofline.Hardware, runs: list[tuple[float, float]],
           probe: Callable[[], roofline.Hardware]) -> tuple[BandwidthWall, roofline.Hardware]:
    """The wall to judge `runs` by, and the calibration it came from: `wall` (from `local`) when
    no run beats it; otherwise `probe` (a fresh roofline.calibrate) is run REPROBES times and
    the fastest of all the probes sets the wall."""
    if not wall.beaten_by(runs):
        return wall, local
    readings = [local] + [probe() for _ in range(REPROBES)]
    best = max(readings, key=lambda hw: hw.bandwidth)
    return replace(wall, bandwidth=best.bandwidth, source=best.source,
                   probes=tuple(hw.bandwidth for hw in readings)), best


def screen(runs: list[tuple[float, float]], wall: BandwidthWall, who: str
           ) -> tuple[list[float | None], list[float | None], list[dict]]:
    """Split timed runs [(prefill s, decode s)] into (prefill s, decode s) lists with None where
    a phase beat the wall, and the measurement errors found (one dict per rejected phase)."""
    prefills, decodes, errors = [], [], []
    for i, (prefill_s, decode_s) in enumerate(runs, start=1):
        for phase, took, least, kept in (("prefill", prefill_s, wall.least_prefill_s, prefills),
                                         ("decode", decode_s, wall.least_decode_s, decodes)):
            if took >= least:
                kept.append(took)
                continue
            kept.append(None)
            errors.append(_error(who, phase, i, took, least, wall))
    return prefills, decodes, errors


def _error(who: str, phase: str, run: int, took: float, least: float,
           wall: BandwidthWall) -> dict:
    moved = wall.prefill_bytes if phase == "prefill" else wall.decode_bytes
    what = (f"{moved / 1e6:,.1f} MB (the weights and the prompt's cache)" if phase == "prefill"
            else f"{wall.decode_steps} x {moved / max(wall.decode_steps, 1) / 1e6:,.1f} MB "
                 f"(the weights and the cache, per step)")
    return {"model": who, "phase": phase, "run": run, "measured_ms": round(1e3 * took, 6),
            "least_ms": round(1e3 * least, 6),
            "message": (f"{who} {phase}, run {run}: {1e3 * took:,.3f} ms is faster than the "
                        f"{1e3 * least:,.3f} ms that moving {what} takes at the "
                        f"{wall.bandwidth / 1e9:,.2f} GB/s measured in this run: a measurement "
                        f"error, left out of the results")}
