"""GQA with attention.output_gate (Qwen3-Next's gated attention) against transformers'
Qwen3NextAttention (eager).

archscope's GQAAttention built from a spec (output_gate, per-head QK-norm scaling by
(1 + weight), partial rotary 0.25) with the same weights by name: a prompt then 12 cached
decode steps, each side with its own cache; parameters on meta and FLOPs equal to the gqa kind's
parts (kinds/gqa.py); negative controls (no gate; q_proj read as all queries then all gates)
that must fail.
"""

from __future__ import annotations

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers.cache_utils import DynamicCache
from transformers.models.qwen3_next.modeling_qwen3_next import (Qwen3NextAttention,
                                                                 Qwen3NextRotaryEmbedding)

from archscope.kinds import gqa
from archscope.measure.reference import cache_kwargs
from archscope.nn.attention import GQAAttention
from archscope.nn.rope import RotaryEmbedding
from parity import tiny_spec

D, HEADS, KV_HEADS, HEAD_DIM, EPS, THETA = 48, 4, 2, 16, 1e-6, 10000.0
PROMPT, STEPS, BATCH, TOL = 20, 12, 2, 1e-4


def spec(output_gate: bool = True):
    return tiny_spec(d_model=D, n_layers=1, norm=dict(kind="rmsnorm", eps=EPS, unit_offset=True),
                     position=dict(kind="rope", theta=THETA),
                     attention=dict(kind="gqa", n_heads=HEADS, n_kv_heads=KV_HEADS,
                                    head_dim=HEAD_DIM, qk_norm="head", output_gate=output_gate,
                                    rotary_fraction=0.25))  # Qwen3-Next's partial_rotary_factor


SPEC = spec()
ROTARY = SPEC.attention.rotary_dim  # 4 of 16


def hf_config():
    config = transformers.Qwen3NextConfig(
        hidden_size=D, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
        head_dim=HEAD_DIM, rms_norm_eps=EPS, num_hidden_layers=1,
        layer_types=["full_attention"], vocab_size=50,
        rope_parameters=dict(rope_type="default", rope_theta=THETA, partial_rotary_factor=0.25))
    config._attn_implementation = "eager"
    return config


def ours_with(state: dict, s=SPEC) -> GQAAttention:
    module = GQAAttention(s, s.attention).eval()
    module.load_state_dict(state, strict=True)
    return module


@pytest.fixture(scope="module")
def twins():
    torch.manual_seed(0)
    theirs = Qwen3NextAttention(hf_config(), layer_idx=0).eval()
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            # the norms' stored weights are offsets from 1: perturb around zero
            p.copy_((0.1 if "norm" in name else 0.3) * torch.randn(p.shape))
    return theirs, ours_with(theirs.state_dict())


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
        a, _ = theirs(chunk, hf_rope(chunk, positions[None]), mask,
                      **cache_kwargs(theirs, cache))
        b = ours(chunk, our_rope(positions, x.dtype), start, our_cache)
        pairs.append((a, b))
        start = end
    return pairs


def test_same_names_and_shapes(twins):
    theirs, ours = twins
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
        {k: v.shape for k, v in theirs.state_dict().items()}
    assert ours.q_proj.out_features == 2 * HEADS * HEAD_DIM  # query and gate rows


def test_prompt_then_decode_matches(twins):
    theirs, ours = twins
    x = torch.randn(BATCH, PROMPT + STEPS, D, generator=torch.Generator().manual_seed(1))
    pairs = run_both(theirs, ours, x)
    assert len(pairs) == 1 + STEPS
    assert pairs[0][0].abs().max() > 0.5  # not trivially small
    for i, (a, b) in enumerate(pairs):
        assert (a - b).abs().max().item() < TOL, f"step {i}"


def test_negative_controls_differ(twins):
    """The check can fail: without the gate (the spec's output_gate off, q_proj's query rows
    only), or with q_proj read as all queries then all gates instead of query and gate per
    head, the output moves far past TOL."""
    theirs, ours = twins
    x = torch.randn(BATCH, PROMPT, D, generator=torch.Generator().manual_seed(2))
    (reference, _), = run_both(theirs, ours, x)
    state = dict(theirs.state_dict())
    per_head = state["q_proj.weight"].view(HEADS, 2, HEAD_DIM, D)
    scrambled = ours_with({**state, "q_proj.weight": per_head.transpose(0, 1).reshape(-1, D)})
    (_, wrong), = run_both(theirs, scrambled, x)
    assert (reference - wrong).abs().max().item() > 100 * TOL
    ungated = ours_with({**state, "q_proj.weight": per_head[:, 0].reshape(-1, D)}, spec(False))
    (_, wrong), = run_both(theirs, ungated, x)
    assert (reference - wrong).abs().max().item() > 100 * TOL


def test_parameters_on_meta_equal_the_kind_parts():
    with torch.device("meta"):
        theirs = Qwen3NextAttention(hf_config(), layer_idx=0)
        ours = GQAAttention(SPEC, SPEC.attention)
    expected = {p.name.split(".", 1)[1]: p.params for p in gqa.parts(SPEC.attention, D)}
    assert expected == {n.removesuffix(".weight"): p.numel() for n, p in theirs.named_parameters()}
    assert sum(expected.values()) == sum(p.numel() for p in ours.parameters())


def test_flops_equal_the_kind_parts(twins):
    """Eager attention multiplies the full square: projections (2 per multiply-add of the
    kind's parts, the widened q_proj included) per token, plus q.k and weights.v, 2*H*h each
    per (query, key) pair. A decode step reads the prompt plus itself. The cache then holds
    PROMPT + 1 tokens of GQA's size (fp32 here): the gate is never cached."""
    theirs, ours = twins
    x = torch.randn(BATCH, PROMPT + 1, D)
    rope = Qwen3NextRotaryEmbedding(hf_config())
    cache = DynamicCache(config=hf_config())
    counts = []
    for start, end in ((0, PROMPT), (PROMPT, PROMPT + 1)):
        chunk, positions = x[:, start:end], torch.arange(start, end)[None]
        mask = causal_mask(end - start) if end - start > 1 else None
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            theirs(chunk, rope(chunk, positions), mask, **cache_kwargs(theirs, cache))
        counts.append(counter.get_total_flops())
    projections = 2 * sum(p.macs for p in gqa.parts(SPEC.attention, D))
    pair = 2 * 2 * HEADS * HEAD_DIM
    prefill = PROMPT * projections + PROMPT * PROMPT * pair
    decode = projections + (PROMPT + 1) * pair
    assert counts == [BATCH * prefill, BATCH * decode]
    held = sum(t.numel() * t.element_size() for t in (cache.layers[0].keys, cache.layers[0].values))
    assert held == gqa.cache_elements(SPEC.attention) * (PROMPT + 1) * BATCH * 4
    our_cache = ours.new_cache(BATCH, PROMPT + 1, "cpu", torch.float32)
    assert our_cache.nbytes() == held
