"""The sharded model against the whole one, on the same weights, in each launched rank: every
rank builds the whole model from one seed, runs it (a prefill, then cached decode steps), then
shards that same model in place (each rank keeps its slices) and runs it again. Used by the
tests (tests/distributed) and usable on any device the launcher starts."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.elastic.multiprocessing.errors import record

from archscope.distributed.rank import compare_step, decode_step_collectives, held, planned
from archscope.distributed.styles import shard_model
from archscope.distributed.support import check_supported
from archscope.nn.build import build_model
from archscope.spec import ModelSpec


@torch.no_grad()
def _run(model, ids: torch.Tensor, steps: int, log_first_step: bool = False):
    """Logits of a prefill over `ids` then `steps` greedy decode steps (one cache), and the
    first decode step's collectives when asked."""
    cache = model.new_cache(ids.shape[0], ids.shape[1] + steps)
    logits = [model(ids, cache)]
    measured = None
    for step in range(steps):
        token = logits[-1][:, -1:].argmax(-1)
        if step == 0 and log_first_step:
            measured, out = decode_step_collectives(model, token, cache)
        else:
            out = model(token, cache, last_only=True)
        logits.append(out)
    return torch.cat(logits, dim=1), measured


def check_rank(spec: ModelSpec, tp: int, ep: int, seed: int = 0, batch: int = 2,
               prompt_len: int = 5, steps: int = 3) -> dict:
    """This rank's comparison (fp32 on CPU): max |sharded - whole| over every logit, and its
    parameters and one decode step's collectives beside the plan."""
    check_supported(spec, tp, ep)
    model = build_model(spec, "cpu", torch.float32, seed)
    for buffer in model.buffers():  # a routing bias left unset by to_empty: zero, as made
        buffer.zero_()
    ids = torch.randint(0, spec.vocab_size, (batch, prompt_len),
                        generator=torch.Generator().manual_seed(seed))
    whole, _ = _run(model, ids, steps)
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    shard_model(model, mesh)
    sharded, measured = _run(model, ids, steps, log_first_step=True)
    params, _ = held(model)
    plan = planned(spec, tp, ep, torch.float32)
    return {"model": spec.name, "rank": dist.get_rank(), "params": params,
            "params_planned": plan.params_per_gpu,
            "max_abs_logit_diff": (sharded - whole).abs().max().item(),
            **compare_step(spec, plan, measured, batch, tp)}


@record
def check_ranks(cases: list[tuple[ModelSpec, int, int]]) -> list[dict]:
    """The launcher's entrypoint: `check_rank` for each (spec, tp, ep), in one process group
    (gloo), so several models cost one launch."""
    dist.init_process_group("gloo")
    try:
        return [check_rank(spec, tp, ep) for spec, tp, ep in cases]
    finally:
        dist.destroy_process_group()


def check_checkpoint_rank(folder: str, tp: int, ep: int, batch: int = 2, prompt_len: int = 5,
                          steps: int = 3) -> dict:
    """The whole model as weights.load_checkpoint reads it from `folder` against this rank's
    shards as a `profile --tp --weights` rank reads them (fp32 on CPU): max |sharded - whole|
    over every logit, the bytes this rank read, and the bytes of its state (parameters and
    persistent buffers such as a routing bias)."""
    from archscope.distributed.worker import Job, sharded_model
    from archscope.weights import load_checkpoint

    model, spec = load_checkpoint(folder, progress=False)
    check_supported(spec, tp, ep)
    ids = torch.randint(0, spec.vocab_size, (batch, prompt_len),
                        generator=torch.Generator().manual_seed(0))
    whole, _ = _run(model, ids, steps)
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    job = Job(spec, tp, ep, "cpu", torch.float32, weights=folder)
    sharded_m, bytes_read = sharded_model(job, mesh, torch.device("cpu"))
    sharded, _ = _run(sharded_m, ids, steps)
    return {"folder": folder, "rank": dist.get_rank(), "checkpoint_bytes_read": bytes_read,
            "state_bytes": _state_bytes(sharded_m),
            "max_abs_logit_diff": (sharded - whole).abs().max().item()}


@record
def check_checkpoint_ranks(cases: list[tuple[str, int, int]]) -> list[dict]:
    """The launcher's entrypoint: `check_checkpoint_rank` for each (folder, tp, ep)."""
    dist.init_process_group("gloo")
    try:
        return [check_checkpoint_rank(folder, tp, ep) for folder, tp, ep in cases]
    finally:
        dist.destroy_process_group()


def _state_bytes(model) -> int:
    """Bytes of this rank's part of every tensor in the state dict, tied ones once."""
    unique = {}
    for t in model.state_dict().values():
        local = t.to_local() if isinstance(t, DTensor) else t
        unique[local.data_ptr()] = local.numel() * local.element_size()
    return sum(unique.values())
