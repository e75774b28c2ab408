"""archscope's gated attention against transformers' Qwen3NextAttention (eager).

The same weights by name; a prompt then 12 cached decode steps, each side with its own cache;
parameters on meta and FLOPs equal to archscope.kinds.gated_attention_formulas; a negative
control (no gate) that must fail.
"""

from __future__ import annotations

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers.cache_utils import DynamicCache
from transformers.models.qwen3_next.modeling_qwen3_next import (Qwen3NextAttention,
                                                                 Qwen3NextRotaryEmbedding)

from archscope.kinds import gated_attention_formulas as formulas
from archscope.nn.gated_attention import GatedAttention
from archscope.nn.rope import RotaryEmbedding

D, HEADS, KV_HEADS, HEAD_DIM, EPS, THETA = 48, 4, 2, 16, 1e-6, 10000.0
ROTARY = 4  # head_dim * partial_rotary_factor 0.25, Qwen3-Next's factor
PROMPT, STEPS, BATCH, TOL = 20, 12, 2, 1e-4


def hf_config():
    config = transformers.Qwen3NextConfig(
        hidden_size=D, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
        head_dim=HEAD_DIM, rms_norm_eps=EPS, num_hidden_layers=1,
        layer_types=["full_attention"], vocab_size=50,
        rope_parameters=dict(rope_type="default", rope_theta=THETA, partial_rotary_factor=0.25))
    config._attn_implementation = "eager"
    return config


@pytest.fixture(scope="module")
def twins():
    torch.manual_seed(0)
    theirs = Qwen3NextAttention(hf_config(), layer_idx=0).eval()
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            # the norms' stored weights are offsets from 1: perturb around zero
            p.copy_((0.1 if "norm" in name else 0.3) * torch.randn(p.shape))
    ours = GatedAttention(D, HEADS, KV_HEADS, HEAD_DIM, ROTARY, EPS).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return theirs, ours


def causal_mask(tokens: int) -> torch.Tensor:
    return torch.full((tokens, tokens), float("-inf")).triu(1)[None, None]


@torch.no_grad()
def run_both(theirs, ours, x):
    """Prefill then one token at a time through each side's own cache: [(theirs, ours)]."""
    hf_rope, our_rope = Qwen3NextRotaryEmbedding(hf_config()), RotaryEmbedding(ROTARY, THETA, None)
    cache = DynamicCache(config=hf_config())
    our_cache = ours.new_cache(BATCH, x.shape[1], "cpu", x.dtype)
    pairs, start = [], 0
    for end in [PROMPT, *range(PROMPT + 1, x.shape[1] + 1)]:
        chunk, positions = x[:, start:end], torch.arange(start, end)
        mask = causal_mask(end - start) if end - start > 1 else None
        a, _ = theirs(chunk, hf_rope(chunk, positions[None]), mask, past_key_values=cache)
        b = ours(chunk, our_rope(positions, x.dtype), start, our_cache)
        pairs.append((a, b))
        start = end
    return pairs


def test_prompt_then_decode_matches(twins):
    theirs, ours = twins
    x = torch.randn(BATCH, PROMPT + STEPS, D, generator=torch.Generator().manual_seed(1))
    pairs = run_both(theirs, ours, x)
    assert len(pairs) == 1 + STEPS
    assert pairs[0][0].abs().max() > 0.5  # not trivially small
    for i, (a, b) in enumerate(pairs):
        assert (a - b).abs().max().item() < TOL, f"step {i}"


def test_negative_controls_differ(twins, monkeypatch):
    """The check can fail: without the gate (sigmoid -> 1), or with q_proj read as all queries
    then all gates instead of query and gate per head, the output moves far past TOL."""
    theirs, ours = twins
    x = torch.randn(BATCH, PROMPT, D, generator=torch.Generator().manual_seed(2))
    (reference, _), = run_both(theirs, ours, x)
    wrong = GatedAttention(D, HEADS, KV_HEADS, HEAD_DIM, ROTARY, EPS).eval()
    state = dict(theirs.state_dict())
    per_head = state["q_proj.weight"].view(HEADS, 2, HEAD_DIM, D)
    state["q_proj.weight"] = per_head.transpose(0, 1).reshape(-1, D)
    wrong.load_state_dict(state)
    (_, scrambled), = run_both(theirs, wrong, x)
    assert (reference - scrambled).abs().max().item() > 100 * TOL
    monkeypatch.setattr(torch, "sigmoid", torch.ones_like)
    (_, ungated), = run_both(theirs, ours, x)
    assert (reference - ungated).abs().max().item() > 100 * TOL


def test_parameters_on_meta_equal_formula():
    with torch.device("meta"):
        theirs = Qwen3NextAttention(hf_config(), layer_idx=0)
    assert {p.name.split(".", 1)[1]: p.params for p in
            formulas.parts(D, HEADS, KV_HEADS, HEAD_DIM)} == \
        {n.removesuffix(".weight"): p.numel() for n, p in theirs.named_parameters()}


def test_flops_equal_formula(twins):
    """Eager attention multiplies the full square, so the prefill compares with causal=False;
    a decode step reads the prompt plus itself. The cache then holds PROMPT + 1 tokens of
    GQA's size (fp32 here): the gate is never cached."""
    theirs, _ = twins
    x = torch.randn(BATCH, PROMPT + 1, D)
    rope = Qwen3NextRotaryEmbedding(hf_config())
    cache = DynamicCache(config=hf_config())
    counts = []
    for start, end in ((0, PROMPT), (PROMPT, PROMPT + 1)):
        chunk, positions = x[:, start:end], torch.arange(start, end)[None]
        mask = causal_mask(end - start) if end - start > 1 else None
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            theirs(chunk, rope(chunk, positions), mask, past_key_values=cache)
        counts.append(counter.get_total_flops())
    prefill = formulas.prefill_flops(D, HEADS, KV_HEADS, HEAD_DIM, PROMPT, causal=False)
    decode = formulas.decode_flops(D, HEADS, KV_HEADS, HEAD_DIM, PROMPT + 1)
    assert counts == [BATCH * sum(prefill.values()), BATCH * sum(decode.values())]
    held = sum(t.numel() * t.element_size() for t in (cache.layers[0].keys, cache.layers[0].values))
    assert held == formulas.cache_elements(KV_HEADS, HEAD_DIM) * (PROMPT + 1) * BATCH * 4
