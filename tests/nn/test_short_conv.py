"""LFM2's gated short conv (the `short_conv` state mixer) against transformers' Lfm2ShortConv,
beyond the conformance cases: the state transformers' own cache object holds after a prefill
(its conv_states, and its attention layers' keys and values) equals archscope's estimate byte
for byte, in fp32 and in bf16, in the dtype transformers keeps (the activations', no fp32
state); one-token decode steps run without F.conv1d (nn/depthwise.py's per-channel matmul) and
match transformers; the state carries the prompt (a negative control); decode FLOPs against
FlopCounterMode over transformers' step.
"""

import copy

import pytest
import torch
import torch.nn.functional as F
import transformers
from torch.utils.flop_counter import FlopCounterMode

from archscope.estimate import decode_flops, kv_cache_bytes
from archscope.estimate.state import state_bytes
from archscope.kinds import short_conv as sc
from archscope.measure.reference import cache_kwargs, returned_cache
from archscope.nn.cache import LayerCache
from parity import (checked_preset, max_diff, slots_in_use_bytes, their_active_params, tiny_spec,
                    twin_case)

TOL = 1e-4
T, PREFILL = 20, 9
MIXER = dict(kind="short_conv", width=64, conv_kernel=3, bias=True)


def lfm2(**changes):
    base = dict(n_layers=3, attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16,
                                           qk_norm="head"),
                mixer=MIXER, layers=[dict(select=[1], mixer="attention")])
    return tiny_spec(**{**base, **changes})


@pytest.fixture(scope="module")
def setup():
    return twin_case(lfm2(), T)


def _conv_layers(spec) -> int:
    return sum(layer.state is not None for layer in spec.plan)


def _theirs_held(cache) -> tuple[int, int, set]:
    """(KV bytes, conv-state bytes, the conv states' dtypes) of transformers' cache object."""
    kv = [t for layer in cache.layers for t in (getattr(layer, "keys", None),
                                                getattr(layer, "values", None))
          if isinstance(t, torch.Tensor)]
    states = [t for layer in cache.layers
              for t in getattr(layer, "conv_states", {}).values() if isinstance(t, torch.Tensor)]
    assert len(states) == 2 and not any(getattr(layer, "recurrent_states", {}).get(0) is not None
                                        for layer in cache.layers)
    return (sum(t.numel() * t.element_size() for t in kv),
            sum(t.numel() * t.element_size() for t in states), {t.dtype for t in states})


@pytest.mark.parametrize("dtype,name", [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_transformers_cache_holds_the_estimate(setup, dtype, name):
    """After a real prefill, transformers' DynamicCache keeps per conv layer conv_states
    [B, width, conv_kernel] in the model's dtype (all conv_kernel columns) and per attention
    layer the prompt's keys and values: together the estimate's state and KV bytes. archscope's
    own cache holds the same."""
    spec, hf, ours, ids, _ = setup
    batch = ids.shape[0]
    theirs_model = transformers.AutoModelForCausalLM.from_config(hf.config).eval()
    theirs_model.load_state_dict(hf.state_dict())
    theirs_model.to(dtype)
    with torch.no_grad():
        cache = returned_cache(theirs_model(ids[:, :PREFILL], use_cache=True))
    kv, state, dtypes = _theirs_held(cache)
    assert dtypes == {dtype}
    assert state == state_bytes(spec, batch, name) == \
        _conv_layers(spec) * batch * spec.mixer.width * spec.mixer.conv_kernel * (
            2 if dtype == torch.bfloat16 else 4)
    assert kv == kv_cache_bytes(spec, PREFILL, batch, name)
    ours = copy.deepcopy(ours).to(dtype)  # (the fixture's model stays fp32)
    mine = ours.new_cache(batch, T)
    with torch.no_grad():
        ours(ids[:, :PREFILL], mine)
    assert (slots_in_use_bytes(mine), mine.state_nbytes()) == (kv, state)
    assert {layer.conv.dtype for layer in mine.layers
            if layer is not None and not isinstance(layer, LayerCache)} == {dtype}


def test_decode_steps_match_without_conv1d(setup, monkeypatch):
    """The prefill through F.conv1d, then each one-token step with F.conv1d forbidden (the
    depthwise per-channel matmul), against transformers' full-sequence logits."""
    _, _, ours, ids, reference = setup
    cache = ours.new_cache(ids.shape[0], T)
    with torch.no_grad():
        outs = [ours(ids[:, :PREFILL], cache)]

        def forbidden(*args, **kwargs):
            raise AssertionError("F.conv1d in a one-token decode step")

        monkeypatch.setattr(F, "conv1d", forbidden)
        outs += [ours(ids[:, i:i + 1], cache) for i in range(PREFILL, T)]
    assert max_diff(torch.cat(outs, dim=1), reference) < TOL


def test_the_state_carries_the_prompt(setup):
    """Negative control: decoding after the conv windows are reset gives other logits."""
    _, _, ours, ids, reference = setup
    cache = ours.new_cache(ids.shape[0], T)
    with torch.no_grad():
        ours(ids[:, :PREFILL], cache)
        for layer in cache.layers:
            if layer is not None and not isinstance(layer, LayerCache):
                layer.reset()
        forgetful = ours(ids[:, PREFILL:PREFILL + 1], cache)
    assert max_diff(forgetful, reference[:, PREFILL:PREFILL + 1]) > 0.1


def test_decode_flops_against_transformers(setup):
    """One cached step: transformers' causal_conv1d_update convolves the cached conv_kernel
    columns and the new one without padding, two outputs per channel of which it keeps the
    last; the estimate counts one (per conv layer and sequence, one conv term fewer)."""
    spec, hf, _, ids, _ = setup
    batch = ids.shape[0]
    with torch.no_grad():
        out = hf(ids[:, :PREFILL], use_cache=True)
        with FlopCounterMode(display=False) as counter:
            hf(ids[:, PREFILL:PREFILL + 1], **cache_kwargs(hf, returned_cache(out)),
               use_cache=True)
    conv = sc.decode_flops(spec.mixer, spec.d_model)["conv"]
    estimated = decode_flops(spec, PREFILL + 1, batch=batch).total
    assert counter.get_total_flops() - estimated == _conv_layers(spec) * batch * conv


def test_lfm2_preset_on_meta_equals_transformers_and_the_card():
    """LFM2-2.6B: archscope's build = transformers' Lfm2ForCausalLM = the estimate = the
    model card's 2,569,272,320; its state is 22 conv windows of 2048 x 3, in bf16 12 KiB each."""
    spec, p, theirs = checked_preset("lfm2-2.6b", "Lfm2ForCausalLM")
    assert p.total == 2_569_272_320
    assert [layer.layer_type for layer in spec.plan].count("full_attention") == 8
    assert state_bytes(spec, 1, "bf16") == 22 * 2048 * 3 * 2
    assert theirs.config.layer_types == ["conv" if layer.state is not None else "full_attention"
                                         for layer in spec.plan]


def test_lfm2_moe_preset_on_meta_equals_transformers():
    """LFM2-8B-A1B: archscope's build = transformers' Lfm2MoeForCausalLM = the estimate, total
    and active; transformers' own active count agrees. The card says "8.3B total, 1.5B active":
    8.34B here, and 1.56B active with the (tied) embedding counted."""
    spec, p, theirs = checked_preset("lfm2-8b-a1b", "Lfm2MoeForCausalLM")
    assert (p.total, p.active) == (8_339_929_856, 1_557_740_288)
    assert p.active == their_active_params(theirs, 4)
    assert [type(layer.feed_forward).__name__ for layer in theirs.model.layers[:3]] == \
        ["Lfm2MoeMLP", "Lfm2MoeMLP", "Lfm2MoeSparseMoeBlock"]


@pytest.mark.slow
@pytest.mark.parametrize("preset,sets", [
    ("lfm2-2.6b", ["ffn.d_ff=96"]),
    ("lfm2-8b-a1b", ["ffn.n_experts=4", "ffn.top_k=2", "ffn.d_expert=32"]),
])
def test_make_checkpoint_of_a_preset_loads_in_transformers_and_generates(setup, tmp_path,
                                                                         run_cli, preset, sets):
    """make-checkpoint of a narrowed preset (every layer kept, so its layer pattern and dense
    layers are the preset's) loads in transformers with the same logits, and `generate`
    decodes from it through the conv state."""
    from archscope.weights import load_checkpoint

    folder = tmp_path / "ours"
    sets = [*sets, "vocab_size=512", "d_model=64", "mixer.width=64", "attention.n_heads=4",
            "attention.n_kv_heads=2", "attention.head_dim=16"]
    code, _, err = run_cli("make-checkpoint", preset, "--weights", str(folder), "--dtype",
                           "fp32", *[a for s in sets for a in ("--set", s)])
    assert code == 0, err
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    mine, _ = load_checkpoint(folder)
    short = setup[3][:, :9] % 512
    with torch.no_grad():
        assert max_diff(mine(short), theirs(short).logits) < TOL
    code, out, err = run_cli("generate", "--weights", str(folder), "--device", "cpu",
                             "--new-tokens", "4", "Hello")
    assert code == 0, err
    assert "4 new" in err
