"""The one stopwatch for a generation, whichever model runs it (archscope's or transformers').

A generation is a prefill (the prompt through the cache, up to the first token: time to first
token) and the decode (new_tokens - 1 steps of one token each, greedy). Each timed region starts
and ends with a device synchronisation; between steps nothing waits for the host, so on CUDA
the launches of step n+1 overlap the kernels of step n. Running both models through this one
function is what makes their figures comparable: same timer, same regions, same sampling.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from archscope.measure.generate import decode, greedy
from archscope.measure.timing import sync

# (ids [B, n], cache) -> the last position's logits [B, vocab]
Forward = Callable[[torch.Tensor, Any], torch.Tensor]


@torch.inference_mode()
def timed_generation(prefill: Forward, step: Forward, prompt: torch.Tensor, cache,
                     new_tokens: int) -> tuple[torch.Tensor, float, float]:
    """One generation into an empty `cache`: (tokens [B, new_tokens], prefill s, decode s)."""
    device = prompt.device
    sync(device)
    t0 = time.perf_counter()
    first = greedy(prefill(prompt, cache))
    sync(device)
    t1 = time.perf_counter()
    rest = decode(step, first, cache, new_tokens - 1)
    sync(device)
    t2 = time.perf_counter()
    return torch.cat((first[:, None], rest), dim=1), t1 - t0, t2 - t1
