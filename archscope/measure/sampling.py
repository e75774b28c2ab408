"""Next-token rules for `generate`: greedy, or sampling with temperature, top-k and top-p.

A rule is a callable logits [B, vocab] -> ids [B] (archscope.measure.generate.NextToken).
Sampling order as in transformers: temperature, then top-k, then top-p (the smallest set of
most likely tokens whose probabilities sum to at least p), then one draw from what is left.
Seeded draws come from a private generator, so a seed reproduces a sampled text.
"""

from __future__ import annotations

import math

import torch

from archscope.errors import InputError
from archscope.measure.generate import NextToken, greedy


def make_sampler(temperature: float = 0.0, top_k: int | None = None, top_p: float | None = None,
                 seed: int | None = None) -> NextToken:
    """Greedy when temperature is 0; otherwise a seeded sampler (InputError on bad values)."""
    if not temperature >= 0 or not math.isfinite(temperature):  # a NaN fails both
        raise InputError(f"temperature must be >= 0, got {temperature!r}")
    if top_k is not None and top_k < 1:
        raise InputError(f"top_k must be >= 1, got {top_k!r}")
    if top_p is not None and not 0 < top_p <= 1:  # (a NaN fails this too)
        raise InputError(f"top_p must be in (0, 1], got {top_p!r}")
    if temperature == 0:
        return greedy
    generators: dict = {}

    def next_token(logits: torch.Tensor) -> torch.Tensor:
        device = logits.device
        if device not in generators:  # a generator lives on the device it draws on
            generators[device] = torch.Generator(device=device)
            if seed is None:
                generators[device].seed()
            else:
                generators[device].manual_seed(seed)
        probs = filtered_probs(logits, temperature, top_k, top_p)
        return torch.multinomial(probs, 1, generator=generators[device]).squeeze(-1)

    return next_token


def filtered_probs(logits: torch.Tensor, temperature: float, top_k: int | None,
                   top_p: float | None) -> torch.Tensor:
    """Probabilities [B, vocab] after temperature, top-k and top-p (removed tokens get 0).
    The largest logit is subtracted before dividing, and the temperature kept at least fp32's
    smallest normal number: a tiny one (1e-320, 0 in fp32) then leaves the most likely token
    at 0 and sends the rest towards -inf, never to inf - inf or 0 / 0 (NaN)."""
    logits = logits.float()
    temperature = max(temperature, torch.finfo(torch.float32).tiny)
    logits = (logits - logits.amax(dim=-1, keepdim=True)) / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        # drop a token when the ones before it already reach p; the most likely always stays
        drop = (cumulative - sorted_logits.softmax(dim=-1)) >= top_p
        drop[..., 0] = False
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return logits.softmax(dim=-1)
