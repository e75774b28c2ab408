"""Granite 4.0 (Mamba-2 and NoPE attention layers, Granite's multipliers, a shared SwiGLU in
every layer plus, with experts, a MoE) against transformers' GraniteMoeHybridForCausalLM, beyond
the conformance cases' parity (a MoE hybrid with RoPE, a dense one without): the MoE hybrid
(Granite 4.0-H-Tiny's shape) and the dense one (4.0-H-Micro's) built alike, negative controls
(the fused shared MLP's halves swapped; RoPE on the NoPE layers), cache and state bytes after a
9-token prefill and 13 decode steps on both sides against the estimate, a decode step's FLOPs
under FlopCounterMode, and the presets' parameters.
"""

import pytest
import torch
import transformers
from transformers import DynamicCache

from archscope.estimate import decode_flops, kv_cache_bytes
from archscope.estimate.state import state_bytes
from archscope.measure.reference import cache_kwargs
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from hybrid_specs import ATTENDS, tiny_granite
from parity import checked_preset, load_same_weights, max_diff, slots_in_use_bytes, twin_case

TOL = 1e-4
T, PREFILL, BATCH = 22, 9, 2  # a prompt of chunks 4, 4 and 1, then 13 cached decode steps
DENSE = dict(kind="swiglu", d_ff=40)


granite = tiny_granite  # the tiny MoE hybrid (tests/hybrid_specs.py)


@pytest.fixture(scope="module", params=["moe", "dense"])
def setup(request):
    return twin_case(granite() if request.param == "moe" else granite(ffn=DENSE), T)


def test_transformers_builds_the_same_layers(setup):
    spec, hf, ours, _, _ = setup
    assert type(hf).__name__ == "GraniteMoeHybridForCausalLM"
    assert hf.model.rotary_emb is None  # position_embedding_type "nope"
    for layer, theirs in zip(ours.layers, hf.model.layers):
        assert hasattr(layer, "mixer") == (theirs.mamba is not None)
        assert (theirs.block_sparse_moe is not None) == spec.moe
    assert [i for i, t in enumerate(hf.config.layer_types) if t == "full_attention"] == ATTENDS


def test_shared_mlp_halves_swapped_breaks_parity(setup):
    """input_linear read as up rows then gate rows: far off, so the split is exercised."""
    spec, hf, _, ids, reference = setup
    swapped = load_same_weights(spec, hf, "granitemoehybrid")
    with torch.no_grad():
        for layer in swapped.layers:
            mlp = layer.mlp.shared_experts if spec.moe else layer.mlp
            gate = mlp.gate_proj.weight.clone()
            mlp.gate_proj.weight.copy_(mlp.up_proj.weight)
            mlp.up_proj.weight.copy_(gate)
        assert max_diff(swapped(ids), reference) > 100 * TOL


def test_rope_on_the_attention_layers_breaks_parity(setup):
    """The same weights with the attention layers rotated (position rope): far off, so NoPE is
    what transformers runs."""
    spec, hf, _, ids, reference = setup
    roped = load_same_weights(spec.replace(position={"kind": "rope", "theta": 10.0}), hf,
                              "granitemoehybrid")
    with torch.no_grad():
        assert max_diff(roped(ids), reference) > 100 * TOL


def _held(cache) -> tuple[int, int]:
    """(KV bytes in the slots archscope's cache has filled, state bytes) of its cache."""
    return slots_in_use_bytes(cache), cache.state_nbytes()


def _theirs(cache) -> tuple[int, int]:
    """(KV bytes, state bytes) transformers' DynamicCache holds (its linear-attention layers
    keep their states per index, in a list or mapping)."""
    def size(*names):
        total = 0
        for layer in cache.layers:
            for name in names:
                held = getattr(layer, name, None)
                held = held.values() if isinstance(held, dict) else held
                for t in (held if isinstance(held, (list, type({}.values()))) else [held]):
                    total += t.numel() * t.element_size() if torch.is_tensor(t) else 0
        return total
    return size("keys", "values"), size("conv_states", "recurrent_states")


def test_cache_and_state_bytes_equal_the_estimate_on_both_sides(setup):
    """After a 9-token prefill and after 13 decode steps, archscope's cache and transformers'
    DynamicCache hold the estimate: K/V of every token on the attention layers (both grow
    by token) and, per Mamba layer, the conv window (all conv_kernel columns, fp32 here) and
    the fp32 SSM state, constant. (archscope's KV cache is allocated for its capacity up
    front; the bytes compared are those of the filled slots, which is what the estimate and
    transformers' growing tensors both count.)"""
    spec, hf, ours, ids, _ = setup
    mine, theirs = ours.new_cache(BATCH, T), DynamicCache(config=hf.config)
    with torch.no_grad():
        for lo, hi in [(0, PREFILL)] + [(t, t + 1) for t in range(PREFILL, T)]:
            ours(ids[:, lo:hi], mine)
            hf(ids[:, lo:hi], use_cache=True, **cache_kwargs(hf, theirs))
            if hi in (PREFILL, T):
                expected = (kv_cache_bytes(spec, hi, BATCH, "fp32"),
                            state_bytes(spec, BATCH, "fp32"))
                assert _held(mine) == _theirs(theirs) == expected
    per_token = 2 * 2 * 8 * 4  # k and v, 2 KV heads x 8, fp32
    assert expected[0] == BATCH * len(ATTENDS) * T * per_token
    assert expected[1] == BATCH * 3 * 4 * ((8 * 8 + 2 * 2 * 8) * 4 + 8 * 8 * 8)


def test_decode_flops_match_transformers_but_its_dropped_conv_outputs(setup):
    """One cached step at context 10: transformers' step = the estimate (projections, the
    experts chosen, attention over 10 keys, the state read out by C as a bmm) + its conv over
    the K cached columns and the new one, of whose two outputs it keeps one (2 * batch *
    conv_dim * K per Mamba layer). The state update itself is elementwise on both sides."""
    from torch.utils.flop_counter import FlopCounterMode

    spec, hf, _, ids, _ = setup
    hf.set_experts_implementation("eager")
    cache = DynamicCache(config=hf.config)
    with torch.no_grad():
        hf(ids[:, :9], use_cache=True, **cache_kwargs(hf, cache))
        with FlopCounterMode(display=False) as counter:
            hf(ids[:, 9:10], use_cache=True, **cache_kwargs(hf, cache))
    m = spec.mixer
    assert counter.get_total_flops() == (decode_flops(spec, 10, batch=BATCH).total
                                         + 3 * 2 * BATCH * m.conv_dim * m.conv_kernel)


PRESETS = {"granite-4.0-h-tiny": (6_939_037_248, 1_465_470_528),
           "granite-4.0-h-micro": (3_191_396_096, 3_191_396_096),
           "granite-4.0-micro": (3_402_836_480, 3_402_836_480)}


@pytest.mark.parametrize("name", PRESETS)
def test_preset_params_on_meta_equal_transformers_and_the_estimate(name):
    # the attention-only member is Granite's network: archscope writes it as GraniteForCausalLM
    _, p, _ = checked_preset(name, "GraniteForCausalLM" if name == "granite-4.0-micro"
                             else "GraniteMoeHybridForCausalLM")
    assert (p.total, p.active) == PRESETS[name]


def test_the_attention_only_member_counts_alike_in_its_own_class():
    """granite-4.0-micro's own config.json says granitemoehybrid: that class, from the spec's
    keys written with the hybrid writer, holds the same parameters."""
    from archscope.spec.families.granitemoehybrid import write as write_granitemoehybrid

    spec = load_spec("granite-4.0-micro")
    config = transformers.GraniteMoeHybridConfig(**write_granitemoehybrid(spec))
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == PRESETS["granite-4.0-micro"][0]
    assert spec_to_hf_config(spec)["model_type"] == "granite"
