"""Nemotron-H (single-block layers: Mamba-2, attention without RoPE, or a squared-ReLU MLP)
against transformers' NemotronHForCausalLM: logits of a tiny config built both ways with the
same weights (a prompt of three scan chunks, then 12 cached decode steps, fp32), two negative
controls (RoPE on the attention layers; no dt clamp), the cache both sides hold against the
estimate, FLOPs under FlopCounterMode, the presets' parameters on the meta device, the
checkpoints' two name layouts, and make-checkpoint then generate. (Checkpoints both ways, on a
config without the clamp, are the conformance case's.)
"""

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from archscope.estimate import decode_flops, kv_cache_bytes, prefill_flops
from archscope.estimate.state import state_bytes
from archscope.kinds import mamba2 as mamba2_formulas
from archscope.measure.reference import cache_kwargs, returned_cache
from archscope.spec.hf import spec_to_hf_config
from archscope.weights import table_for
from parity import (checked_preset, decode_stepwise, load_same_weights, max_diff,
                    slots_in_use_bytes, tiny_spec, twin_case)

TOL = 1e-4  # fp32; measured differences are about 4e-6 on logits of size ~5
T, PREFILL = 23, 11  # an 11-token prompt = chunks of 4, 4 and 3, then 12 cached decode steps
PATTERN = "M-*-M*"  # every block type, two of each mixer, attention after a Mamba layer
MAMBA = dict(kind="mamba2", n_heads=4, head_dim=8, d_state=6, n_groups=2, conv_kernel=4,
             chunk_size=4, dt_limit_min=0.5)


def nemotron(**changes):
    at = {ch: [i for i, c in enumerate(PATTERN) if c == ch] for ch in "M*-"}
    base = dict(d_model=32, n_layers=len(PATTERN), position=dict(kind="none"),
                attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=8),
                ffn=dict(kind="relu2", d_ff=48), mixer=MAMBA,
                layers=[dict(select=at["M"], ffn="none"),
                        dict(select=at["*"], mixer="attention", ffn="none"),
                        dict(select=at["-"], mixer="none")])
    return tiny_spec(**{**base, **changes})


def _dt_below_the_clamp(hf):
    """dt_bias around softplus^-1(0.5): the clamp at time_step_min 0.5 bites on some heads."""
    g = torch.Generator().manual_seed(3)
    for name, p in hf.named_parameters():
        if name.endswith("dt_bias"):
            p.copy_(torch.randn(p.shape, generator=g) - 0.5)


@pytest.fixture(scope="module")
def setup():
    return twin_case(nemotron(), T, prepare=_dt_below_the_clamp)


def test_transformers_builds_the_same_blocks(setup):
    spec, hf, ours, _, _ = setup
    assert type(hf).__name__ == "NemotronHForCausalLM"
    assert hf.config.hybrid_override_pattern == PATTERN
    assert hf.config.time_step_min == 0.5
    for layer, theirs in zip(ours.layers, hf.model.layers):
        mine = {n for n, _ in layer.named_children()} - {"slot"}
        mixer = {"linear_attention": "mixer", "full_attention": "self_attn", "mlp": "mlp"}
        norm = "post_attention_layernorm" if theirs.block_type == "mlp" else "input_layernorm"
        assert mine == {norm, mixer[theirs.block_type]}


def test_prefill_logits_match(setup):
    _, _, ours, ids, reference = setup
    with torch.no_grad():
        assert reference.abs().max() > 1
        assert max_diff(ours(ids), reference) < TOL


def test_cached_decoding_matches_transformers_cache(setup):
    """Transformers' own cached decoding (its DynamicCache) against ours, step for step: the
    decode steps run the recurrence unclamped on both sides, so they are compared with
    transformers' cached steps, not with its one-pass logits."""
    spec, hf, ours, ids, reference = setup
    mine = decode_stepwise(ours, ids, prefill=PREFILL)
    theirs = _hf_stepwise(hf, ids, PREFILL)[0]
    assert max_diff(mine[:, :PREFILL], reference[:, :PREFILL]) < TOL
    assert max_diff(mine, theirs) < TOL


@torch.no_grad()
def _hf_stepwise(hf, ids, prefill):
    out = hf(ids[:, :prefill], use_cache=True)
    cache, logits = returned_cache(out), [out.logits]
    for i in range(prefill, ids.shape[1]):
        out = hf(ids[:, i:i + 1], use_cache=True, **cache_kwargs(hf, cache))
        logits.append(out.logits)
    return torch.cat(logits, 1), cache


def test_rope_on_the_attention_layers_breaks_parity(setup):
    """Negative control: the same weights with RoPE on q and k (what Nemotron-H's attention
    does not do) move the logits far past the tolerance."""
    _, hf, _, ids, reference = setup
    roped = load_same_weights(nemotron(position=dict(kind="rope", theta=10000.0)), hf,
                              "nemotron_h")
    with torch.no_grad():
        assert max_diff(roped(ids), reference) > 100 * TOL


def test_dropping_the_dt_clamp_breaks_parity(setup):
    """Negative control: time_step_min reaches the mixer (without the clamp: far off)."""
    _, hf, _, ids, reference = setup
    loose = load_same_weights(nemotron(mixer={**MAMBA, "dt_limit_min": 0.0}), hf, "nemotron_h")
    with torch.no_grad():
        assert max_diff(loose(ids), reference) > 100 * TOL


def _mamba_layers(spec):
    return sum(layer.state is not None for layer in spec.plan)


def test_cache_bytes_equal_the_estimate_both_sides(setup):
    """After the prefill and after the 12 decode steps, the KV bytes of the tokens seen (ours:
    the slots in use of its static cache; transformers': its growing DynamicLayer tensors)
    and the state bytes (conv: all K columns, in fp32 here; SSM: fp32) equal the estimate."""
    spec, hf, ours, ids, _ = setup
    batch = ids.shape[0]
    for seen in (PREFILL, T):
        cache = ours.new_cache(batch, T)
        decode_stepwise_into(ours, ids[:, :seen], cache)
        theirs = _hf_stepwise(hf, ids[:, :seen], PREFILL)[1]
        kv = kv_cache_bytes(spec, seen, batch, "fp32")
        assert kv == 2 * 2 * 2 * 8 * 4 * seen * batch  # 2 layers, k and v, 2 heads x 8, fp32
        assert slots_in_use_bytes(cache) == kv == sum(
            layer.keys.nbytes + layer.values.nbytes for layer in theirs.layers
            if hasattr(layer, "keys") and layer.keys is not None)
        state = state_bytes(spec, batch, "fp32")
        assert state == batch * _mamba_layers(spec) * mamba2_formulas.state_bytes(spec.mixer, 4)
        assert cache.state_nbytes() == state == sum(
            t.nbytes for layer in theirs.layers for name in ("conv_states", "recurrent_states")
            for t in getattr(layer, name, {}).values())  # per state_idx: one each here


@torch.no_grad()
def decode_stepwise_into(model, ids, cache):
    model(ids[:, :PREFILL], cache)
    for i in range(PREFILL, ids.shape[1]):
        model(ids[:, i:i + 1], cache)


def _flops(fn) -> int:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def test_flops_equal_transformers_but_its_discarded_conv_outputs(setup):
    """Prefill (attention over the full square, as eager computes it) and one decode step
    against FlopCounterMode over transformers' torch path. The only difference, per Mamba layer
    and sequence, is the conv outputs transformers computes and throws away
    (tests/nn/test_mamba2_mixer.py::test_flops): its prefill conv pads K-1 columns on both
    sides, 2*W*K*(K-1) more; its decode conv runs over K+1 columns for one output, 2*W*K more."""
    spec, hf, _, ids, _ = setup
    batch, m = ids.shape[0], spec.mixer
    extra = batch * _mamba_layers(spec) * 2 * m.conv_dim * m.conv_kernel
    prompt = ids[:, :PREFILL]
    assert _flops(lambda: hf(prompt)) == (
        prefill_flops(spec, PREFILL, batch, attention="full").total + extra * (m.conv_kernel - 1))
    cache = _hf_stepwise(hf, prompt, PREFILL)[1]
    step = _flops(lambda: hf(ids[:, PREFILL:PREFILL + 1], use_cache=True,
                            **cache_kwargs(hf, cache)))
    assert step == decode_flops(spec, PREFILL + 1, batch).total + extra


@pytest.mark.parametrize("name, total", [("nemotron-h-4b", 4_489_223_040),
                                         ("nemotron-h-8b", 8_100_852_736),
                                         ("nemotron-nano-9b-v2", 8_888_227_328)])
def test_preset_params_on_meta_equal_transformers_and_the_estimate(name, total):
    spec, p, model = checked_preset(name, "NemotronHForCausalLM")
    assert p.total == p.active == total  # dense: every parameter is active
    assert [b.block_type for b in model.model.layers] == [
        {"M": "linear_attention", "*": "full_attention", "-": "mlp"}[c]
        for c in spec_to_hf_config(spec)["hybrid_override_pattern"]]


def test_make_checkpoint_then_generate(run_cli, tmp_path):
    folder = tmp_path / "nh"
    sets = ["vocab_size=512", "d_model=64", "n_layers=4", "ffn.d_ff=96", "mixer.n_heads=4",
            "mixer.head_dim=16", "mixer.d_state=8", "mixer.n_groups=2",
            "layers=[{select: [0, 2], ffn: none}, {select: [1], mixer: attention, ffn: none},"
            " {select: [3], mixer: none}]"]
    code, _, err = run_cli("make-checkpoint", "nemotron-h-4b", "--weights", str(folder),
                           "--dtype", "fp32", *[a for s in sets for a in ("--set", s)])
    assert code == 0, err
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    assert type(hf).__name__ == "NemotronHForCausalLM"
    code, out, err = run_cli("generate", "--weights", str(folder), "--device", "cpu",
                             "--new-tokens", "4", "Hello")
    assert code == 0, err
    assert "4 new" in err


def test_both_name_layouts_are_read():
    """The table reads transformers 5's module names and the files' backbone.* names alike."""
    table = table_for("nemotron_h")
    assert {r.hf.split(".", 1)[0] for r in table if r.hf != "lm_head.weight"} == {"model",
                                                                                "backbone"}
    assert all(r.alias for r in table if r.hf.startswith("backbone."))
    norms = [r.ours[0].split(".")[2] for r in table if r.hf.endswith("{i}.norm.weight")]
    assert norms == ["input_layernorm", "post_attention_layernorm"] * 2  # model.*, backbone.*
