"""Fast decode steps beside the eager one: fixed shapes, optionally compiled, captured as a CUDA graph.

A decode step of the eager model reads a cache slice that grows by one each step and takes
its position from a Python int, so every step has new shapes and host values. Holding the
cache length on the device (KVCache.keep_length_on_device) makes every step identical:
each layer writes its slot and attends over all slots with a mask (-1 = empty). Such a step
can be compiled once (torch.compile fuses the small elementwise kernels) and, on CUDA,
captured once as a CUDA graph and replayed, which removes the per-kernel launch cost that
dominates small-batch decoding. Before compiling, q/k/v and gate/up are fused into one
matmul each (archscope.nn.fuse). Same arithmetic up to rounding, so greedy tokens match the
eager path (tests/measure/test_compiled_decode.py on the CPU).
"""

from __future__ import annotations

import types

import torch

from archscope.measure.generate import Step, eager_step
from archscope.nn.cache import KVCache
from archscope.nn.fuse import fuse_projections
from archscope.nn.model import DecoderLM


def decode_step(model: DecoderLM, compiled: bool, device: torch.device) -> tuple[Step, str]:
    """(the decode step, what it is): eager, or q/k/v and gate/up fused (archscope.nn.fuse:
    one matmul each) and compiled, on CUDA also captured as a CUDA graph. MoE layers take
    their fixed-shape routing paths there (archscope.nn.moe)."""
    if not compiled:
        return eager_step(model), "eager"
    fused = fuse_projections(model)
    what = f"{fused} fused projections" if fused else "nothing to fuse"
    if device.type == "cuda":
        return CUDAGraphStep(model, compile=True), f"torch.compile + CUDA graph ({what})"
    return compiled_step(model), f"torch.compile ({what})"


def device_position_step(model: DecoderLM) -> Step:
    """The eager forward with the cache length on the device (fixed shapes every step)."""

    def step(ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        _fix_shapes(model, cache)
        return model(ids, cache, last_only=True)[:, -1]

    return step


def compiled_step(model: DecoderLM) -> Step:
    """device_position_step compiled by torch.compile (inductor) once for fixed shapes.

    Dynamo keeps what it compiled on the function's code object and, past
    torch._dynamo.config.recompile_limit (8) entries for one code object, refuses to compile
    again (with fullgraph, an error): a process that makes steps for many caches (a benchmark's
    cases, a notebook) would hit it with one shared function. So each step compiles its own
    copy of the code, whose entries go when the step does.
    """
    forward = types.FunctionType(_forward_one.__code__.replace(), _forward_one.__globals__,
                                 _forward_one.__name__)
    inner = torch.compile(forward, fullgraph=True, dynamic=False)

    def step(ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        _fix_shapes(model, cache)
        return inner(model, ids, cache)

    return step


def _fix_shapes(model: DecoderLM, cache: KVCache) -> None:
    """Before a cache's first fixed-shape step: its length onto the device, and the RoPE tables
    grown to every position it can hold, so that no step changes a shape (a table grown
    inside a compiled step would be a second compilation on the next)."""
    if not isinstance(cache.length, torch.Tensor):
        cache.keep_length_on_device()
        model.cover_positions(cache.max_len)


def _forward_one(model: DecoderLM, ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
    return model(ids, cache, last_only=True)[:, -1]


class CUDAGraphStep:
    """A decode step captured once as a CUDA graph, then replayed.

    The graph is bound to one cache (its buffers' addresses are baked in) and owns the device
    tensor holding that cache's length: after each prefill, the cache's host length is copied
    into it. The logits returned are the graph's output buffer, overwritten by the next replay,
    so consume them (sample) before the next call.
    """

    def __init__(self, model: DecoderLM, compile: bool = False, warmup: int = 3):
        if next(model.parameters()).device.type != "cuda":
            raise ValueError("CUDA graphs need the model on a CUDA device")
        self.inner = compiled_step(model) if compile else device_position_step(model)
        self.warmup = warmup
        self.cache: KVCache | None = None
        self.graph = self.ids = self.logits = self.length = None

    def __call__(self, ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        if self.cache is None:
            self._capture(ids, cache)
        elif cache is not self.cache:
            raise ValueError("this CUDA graph was captured for another cache")
        if not isinstance(cache.length, torch.Tensor):
            self.length.fill_(cache.length)  # a new prefill ran: continue after it
            cache.length = self.length
        self.ids.copy_(ids)
        self.graph.replay()
        return self.logits

    def _capture(self, ids: torch.Tensor, cache: KVCache) -> None:
        cache.keep_length_on_device()
        self.cache, self.length, self.ids = cache, cache.length, ids.clone()
        start = self.length.clone()
        # Warm up on a side stream (allocator pools, cuBLAS handles, compilation); each run
        # writes the same token at the same position, so rewinding the length undoes it.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.inference_mode():
            for _ in range(self.warmup):
                self.length.copy_(start)
                self.inner(self.ids, cache)
        torch.cuda.current_stream().wait_stream(side)
        self.length.copy_(start)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.inference_mode():
            self.logits = self.inner(self.ids, cache)  # recorded, not run: length stays at start
