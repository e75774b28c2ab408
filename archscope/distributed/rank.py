"""One rank's sharded model and what it holds and sends: shared by `archscope plan` (meta,
fake process group) and the launched ranks of `archscope profile --tp`."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from archscope.distributed.comms import CollectiveLog, as_rows
from archscope.distributed.styles import shard_model
from archscope.estimate.parallel import ParallelSplit, sent_bytes, step_collectives, split
from archscope.nn.build import build_model
from archscope.nn.shards import local
from archscope.spec import ModelSpec

FORMATS = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def held(model: nn.Module) -> tuple[int, int]:
    """(parameters, bytes) this rank holds: each unique parameter's local shard (a tied head
    once; a replicated tensor whole)."""
    tensors = [local(p) for p in model.parameters()]
    return sum(t.numel() for t in tensors), sum(t.numel() * t.element_size() for t in tensors)


def planned(spec: ModelSpec, tp: int, ep: int, dtype: torch.dtype) -> ParallelSplit:
    return split(spec, tp, ep, FORMATS[dtype])


def activation_width(plan: ParallelSplit) -> int:
    """The plan's activation bytes (parallel._activation_bytes via its logits figure's unit)."""
    return 4 if plan.weight_format == "fp32" else 2


@torch.no_grad()  # not inference_mode: under it DTensor decomposes every Linear the slow way
def decode_step_collectives(model: nn.Module, ids: torch.Tensor, cache):
    """The collectives of one decode step (one token per sequence after what `cache` holds),
    as CollectiveLog records them, and the step's logits."""
    with CollectiveLog() as log:
        logits = model(ids, cache, last_only=True)
    return log.collectives(), logits


def compare_step(spec: ModelSpec, plan: ParallelSplit, measured, tokens: int, tp: int) -> dict:
    """The step's collectives planned beside measured: bytes one GPU sends and the op list."""
    expected = step_collectives(spec, tp, activation_width(plan), tokens)
    return {"collective_bytes_per_step": sent_bytes(measured, tp),
            "collective_bytes_per_step_planned": sent_bytes(expected, tp),
            "collectives": as_rows(measured), "collectives_planned": as_rows(expected)}


def meta_rank(spec: ModelSpec, mesh, tp: int, ep: int, dtype: torch.dtype,
              progress: Callable[[str], None] = lambda _label: None) -> dict:
    """Build, shard and step this rank's model on the meta device: nothing is allocated and
    nothing is sent (a fake process group), yet every shape and collective is the real one.
    `progress(label)` after the build and after the step (each seconds for a large model)."""
    model = shard_model(build_model(spec, "meta", dtype), mesh)
    progress("built")
    params, _ = held(model)
    plan = planned(spec, tp, ep, dtype)
    cache = model.new_cache(1, 2)
    cache.length = 1  # as if one token were cached (on meta a prefill would only cost time)
    ids = torch.zeros(1, 1, dtype=torch.long, device="meta")
    measured, _ = decode_step_collectives(model, ids, cache)
    progress("stepped")
    return {"params": params, "params_planned": plan.params_per_gpu,
            **compare_step(spec, plan, measured, 1, tp)}
