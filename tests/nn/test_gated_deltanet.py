"""archscope's Gated DeltaNet mixer against transformers' Qwen3NextGatedDeltaNet (torch path).

One tiny config, the same weights loaded by name: the same outputs for a prompt of two chunks
(the second partial) and for 16 cached decode steps after it, each side with its own state;
the same state bytes; parameter count and FLOPs equal to the formulas of
archscope.kinds.gated_deltanet. The config has two value heads per key head, so the
fused projections' per-key-head grouping is exercised.
"""

from __future__ import annotations

import copy

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers.cache_utils import DynamicCache
from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextGatedDeltaNet

from archscope.kinds import gated_deltanet as formulas
from archscope.nn.gated_deltanet import GatedDeltaNet
from archscope.spec.fields import from_mapping
from archscope.spec.gated_deltanet import GatedDeltaNetSpec

D, EPS = 48, 1e-6
MIXER = dict(kind="gated_deltanet", n_key_heads=2, n_value_heads=4, key_head_dim=16,
             value_head_dim=12, conv_kernel=4)
SPEC = from_mapping(GatedDeltaNetSpec, MIXER)
PROMPT, STEPS, BATCH = 100, 16, 2  # 100 tokens: one chunk of 64 (transformers' fixed size) + 36
TOL = 1e-4


def hf_config(layer_type: str = "linear_attention"):
    return transformers.Qwen3NextConfig(
        hidden_size=D, linear_num_key_heads=SPEC.n_key_heads,
        linear_num_value_heads=SPEC.n_value_heads, linear_key_head_dim=SPEC.key_head_dim,
        linear_value_head_dim=SPEC.value_head_dim, linear_conv_kernel_dim=SPEC.conv_kernel,
        rms_norm_eps=EPS,
        num_hidden_layers=1, layer_types=[layer_type], num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, vocab_size=50)


@pytest.fixture(scope="module")
def twins():
    """transformers' module with random weights (std 0.3, gated-norm weights near 1, so no
    part is negligible) and archscope's with the same tensors, loaded by name, strictly."""
    torch.manual_seed(0)
    theirs = Qwen3NextGatedDeltaNet(hf_config(), layer_idx=0).eval()
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            p.copy_(1 + 0.1 * torch.randn(p.shape) if name == "norm.weight"
                    else 0.3 * torch.randn(p.shape))
    ours = GatedDeltaNet(D, SPEC, EPS).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return theirs, ours


def inputs(tokens: int = PROMPT + STEPS) -> torch.Tensor:
    return torch.randn(BATCH, tokens, D, generator=torch.Generator().manual_seed(1))


def diff(a, b) -> float:
    return (a - b).abs().max().item()


@torch.no_grad()
def run_cached(theirs, ours, x):
    """Prefill PROMPT tokens then one token at a time, each side through its own state."""
    cache, state = DynamicCache(config=hf_config()), ours.new_cache(BATCH, 0, "cpu", x.dtype)
    pairs = [(theirs(x[:, :PROMPT], cache_params=cache), ours(x[:, :PROMPT], cache=state))]
    for i in range(PROMPT, x.shape[1]):
        pairs.append((theirs(x[:, i:i + 1], cache_params=cache), ours(x[:, i:i + 1], cache=state)))
    return pairs, cache.layers[0], state


def test_same_names_and_shapes(twins):
    theirs, ours = twins
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
        {k: v.shape for k, v in theirs.state_dict().items()}


@torch.no_grad()
def test_whole_sequence_matches(twins):
    theirs, ours = twins
    x = inputs()
    out = theirs(x)
    assert out.abs().max() > 1  # far from trivial, so a tolerance of 1e-4 means something
    assert diff(out, ours(x)) < TOL


def test_prefill_then_decode_matches_with_each_sides_cache(twins):
    theirs, ours = twins
    pairs, hf_layer, state = run_cached(theirs, ours, inputs())
    assert len(pairs) == 1 + STEPS
    for i, (a, b) in enumerate(pairs):
        assert diff(a, b) < TOL, f"step {i}"
    # the states themselves agree: the conv's last four inputs, the fp32 matrices
    assert diff(hf_layer.conv_states[0], state.conv) < TOL
    assert diff(hf_layer.recurrent_states[0], state.recurrent) < TOL


@torch.no_grad()
def test_second_prompt_continues_from_the_state(twins):
    """Several tokens after a prefill (a continued prompt): the chunked path starting from the
    recurrent state, the conv reading the state's columns, on both sides."""
    theirs, ours = twins
    x = inputs()
    cache, state = DynamicCache(config=hf_config()), ours.new_cache(BATCH, 0, "cpu", x.dtype)
    for part in (x[:, :70], x[:, 70:]):
        assert diff(theirs(part, cache_params=cache), ours(part, cache=state)) < TOL


@torch.no_grad()
def test_chunk_size_changes_no_result(twins):
    """The chunk is a convention of the algorithm: 16-token chunks give transformers' output
    (its 64) to rounding."""
    theirs, _ = twins
    small = GatedDeltaNet(D, from_mapping(GatedDeltaNetSpec, {**MIXER, "chunk_size": 16}),
                          EPS).eval()
    small.load_state_dict(theirs.state_dict())
    x = inputs()
    assert diff(theirs(x), small(x)) < TOL


@torch.no_grad()
def test_negative_controls_differ(twins):
    """The check can fail: the gate left out of the norm, or in_proj_qkvz read as four plain
    blocks [q | k | v | z] instead of per key head, each moves the output far past TOL."""
    theirs, ours = twins
    x = inputs(PROMPT)
    reference = theirs(x)
    no_gate = GatedDeltaNet(D, SPEC, EPS).eval()
    no_gate.load_state_dict(theirs.state_dict())
    no_gate.norm.forward = lambda h, gate: type(no_gate.norm).forward(
        no_gate.norm, h, torch.full_like(gate, 30.0))  # silu(30) = 30: a constant gate
    assert diff(reference, no_gate(x)) > 100 * TOL
    plain = GatedDeltaNet(D, SPEC, EPS).eval()
    state = dict(theirs.state_dict())
    w = state["in_proj_qkvz.weight"]
    per_key = w.view(SPEC.n_key_heads, -1, D).split([16, 16, 24, 24], dim=1)
    state["in_proj_qkvz.weight"] = torch.cat([part.reshape(-1, D) for part in per_key])
    plain.load_state_dict(state)
    assert diff(reference, plain(x)) > 100 * TOL


def test_parameters_equal_formula_and_transformers_on_meta():
    with torch.device("meta"):
        theirs = Qwen3NextGatedDeltaNet(hf_config(), layer_idx=0)
        ours = GatedDeltaNet(D, SPEC, EPS)
    counted = sum(p.numel() for p in theirs.parameters())
    assert counted == sum(p.numel() for p in ours.parameters()) == formulas.params(SPEC, D)
    # and part by part, under transformers' names
    assert {p.name.split(".", 1)[1]: p.params for p in formulas.parts(SPEC, D)} == \
        {n.removesuffix(".weight"): p.numel() for n, p in theirs.named_parameters()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_state_bytes_equal_formula_and_transformers_cache(twins, dtype):
    """After a prefill the conv state is in the activations' dtype, the recurrent state fp32,
    on both sides; their bytes are the formula's, and stay so through decode steps."""
    theirs, ours = (copy.deepcopy(m).to(dtype) for m in twins)
    _, hf_layer, state = run_cached(theirs, ours, inputs().to(dtype))
    assert hf_layer.recurrent_states[0].dtype == state.recurrent.dtype == torch.float32
    assert hf_layer.conv_states[0].dtype == state.conv.dtype == dtype
    hf_bytes = {"conv": hf_layer.conv_states[0], "recurrent": hf_layer.recurrent_states[0]}
    hf_bytes = {k: t.numel() * t.element_size() for k, t in hf_bytes.items()}
    expected = formulas.state_bytes(SPEC, conv_bytes=dtype.itemsize, batch=BATCH)
    assert hf_bytes == expected
    assert state.nbytes() == sum(expected.values())


def flops(fn) -> dict[str, int]:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}


@pytest.mark.parametrize("tokens", [PROMPT, 64, 7])
def test_prefill_flops_equal_formula_term_by_term(twins, tokens):
    """FlopCounterMode over both sides' prefill against the formula (times batch):

    - archscope's module: every term but ut_solve (the counter has no rule for
      torch.linalg.solve_triangular), exactly;
    - transformers' torch path: the same, plus (K-1) conv outputs per channel: its conv pads
      both ends by K-1 and slices off the extra outputs after computing them.
    """
    theirs, ours = twins
    x = inputs(tokens)
    formula = {k: BATCH * v for k, v in formulas.prefill_flops(SPEC, D, tokens).items()}
    expected = sum(formula.values()) - formula["ut_solve"]
    assert sum(flops(lambda: ours(x, cache=ours.new_cache(BATCH, 0, "cpu", x.dtype))).values()) \
        == expected
    counted = flops(lambda: theirs(x, cache_params=DynamicCache(config=hf_config())))
    padded_conv = BATCH * 2 * (SPEC.conv_kernel - 1) * SPEC.conv_kernel * SPEC.conv_dim
    assert counted["aten.convolution"] == formula["conv1d"] + padded_conv
    assert sum(counted.values()) == expected + padded_conv


def test_decode_flops_equal_formula_term_by_term(twins):
    """One cached step. archscope's module: the formula exactly. transformers' torch path
    writes the recurrence as broadcast products and sums (no matmul, so the counter sees none
    of state_read, state_write, output) and its conv computes 2 outputs and keeps 1."""
    theirs, ours = twins
    x = inputs()
    cache, state = DynamicCache(config=hf_config()), ours.new_cache(BATCH, 0, "cpu", x.dtype)
    with torch.no_grad():
        theirs(x[:, :PROMPT], cache_params=cache), ours(x[:, :PROMPT], cache=state)
    step = x[:, PROMPT:PROMPT + 1]
    formula = {k: BATCH * v for k, v in formulas.decode_flops(SPEC, D).items()}
    assert sum(flops(lambda: ours(step, cache=state)).values()) == sum(formula.values())
    counted = flops(lambda: theirs(step, cache_params=cache))
    recurrence = formula["state_read"] + formula["state_write"] + formula["output"]
    assert counted["aten.convolution"] == 2 * formula["conv1d"]
    assert sum(counted.values()) == sum(formula.values()) - recurrence + formula["conv1d"]


def test_full_size_parameters_on_meta():
    """Qwen3-Next-80B-A3B's shape (transformers' config defaults are that model's): one layer's
    mixer, counted on meta, equals the formula."""
    config = transformers.Qwen3NextConfig()
    with torch.device("meta"):
        theirs = Qwen3NextGatedDeltaNet(config, layer_idx=0)
    g = from_mapping(GatedDeltaNetSpec, dict(kind="gated_deltanet", n_key_heads=16,
                                             n_value_heads=32, key_head_dim=128,
                                             value_head_dim=128, conv_kernel=4))
    assert sum(p.numel() for p in theirs.parameters()) == formulas.params(g, config.hidden_size)
