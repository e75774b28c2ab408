"""`archscope plan`: every rank's sharded model built on the meta device under torch's fake
process group, one rank after another in this one process, checked against the analytic plan:
the parameters each rank holds and the collectives of one decode step. Nothing is allocated and
nothing is sent, so a full-size model (DeepSeek-V3 over 8 ranks) takes seconds."""

from __future__ import annotations

import time
from typing import Callable

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

from archscope.distributed.rank import meta_rank
from archscope.distributed.support import check_plan_size, check_supported
from archscope.spec import ModelSpec


def plan_ranks(spec: ModelSpec, tp: int, ep: int = 1, dtype: torch.dtype = torch.bfloat16,
               progress: Callable[[str], None] = lambda _label: None) -> dict:
    """{model, tp, ep, dtype, ranks: [...], agrees, seconds}; InputError before any rank for a
    split the plan or the run refuses. `progress(label)` after each rank is built and after it
    is stepped: 2 * tp calls, seconds apart for a large model."""
    check_plan_size(spec, tp)
    check_supported(spec, tp, ep)
    if dist.is_initialized():
        raise RuntimeError("archscope plan needs a process without a process group")
    began, ranks = time.perf_counter(), []
    for rank in range(tp):
        dist.init_process_group("fake", rank=rank, world_size=tp)
        try:
            mesh = init_device_mesh("cpu", (tp,))
            figures = meta_rank(spec, mesh, tp, ep, dtype,  # (called before `rank` moves on)
                                lambda done: progress(f"rank {rank} {done}"))
            ranks.append({"rank": rank, **figures})
        finally:
            dist.destroy_process_group()
    agrees = all(r["params"] == r["params_planned"]
                 and r["collectives"] == r["collectives_planned"]
                 and r["collective_bytes_per_step"] == r["collective_bytes_per_step_planned"]
                 for r in ranks)
    return {"model": spec.name, "tp": tp, "ep": ep, "dtype": str(dtype).removeprefix("torch."),
            "ranks": ranks, "agrees": agrees, "seconds": round(time.perf_counter() - began, 3)}
