"""One rank of `archscope profile --tp N`: started by launch.py (torch's elastic launcher), it
joins the process group (gloo on CPU, NCCL on CUDA: the same code), builds its shards, runs a
prefill and greedy decode steps, records one decode step's collectives, and returns its record
to the launcher."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.elastic.multiprocessing.errors import record

from archscope.distributed.checkpoint import load_shards
from archscope.distributed.rank import compare_step, decode_step_collectives, held, planned
from archscope.distributed.styles import shard_model
from archscope.estimate.kv_cache import kv_cache
from archscope.measure.resources import PeakMemory
from archscope.measure.timing import sync
from archscope.nn.build import build_model, init_weights
from archscope.spec import ModelSpec


@dataclass(frozen=True)
class Job:
    """What every rank runs (pickled to the spawned processes)."""

    spec: ModelSpec
    tp: int
    ep: int
    device: str  # "cpu" or "cuda"
    dtype: torch.dtype
    batch: int = 1
    prompt_len: int = 16
    new_tokens: int = 8
    seed: int = 0
    weights: str | None = None  # an HF checkpoint folder; None: random-init from `seed`
    die_on_rank: int | None = None  # tests: this rank exits abruptly once its model is built


def _device(job: Job) -> torch.device:
    if job.device == "cuda":
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def sharded_model(job: Job, mesh, device: torch.device):
    """(this rank's shards, allocated on `device` only: built on meta, sharded, then filled
    from the checkpoint or the seed; the checkpoint bytes this rank read)."""
    model = shard_model(build_model(job.spec, "meta", job.dtype), mesh)
    model = model.to_empty(device=device)
    model.tie_weights()
    for buffer in model.buffers():  # DeepSeek-V3's routing bias, zeros as the module makes it
        buffer.zero_()  # (to_empty leaves it unset); a checkpoint then sets it
    if job.weights is None:
        init_weights(model, job.seed)
        return model.eval(), 0
    return model.eval(), load_shards(model, job.weights, job.spec, job.dtype)


@record  # an exception's message reaches the launcher's error (launch.RankFailed)
def run_rank(job: Job) -> dict:
    """The launcher's entrypoint: this rank's record (see archscope/cli/sharded.py)."""
    device = _device(job)
    if device.type == "cpu":  # the ranks share the cores (torchrun sets OMP_NUM_THREADS alike)
        ranks_here = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // ranks_here))
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    try:
        return _profile(job, device)
    finally:
        dist.destroy_process_group()


def _warm_up(model, ids: torch.Tensor, device: torch.device) -> None:
    """One short prefill and decode step on a scratch cache, untimed: the first calls pay for
    DTensor's sharding propagation and the backend's connections."""
    scratch = model.new_cache(ids.shape[0], 3)
    model(ids[:, :2], scratch, last_only=True).argmax(-1)  # argmax: the all-gather completes
    model(ids[:, :1], scratch, last_only=True).argmax(-1)
    sync(device)


@torch.no_grad()
def _profile(job: Job, device: torch.device) -> dict:
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh(device.type, (world,))
    peak = PeakMemory(device)
    peak.start()
    model, bytes_read = sharded_model(job, mesh, device)
    if job.die_on_rank == rank:
        os._exit(3)  # as a crashed process would: no exception, no cleanup
    params, weight_bytes = held(model)
    plan = planned(job.spec, job.tp, job.ep, job.dtype)
    ids = torch.randint(0, job.spec.vocab_size, (job.batch, job.prompt_len),
                        generator=torch.Generator().manual_seed(job.seed)).to(device)
    cache = model.new_cache(job.batch, job.prompt_len + job.new_tokens + 1)
    _warm_up(model, ids, device)
    sync(device)
    began = time.perf_counter()
    # the greedy token is taken inside each timed region: it waits for the logits' all-gather,
    # which a functional collective leaves in flight after the forward returns
    token = model(ids, cache, last_only=True).argmax(-1)
    sync(device)
    prefill_s = time.perf_counter() - began
    measured, logits = decode_step_collectives(model, token, cache)  # the first decode step
    token = logits.argmax(-1)
    steps = []
    for _ in range(job.new_tokens - 1):
        sync(device)
        began = time.perf_counter()
        token = model(token, cache, last_only=True).argmax(-1)
        sync(device)
        steps.append(time.perf_counter() - began)
    decode_s = sum(steps) / len(steps) if steps else None
    cache_bytes = sum(b.numel() * b.element_size() for layer in cache.layers if layer is not None
                      for b in layer.buffers.values())
    planned_cache = plan.kv_bytes_per_gpu(kv_cache(
        job.spec, job.prompt_len + job.new_tokens + 1, job.batch,
        {torch.float32: "fp32", torch.float16: "fp16"}.get(job.dtype, "bf16")))
    return {"rank": rank, "params": params, "params_planned": plan.params_per_gpu,
            "weights_bytes": weight_bytes, "weights_bytes_planned": plan.weights_bytes_per_gpu,
            "checkpoint_bytes_read": bytes_read,
            "kv_cache_bytes": cache_bytes, "kv_cache_bytes_planned": planned_cache,
            **compare_step(job.spec, plan, measured, job.batch, job.tp),
            "peak_memory_bytes": peak.peak_bytes(), "peak_memory_method": peak.method,
            "prefill_ms": round(prefill_s * 1e3, 3),
            "decode_ms_per_step": None if decode_s is None else round(decode_s * 1e3, 3),
            "decode_tokens_per_s": None if not decode_s else round(job.batch / decode_s, 2)}
