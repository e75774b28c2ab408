"""Kimi Linear (Kimi Delta Attention layers with a decay per key channel, MLA without RoPE
every other layer here, DeepSeek-V3's MoE after a dense first layer) against transformers'
KimiLinearForCausalLM: logits of a tiny config built both ways with the same weights over a
prompt longer than one scan chunk of 64 (the conformance case's 18 tokens stay in one), and
with archscope's own chunks of 8 (nine of them); 14 cached decode steps, fp32; negative
controls; the prefill FLOPs; and the state and KV bytes transformers' own cache object holds
after a prefill, in fp32 and in bf16 (the recurrent state stays fp32), against the estimate.
"""

import dataclasses

import pytest
import torch
import transformers

from archscope.estimate import kv_cache_bytes, prefill_flops
from archscope.estimate.state import state_bytes
from archscope.kinds import kimi_delta as kda
from archscope.measure.reference import returned_cache
from archscope.nn.cache import LayerCache
from parity import (hf_eager_prefill_flops, load_same_weights, max_diff, random_correction_bias,
                    slots_in_use_bytes, tiny_spec, twin_case)

TOL = 1e-4
T, PREFILL = 84, 70  # transformers scans in chunks of 64: 70 = 64 + 6
ATTENDS = [1, 3]
MIXER = dict(kind="kimi_delta", n_heads=2, head_dim=16, conv_kernel=4)
MLA = dict(kind="mla", n_heads=4, q_lora_rank=None, kv_lora_rank=16, qk_nope_head_dim=8,
           qk_rope_head_dim=8, v_head_dim=16)


def kimi_linear(**changes):
    base = dict(n_layers=4, max_seq_len=128, position=dict(kind="none"), attention=MLA,
                mixer=MIXER,
                ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=32, n_shared_experts=1,
                         router=dict(method="noaux_tc", scoring="sigmoid", correction_bias=True,
                                     n_group=2, topk_group=1, scaling_factor=1.5)),
                layers=[dict(select=ATTENDS, mixer="attention"),
                        dict(select=[0], ffn=dict(kind="swiglu", d_ff=96))])
    return tiny_spec(**{**base, **changes})


@pytest.fixture(scope="module")
def setup():
    return twin_case(kimi_linear(), T, prepare=random_correction_bias)


@torch.no_grad()
def stepwise(model, ids, cache):
    outs = [model(ids[:, :PREFILL], cache)]
    outs += [model(ids[:, i:i + 1], cache) for i in range(PREFILL, ids.shape[1])]
    return torch.cat(outs, dim=1)


def test_transformers_builds_the_same_layers(setup):
    spec, hf, ours, _, _ = setup
    assert type(hf).__name__ == "KimiLinearForCausalLM"
    assert hf.config.layer_types == [layer.layer_type for layer in spec.plan]
    assert [type(layer.self_attn).__name__ for layer in hf.model.layers] == \
        ["KimiLinearDeltaAttention", "KimiLinearAttention"] * 2
    assert not hasattr(hf.model, "rotary_emb")  # no RoPE anywhere
    assert [layer.mixer_name for layer in ours.layers] == ["mixer", "self_attn"] * 2


@pytest.mark.slow
def test_prefill_logits_match_in_64_and_in_8_token_chunks(setup):
    spec, hf, ours, ids, reference = setup
    assert reference.abs().max() > 1  # far from trivial
    small = dataclasses.replace(spec.mixer, chunk_size=8)
    eights = load_same_weights(dataclasses.replace(spec, mixer=small), hf, "kimi_linear")
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < TOL
        assert max_diff(eights(ids), reference) < TOL


@pytest.mark.slow
def test_cached_decoding_matches(setup):
    """A 70-token prefill (a full chunk and a partial one), then 14 steps through the cache."""
    _, _, ours, ids, reference = setup
    assert max_diff(stepwise(ours, ids, ours.new_cache(2, T)), reference) < TOL


@pytest.mark.slow
def test_negative_controls(setup):
    """The checks can fail: a decay shared by a head's channels (each head's dt_bias averaged,
    Gated DeltaNet's form) gives other logits; and decoding with the KDA state dropped after the
    prefill gives other next tokens' logits."""
    spec, hf, ours, ids, reference = setup
    shared = load_same_weights(spec, hf, "kimi_linear")
    with torch.no_grad():
        for layer in shared.layers:
            if layer.mixer_name == "mixer":
                bias = layer.mixer.forget_gate.dt_bias
                bias.copy_(bias.view(spec.mixer.n_heads, -1).mean(-1, keepdim=True)
                           .expand(-1, spec.mixer.head_dim).reshape(-1))
        assert max_diff(shared(ids), reference) > 1e-2
    cache = ours.new_cache(2, T)
    with torch.no_grad():
        ours(ids[:, :PREFILL], cache)
        for state in cache.layers:
            if state is not None and not isinstance(state, LayerCache):
                state.reset()
        forgetful = ours(ids[:, PREFILL:PREFILL + 1], cache)
    assert max_diff(forgetful, reference[:, PREFILL:PREFILL + 1]) > 0.1


def _kda_layers(spec) -> int:
    return sum(layer.state is not None for layer in spec.plan)


@pytest.mark.slow
def test_prefill_flops_against_transformers(setup):
    """FlopCounterMode over transformers' eager model against the estimate. Per KDA layer and
    sequence the two differ by exactly: intra_kk, intra_qk and ut_solve, in the estimate
    (transformers forms the chunk's decayed k.k and q.k as elementwise products summed over
    the channels, and solves by a row loop); the solved system times v_beta and k_beta, in
    transformers (2 * P*C*2h*H, two matmuls the estimate's solve stands for); the conv's
    padding, in transformers (2*(K-1)*K*conv_dim outputs sliced off)."""
    spec = setup[0]
    m, batch = spec.mixer, 2
    terms = kda.prefill_flops(m, spec.d_model, PREFILL)
    padded = kda.n_chunks(m, PREFILL) * m.chunk_size
    solved_products = 2 * padded * m.chunk_size * 2 * m.head_dim * m.n_heads
    padded_conv = 2 * (m.conv_kernel - 1) * m.conv_kernel * m.conv_dim
    counted = hf_eager_prefill_flops(spec, batch=batch, tokens=PREFILL,
                                     experts_implementation="eager")
    estimated = prefill_flops(spec, PREFILL, batch=batch, attention="full").total
    per_layer = (terms["intra_kk"] + terms["intra_qk"] + terms["ut_solve"] - solved_products
                 - padded_conv)
    assert estimated - counted == _kda_layers(spec) * batch * per_layer


def _theirs(hf, ids):
    """(KV bytes, state bytes, state dtypes) transformers' own cache holds after `ids`."""
    with torch.no_grad():
        cache = returned_cache(hf(ids, use_cache=True))
    kv = [t for layer in cache.layers for t in (getattr(layer, "keys", None),
                                                getattr(layer, "values", None))
          if isinstance(t, torch.Tensor)]
    conv = [t for layer in cache.layers for t in getattr(layer, "conv_states", {}).values()
            if isinstance(t, torch.Tensor)]
    rec = [t for layer in cache.layers for t in getattr(layer, "recurrent_states", {}).values()
           if isinstance(t, torch.Tensor)]
    size = lambda ts: sum(t.numel() * t.element_size() for t in ts)  # noqa: E731
    assert len(conv) == len(rec) == 2
    return size(kv), size(conv) + size(rec), {t.dtype for t in conv}, {t.dtype for t in rec}


@pytest.mark.slow
def test_cache_bytes_equal_the_estimate_and_transformers(setup):
    """After the prefill and the decode steps, archscope's cache holds the estimate: KV (the
    MLA latent and its unrotated key) for the attention layers' tokens, plus the constant KDA
    state. transformers' DynamicCache after a prefill holds the same bytes: conv_states
    [B, 3*H*h, K] in the activations' dtype and recurrent_states [B, H, h, h] in fp32."""
    spec, hf, ours, ids, _ = setup
    batch = ids.shape[0]
    cache = ours.new_cache(batch, T)
    with torch.no_grad():
        ours(ids[:, :PREFILL], cache)
    state = state_bytes(spec, batch, "fp32")
    assert (slots_in_use_bytes(cache), cache.state_nbytes()) == \
        (kv_cache_bytes(spec, PREFILL, batch, "fp32"), state)
    with torch.no_grad():
        for i in range(PREFILL, T):
            ours(ids[:, i:i + 1], cache)
    assert cache.state_nbytes() == state
    kv, held, _, _ = _theirs(hf, ids[:, :PREFILL])
    assert (kv, held) == (kv_cache_bytes(spec, PREFILL, batch, "fp32"), state)


@pytest.mark.slow
def test_bf16_keeps_the_recurrent_state_in_fp32_as_estimated(setup):
    """In bf16 transformers keeps the conv window in bf16 and the recurrent state in fp32; the
    estimate at bf16 says the same bytes, and so does archscope's own cache."""
    spec, hf, _, ids, _ = setup
    theirs = transformers.AutoModelForCausalLM.from_config(hf.config, dtype=torch.bfloat16)
    theirs.load_state_dict(hf.state_dict())
    kv, held, conv, rec = _theirs(theirs.eval(), ids[:, :PREFILL])
    assert (conv, rec) == ({torch.bfloat16}, {torch.float32})
    assert (kv, held) == (kv_cache_bytes(spec, PREFILL, 2, "bf16"), state_bytes(spec, 2, "bf16"))
    ours = load_same_weights(spec, hf, "kimi_linear").to(torch.bfloat16)
    cache = ours.new_cache(2, T)
    with torch.no_grad():
        ours(ids[:, :PREFILL], cache)
    assert cache.state_nbytes() == state_bytes(spec, 2, "bf16")
    assert {s.recurrent.dtype for s in cache.layers if not isinstance(s, LayerCache)
            and s is not None} == {torch.float32}


@pytest.mark.slow
def test_preset_params_on_meta_equal_transformers_and_the_estimate():
    from parity import checked_preset

    spec, p, _ = checked_preset("kimi-linear-48b-a3b", "KimiLinearForCausalLM")
    assert p.total == 49_122_675_072  # "48B total" on the card (embedding and head included)
    assert p.active == 3_484_453_248  # "3B activated"
    kinds = [layer.layer_type for layer in spec.plan]
    assert (kinds.count("full_attention"), kinds.count("linear_attention")) == (7, 20)
    # per sequence: 20 KDA layers of conv 12,288 x 4 (bf16) + 32 x 128 x 128 (fp32)
    assert state_bytes(spec, 1, "bf16") == 20 * (12_288 * 4 * 2 + 32 * 128 * 128 * 4)


def ling(**changes):
    """A Ling 3 hybrid: full-rank KDA gates with the bounded decay, MLA with RoPE and a head
    gate on layers 1 and 3."""
    mixer = dict(MIXER, gates="full_rank", gate_lower_bound=-5.0)
    return kimi_linear(**{"position": dict(kind="rope", theta=10000.0), "mixer": mixer,
                          "attention": dict(MLA, head_gate=True), **changes})


@pytest.mark.slow
def test_ling_prefill_decode_and_cache_bytes_in_bf16():
    """BailingHybridForCausalLM: the logits over two scan chunks and the cached decode (fp32),
    then in bf16 transformers' own cache after a prefill holds the estimate (conv window bf16,
    recurrent state fp32)."""
    spec, hf, ours, ids, reference = twin_case(ling(), T, prepare=random_correction_bias)
    assert type(hf).__name__ == "BailingHybridForCausalLM"
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < TOL
    assert max_diff(stepwise(ours, ids, ours.new_cache(2, T)), reference) < TOL
    theirs = transformers.AutoModelForCausalLM.from_config(hf.config, dtype=torch.bfloat16)
    theirs.load_state_dict(hf.state_dict())
    kv, held, conv, rec = _theirs(theirs.eval(), ids[:, :PREFILL])
    assert (conv, rec) == ({torch.bfloat16}, {torch.float32})
    assert (kv, held) == (kv_cache_bytes(spec, PREFILL, 2, "bf16"), state_bytes(spec, 2, "bf16"))
