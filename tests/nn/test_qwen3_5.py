"""Qwen3.5 (split Gated DeltaNet projections, gated attention every other layer here, (1 + weight)
RMSNorms, a dense MLP or a MoE on every layer) against transformers' Qwen3_5ForCausalLM and
Qwen3_5MoeForCausalLM: logits over a prompt longer than one scan chunk of 64 (which the
conformance cases' 18 tokens do not reach), then 14 cached decode steps, fp32; a negative
control on the split projections' names; decode FLOPs under FlopCounterMode; the state and KV
bytes transformers' own cache object holds after a prefill against the estimate, in fp32 and
under bf16 weights (the recurrent state kept in fp32, the conv window in the activations'
dtype); the presets' parameters on meta.
"""

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from archscope.estimate import decode_flops, kv_cache_bytes
from archscope.estimate.state import state_bytes
from archscope.kinds import gated_deltanet as gdn
from archscope.measure.reference import cache_kwargs, returned_cache
from parity import (checked_preset, max_diff, slots_in_use_bytes, their_cache_bytes, tiny_spec,
                    twin_case)

pytestmark = pytest.mark.slow  # twin models over 84 tokens: seconds each

TOL = 1e-4
# the cached steps sum the recurrence in another order than transformers' chunked scan over the
# whole sequence (the reference): rounding grows along the steps (family_cases.py's 2e-4 too)
DECODE_TOL = 2e-4
T, PREFILL = 84, 70  # transformers scans in chunks of 64: 70 = 64 + 6
ATTENDS = [1, 3]
MIXER = dict(kind="gated_deltanet", n_key_heads=2, n_value_heads=4, key_head_dim=16,
             value_head_dim=12, conv_kernel=4, projections="split")
FFNS = {"dense": dict(kind="swiglu", d_ff=96),
        "moe": dict(kind="moe", n_experts=4, top_k=2, d_expert=32, n_shared_experts=1,
                    d_shared=48, shared_gate=True)}
CLASSES = {"dense": "Qwen3_5ForCausalLM", "moe": "Qwen3_5MoeForCausalLM"}


def qwen3_5(ffn: str):
    return tiny_spec(n_layers=4, max_seq_len=128,
                     norm=dict(kind="rmsnorm", eps=1e-6, unit_offset=True),
                     attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16,
                                    qk_norm="head", output_gate=True, rotary_fraction=0.25),
                     mixer=MIXER, ffn=FFNS[ffn],
                     layers=[dict(select=ATTENDS, mixer="attention")])


@pytest.fixture(scope="module", params=list(FFNS))
def setup(request):
    return (request.param, *twin_case(qwen3_5(request.param), T))


def test_transformers_builds_the_split_projections(setup):
    kind, spec, hf, ours, _, _ = setup
    assert type(hf).__name__ == CLASSES[kind]
    assert [i for i, t in enumerate(hf.config.layer_types) if t == "full_attention"] == ATTENDS
    linear = hf.model.layers[0].linear_attn
    assert type(linear).__name__.endswith("GatedDeltaNet")
    assert {n for n, _ in linear.named_children()} >= {"in_proj_qkv", "in_proj_z", "in_proj_b",
                                                      "in_proj_a"}
    assert not hasattr(linear, "in_proj_qkvz")
    assert [layer.mixer_name for layer in ours.layers] == ["mixer", "self_attn"] * 2


def test_prefill_logits_match(setup):
    _, _, _, ours, ids, reference = setup
    assert reference.abs().max() > 1  # far from trivial
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < TOL


@torch.no_grad()
def test_cached_decoding_matches(setup):
    """A 70-token prefill (a full chunk and a partial one), then 14 steps through the cache."""
    _, _, _, ours, ids, reference = setup
    cache = ours.new_cache(2, T)
    outs = [ours(ids[:, :PREFILL], cache)]
    outs += [ours(ids[:, i:i + 1], cache) for i in range(PREFILL, T)]
    assert max_diff(torch.cat(outs, dim=1), reference) < DECODE_TOL


def test_negative_control_b_and_a_swapped(setup):
    """The check can fail: the same weights with in_proj_b and in_proj_a swapped (beta read as
    the decay's input and the other way round) give other logits."""
    _, _, _, ours, ids, reference = setup
    state = ours.state_dict()
    swapped = {k.replace("in_proj_b.", "in_proj_@.").replace("in_proj_a.", "in_proj_b.")
               .replace("in_proj_@.", "in_proj_a."): v for k, v in state.items()}
    ours.load_state_dict(swapped)
    try:
        with torch.no_grad():
            assert max_diff(ours(ids), reference) > 0.1
    finally:
        ours.load_state_dict(state)


def test_decode_flops_against_transformers(setup):
    """One cached step after the prefill: the estimate (the new token reads PREFILL + 1 keys,
    the split projections' terms) against FlopCounterMode over transformers' step. Per DeltaNet
    layer and sequence transformers' recurrent step writes state_read, state_write and output
    as broadcast products and sums (no matmul the counter sees), and its conv computes two
    outputs over the cached columns and the new one, keeping the last (one conv1d term more):
    as for Qwen3-Next (test_qwen3_next.py)."""
    kind, spec, hf, _, ids, _ = setup
    batch = ids.shape[0]
    extra = {"experts_implementation": "eager"} if kind == "moe" else {}
    eager = transformers.AutoModelForCausalLM.from_config(
        hf.config, attn_implementation="eager", **extra).eval()
    eager.load_state_dict(hf.state_dict())
    with torch.no_grad():
        out = eager(ids[:, :PREFILL], use_cache=True)
        with FlopCounterMode(display=False) as counter:
            eager(ids[:, PREFILL:PREFILL + 1], **cache_kwargs(eager, returned_cache(out)),
                  use_cache=True)
    step = gdn.decode_flops(spec.mixer, spec.d_model)
    assert {"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"} <= set(step)
    unseen = step["state_read"] + step["state_write"] + step["output"] - step["conv1d"]
    layers = sum(layer.state is not None for layer in spec.plan)
    estimated = decode_flops(spec, PREFILL + 1, batch=batch).total
    assert estimated - counter.get_total_flops() == layers * batch * unseen


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_their_cache_after_a_prefill_holds_the_estimate(setup, dtype):
    """transformers' own cache after a prefill of T tokens: its attention layers' keys and
    values (the tokens seen) and its DeltaNet layers' conv_states [B, conv_dim, K] and
    recurrent_states [B, H_v, d_k, d_v] are the estimate's bytes, byte for byte; under bf16
    weights the recurrent state stays fp32 and the conv window takes bf16. archscope's cache
    holds the same after the same prefill."""
    _, spec, hf, ours, ids, _ = setup
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    batch = ids.shape[0]
    model = hf.to(torch_dtype)
    try:
        with torch.no_grad():
            theirs = returned_cache(model(ids, use_cache=True))
    finally:
        hf.to(torch.float32)
    assert their_cache_bytes(theirs) == (kv_cache_bytes(spec, T, batch, dtype),
                                         state_bytes(spec, batch, dtype))
    held = [layer for layer in theirs.layers if getattr(layer, "recurrent_states", None)]
    assert len(held) == sum(layer.state is not None for layer in spec.plan)
    for layer in held:
        assert all(t.dtype == torch.float32 for t in layer.recurrent_states.values())
        assert all(t.dtype == torch_dtype for t in layer.conv_states.values())
    cache = ours.new_cache(batch, T)
    with torch.no_grad():
        ours(ids, cache)
    assert (slots_in_use_bytes(cache), cache.state_nbytes()) == \
        (kv_cache_bytes(spec, T, batch, "fp32"), state_bytes(spec, batch, "fp32"))


@pytest.mark.parametrize("name, hf_class, total, active", [
    ("qwen3.5-0.8b", "Qwen3_5ForCausalLM", 752_393_024, 752_393_024),
    # "35B total/3B active" (transformers' qwen3_5_moe docs)
    ("qwen3.5-35b-a3b", "Qwen3_5MoeForCausalLM", 34_660_610_688, 3_454_988_928)])
def test_preset_params_on_meta_equal_transformers_and_the_estimate(name, hf_class, total,
                                                                   active):
    spec, p, _ = checked_preset(name, hf_class)
    assert (p.total, p.active) == (total, active)
    assert spec.mixer.projections == "split"
