"""Decoding over the static cache: one prefill of the prompt, then one token per step.

The loop is split into `prefill` and `decode` so a profiler can time the two phases apart;
`generate` chains them. Sampling is a plain callable `next_token(logits [B, vocab]) -> ids [B]`
(greedy by default), and the decode step is pluggable too: `eager_step` calls the model, the
CUDA-graph / compiled steps of `archscope.measure.fast` replay a captured one.
"""

from __future__ import annotations

from typing import Callable

import torch

from archscope.nn.cache import KVCache
from archscope.nn.model import DecoderLM

NextToken = Callable[[torch.Tensor], torch.Tensor]
Step = Callable[[torch.Tensor, KVCache], torch.Tensor]  # (ids [B, 1], cache) -> logits [B, V]


def greedy(logits: torch.Tensor) -> torch.Tensor:
    """The most likely token of each row (ties go to the lowest id, as in torch.argmax)."""
    return logits.argmax(dim=-1)


def eager_step(model: DecoderLM) -> Step:
    """The reference decode step: a plain forward of one token through the cache."""

    def step(ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        return model(ids, cache, last_only=True)[:, -1]

    return step


@torch.inference_mode()
def prefill(model: DecoderLM, prompt: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """Run the prompt [B, P] into the cache; the last position's logits [B, vocab]."""
    return model(prompt, cache, last_only=True)[:, -1]


@torch.inference_mode()
def decode(step: Step, first: torch.Tensor, cache: KVCache, steps: int,
           next_token: NextToken = greedy) -> torch.Tensor:
    """`steps` decode steps after the token `first` [B]; returns the new tokens [B, steps].

    Tokens stay on the device: nothing waits for the host between steps, so on CUDA the
    launches of step n+1 overlap the kernels of step n.
    """
    token, out = first, []
    for _ in range(steps):
        token = next_token(step(token[:, None], cache))
        out.append(token)
    return torch.stack(out, dim=1) if out else first.new_empty(first.shape[0], 0)


@torch.inference_mode()
def generate(model: DecoderLM, prompt: torch.Tensor, new_tokens: int,
             next_token: NextToken = greedy, step: Step | None = None,
             cache: KVCache | None = None) -> torch.Tensor:
    """`new_tokens` tokens after each prompt row: [B, new_tokens].

    The cache defaults to a fresh one of exactly prompt + new_tokens slots; pass one to reuse
    a pre-allocated cache (it must be empty).
    """
    if new_tokens < 1:
        raise ValueError(f"new_tokens must be at least 1, got {new_tokens}")
    if cache is None:
        cache = model.new_cache(prompt.shape[0], prompt.shape[1] + new_tokens)
    first = next_token(prefill(model, prompt, cache))
    rest = decode(step or eager_step(model), first, cache, new_tokens - 1, next_token)
    return torch.cat((first[:, None], rest), dim=1)
