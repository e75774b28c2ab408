"""MiniMax-01's lightning attention beyond the conformance suite: what transformers' own
MiniMaxCache holds after a prefill (state and KV bytes, and the dtype it keeps) against the
estimate and archscope's cache; the blocked prefill's and the decode step's FLOPs, term by term,
under FlopCounterMode over transformers' MiniMaxLightningAttention and over ours; the decay
buffers derived from the depth; the preset's parameters on the meta device."""

from __future__ import annotations

import copy

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from archscope.estimate import kv_cache_bytes
from archscope.estimate.state import state_bytes
from archscope.kinds import lightning as kind
from archscope.measure.reference import returned_cache
from archscope.spec import with_overrides
from archscope.spec.lightning import LightningSpec, decay_rates
from parity import checked_preset, max_diff, tiny_spec, twin_case

T, PREFILL, BATCH = 18, 10, 2  # blocks of 4: the prefill runs 4 + 4 + 2
MIXER = dict(kind="lightning", n_heads=4, head_dim=16, block_size=4)


def minimax(**changes):
    base = dict(n_layers=3, norm=dict(kind="rmsnorm", eps=1e-5, position="normed_residual"),
                mixer=MIXER, ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=32),
                multipliers=dict(skip=1.5, residual=0.75),
                layers=[dict(select=[1], mixer="attention")])
    return tiny_spec(**{**base, **changes})


@pytest.fixture(scope="module")
def setup():
    return twin_case(minimax(), T)


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@pytest.mark.parametrize("dtype,name", [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_transformers_cache_holds_the_estimate(setup, dtype, name):
    """After a prefill, MiniMaxCache's linear_cache holds one [B, H, d_h, d_h] state per
    lightning layer in the model's dtype (no fp32 upcast: bf16 under bf16), its attention
    layers the prompt's keys and values: the estimate's state_bytes and kv_cache_bytes at that
    dtype, which archscope's own cache holds too."""
    spec, hf, ours, ids, _ = setup
    with torch.no_grad():  # copies: a round trip through bf16 would round the fixture's weights
        cache = returned_cache(copy.deepcopy(hf).to(dtype)(ids[:, :PREFILL], use_cache=True))
    states = [t for t in cache.linear_cache if isinstance(t, torch.Tensor)]
    assert len(states) == sum(layer.state is not None for layer in spec.plan)
    assert {t.dtype for t in states} == {dtype}
    assert _nbytes(states) == state_bytes(spec, BATCH, name)
    kv = [t for layer in cache.layers for t in (layer.keys, layer.values)
          if isinstance(t, torch.Tensor)]
    assert _nbytes(kv) == kv_cache_bytes(spec, PREFILL, BATCH, name)
    mine = copy.deepcopy(ours).to(dtype)
    held = mine.new_cache(BATCH, T)
    with torch.no_grad():
        mine(ids[:, :PREFILL], held)
    assert held.state_nbytes() == state_bytes(spec, BATCH, name)
    assert {layer.recurrent.dtype for layer in held.layers if hasattr(layer, "recurrent")} == \
        {dtype}


def test_the_state_after_a_prefill_is_transformers(setup):
    """The matrices themselves, fp32: what the blocked prefill leaves equals transformers'
    (entries up to ~40 here: 1e-4 is a few ulps of them after three layers)."""
    spec, hf, ours, ids, _ = setup
    with torch.no_grad():
        theirs = returned_cache(hf(ids[:, :PREFILL], use_cache=True)).linear_cache
        held = ours.new_cache(BATCH, T)
        ours(ids[:, :PREFILL], held)
    for i, layer in enumerate(spec.plan):
        if layer.state is not None:
            assert max_diff(held.layers[i].recurrent, theirs[i]) < 1e-4


def _projections(spec, tokens: int) -> int:
    return 2 * BATCH * tokens * sum(p.macs for p in kind.parts(spec.mixer, spec.d_model))


def _layer_pair(setup, index: int = 0):
    spec, hf, ours, ids, _ = setup
    return spec, hf.model.layers[index].self_attn, ours.layers[index].mixer


@pytest.mark.parametrize("tokens", [10, 8, 3])
def test_prefill_flops_term_by_term(setup, tokens):
    """FlopCounterMode over transformers' lightning layer and over ours, from a zero state,
    against the projections plus scan_flops (blocks of 4: 4+4+2, 4+4, and one short block)."""
    spec, theirs, mine = _layer_pair(setup)
    x = torch.randn(BATCH, tokens, spec.d_model)
    estimate = _projections(spec, tokens) + BATCH * sum(kind.scan_flops(spec.mixer,
                                                                        tokens).values())
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        theirs(x, position_embeddings=None, attention_mask=None)
    assert counted.get_total_flops() == estimate
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        mine(x)
    assert counted.get_total_flops() == estimate


def test_scan_flops_by_hand():
    """10 tokens in blocks of 4 (4, 4, 2), one head of 2: the squares sum to 36."""
    g = LightningSpec(kind="lightning", n_heads=1, head_dim=2, block_size=4)
    assert kind.blocks(g, 10) == [4, 4, 2]
    assert kind.scan_flops(g, 10) == {"intra_qk": 2 * 36 * 2, "intra_av": 2 * 36 * 2,
                                      "state_read": 2 * 10 * 4, "state_write": 2 * 10 * 4}
    assert kind.step_flops(g) == {"state_write": 2 * 4, "output": 2 * 4}


def test_decode_step_flops_term_by_term(setup):
    """One token with a state: transformers' recurrent path and ours (the step, not the block
    machinery, which would count a 1 x 1 square more) against the projections + step_flops."""
    spec, theirs, mine = _layer_pair(setup)
    g = spec.mixer
    x = torch.randn(BATCH, 1, spec.d_model)
    state = torch.randn(BATCH, g.n_heads, g.head_dim, g.head_dim)
    cache = transformers.models.minimax.modeling_minimax.MiniMaxCache()
    cache.set_linear_cache(0, state.clone())
    estimate = _projections(spec, 1) + BATCH * sum(kind.step_flops(g).values())
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        reference, _ = theirs(x, position_embeddings=None, attention_mask=None, cache=cache)
    assert counted.get_total_flops() == estimate
    held = mine.new_cache(BATCH, 4, x.device, x.dtype)
    held.recurrent.copy_(state)
    with torch.no_grad(), FlopCounterMode(display=False) as counted:
        out = mine(x, cache=held)
    assert counted.get_total_flops() == estimate
    assert max_diff(out, reference) < 1e-5
    assert max_diff(held.recurrent, cache.linear_cache[0]) < 1e-5


def test_decays_follow_the_depth(setup):
    """The buffers are transformers' bit for bit on every lightning layer (the first and the
    last differ), and spec/lightning.decay_rates states the same rates."""
    spec, hf, ours, _, _ = setup
    rates = []
    for layer in spec.plan:
        if layer.state is None:
            continue
        theirs, mine = hf.model.layers[layer.index].self_attn, ours.layers[layer.index].mixer
        for name in ("slope_rate", "query_decay", "key_decay", "diagonal_decay"):
            assert torch.equal(getattr(mine, name), getattr(theirs, name)), name
        expected = decay_rates(spec.mixer.n_heads, layer.index, spec.n_layers)
        assert mine.slope_rate.flatten().tolist() == pytest.approx(expected, rel=1e-6)
        rates.append(mine.slope_rate)
    assert not torch.equal(rates[0], rates[-1])


@pytest.mark.slow
def test_preset_params_on_meta_equal_transformers_and_the_estimate():
    """minimax-text-01 on the meta device: archscope's build, transformers' class for the
    exported config and the estimate hold the same total; the card's 456B total and 45.9B
    active (without the embedding and the head); the card's half-head RoPE changes none."""
    from archscope.estimate import count_params
    from archscope.nn import build_model
    from archscope.spec import load_spec
    from archscope.spec.hf import spec_to_hf_config
    from parity import active_params_from_modules

    spec = load_spec("minimax-text-01")
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**spec_to_hf_config(spec)))
    assert type(theirs).__name__ == "MiniMaxForCausalLM"
    ours = build_model(spec, device="meta")
    p = count_params(spec)
    assert sum(x.numel() for x in ours.parameters()) == p.total == \
        sum(x.numel() for x in theirs.parameters()) == 456_089_655_296
    assert p.active == active_params_from_modules(ours)
    assert round((p.active - 2 * p.embedding) / 1e9, 1) == 45.9
    assert [layer.state is None for layer in spec.plan].count(True) == 10
    assert state_bytes(spec, 1, "bf16") == 70 * 64 * 128 * 128 * 2
    half = with_overrides(spec, ["attention.rotary_fraction=0.5"])
    assert count_params(half) == p and state_bytes(half, 1, "bf16") == state_bytes(spec, 1, "bf16")


_SMALL = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
              num_attention_heads=4, num_key_value_heads=2, head_dim=16,
              max_position_embeddings=64, num_local_experts=4, block_size=4)


def _read(tmp_path, **keys):
    import json
    import warnings

    from archscope.spec import load_spec

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "minimax", **_SMALL, **keys}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # keys the file lacks: the class defaults, noted
        return load_spec(tmp_path)


def test_the_reader_follows_the_class(tmp_path):
    """No layer_types: MiniMaxConfig's rule (even layers attend); the published files' keys
    that no transformers module reads (rotary_dim, postnorm) change nothing; alpha and beta
    1 leave no multipliers; the lightning layers take the attention's heads."""
    spec = _read(tmp_path, rotary_dim=8, postnorm=True)
    assert [layer.state is None for layer in spec.plan] == [True, False, True]
    assert spec.multipliers is None and spec.norm.position == "normed_residual"
    assert (spec.mixer.n_heads, spec.mixer.head_dim, spec.mixer.block_size) == (4, 16, 4)
    assert spec.attention.rotary_fraction in (None, 1.0)
    every = _read(tmp_path, layer_types=["linear_attention"] * 3)
    assert not every.layers and all(layer.state is not None for layer in every.plan)
    none = _read(tmp_path, layer_types=["full_attention"] * 3)
    assert none.mixer is None


@pytest.mark.parametrize("key", ["linear_attn_alpha_factor", "mlp_beta_factor"])
def test_unequal_scales_are_refused_naming_the_key(tmp_path, key):
    from archscope.errors import SpecError

    with pytest.raises(SpecError, match=key):
        _read(tmp_path, **{key: 2.0})
