"""Qwen3-Next (Gated DeltaNet layers, gated attention every other layer here, (1 + weight)
RMSNorms, a MoE with a gated shared expert of its own width, a dense first layer) against
transformers' Qwen3NextForCausalLM: logits of a tiny config built both ways with the same
weights over a prompt longer than one scan chunk of 64 (which the conformance case's 18 tokens
do not reach), then 14 cached decode steps, fp32; negative controls; the preset's parameters on
the meta device; prefill and decode FLOPs under FlopCounterMode term by term; the cache's bytes
(KV and state) against the estimate and transformers' own cache; and make-checkpoint of the
preset loading in transformers, then generate.
"""

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from archscope.estimate import decode_flops, kv_cache_bytes, prefill_flops
from archscope.estimate.state import state_bytes
from archscope.kinds import gated_deltanet as gdn
from archscope.measure.reference import cache_kwargs, returned_cache
from archscope.nn.cache import LayerCache
from parity import (checked_preset, hf_eager_prefill_flops, load_same_weights, max_diff,
                    slots_in_use_bytes, their_cache_bytes, tiny_spec, twin_case)

TOL = 1e-4
T, PREFILL = 84, 70  # transformers scans in chunks of 64 (spec: chunk_size 64): 70 = 64 + 6
ATTENDS = [1, 3]
MIXER = dict(kind="gated_deltanet", n_key_heads=2, n_value_heads=4, key_head_dim=16,
             value_head_dim=12, conv_kernel=4)


def qwen3_next(**changes):
    base = dict(n_layers=4, max_seq_len=128,
                norm=dict(kind="rmsnorm", eps=1e-6, unit_offset=True),
                attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16, qk_norm="head",
                               output_gate=True, rotary_fraction=0.25),
                mixer=MIXER,
                ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=32, n_shared_experts=1,
                         d_shared=48, shared_gate=True),
                layers=[dict(select=ATTENDS, mixer="attention"),
                        dict(select=[0], ffn=dict(kind="swiglu", d_ff=96))])
    return tiny_spec(**{**base, **changes})


@pytest.fixture(scope="module")
def setup():
    return twin_case(qwen3_next(), T)


@torch.no_grad()
def stepwise(model, ids, cache):
    outs = [model(ids[:, :PREFILL], cache)]
    outs += [model(ids[:, i:i + 1], cache) for i in range(PREFILL, ids.shape[1])]
    return torch.cat(outs, dim=1)


def test_transformers_builds_the_same_layers(setup):
    spec, hf, ours, _, _ = setup
    assert type(hf).__name__ == "Qwen3NextForCausalLM"
    assert hf.config.layer_types == [layer.layer_type for layer in spec.plan]
    assert [i for i, t in enumerate(hf.config.layer_types) if t == "full_attention"] == ATTENDS
    assert [type(layer.mlp).__name__ for layer in hf.model.layers] == \
        ["Qwen3NextMLP"] + ["Qwen3NextSparseMoeBlock"] * 3
    assert [layer.mixer_name for layer in ours.layers] == ["mixer", "self_attn"] * 2


def test_prefill_logits_match(setup):
    _, _, ours, ids, reference = setup
    assert reference.abs().max() > 1  # far from trivial
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < TOL


def test_cached_decoding_matches(setup):
    """A 70-token prefill (a full chunk and a partial one), then 14 steps through the cache."""
    _, _, ours, ids, reference = setup
    assert max_diff(stepwise(ours, ids, ours.new_cache(2, T)), reference) < TOL


def test_negative_controls(setup):
    """The checks can fail: the same weights read with norms scaling by weight rather than
    (1 + weight) give other logits; and decoding with the DeltaNet state dropped after the
    prefill (each step starting from zeros) gives other next tokens' logits."""
    spec, hf, ours, ids, reference = setup
    plain = load_same_weights(qwen3_next(norm=dict(kind="rmsnorm", eps=1e-6)), hf, "qwen3_next")
    with torch.no_grad():
        assert max_diff(plain(ids), reference) > 0.1
    cache = ours.new_cache(2, T)
    with torch.no_grad():
        ours(ids[:, :PREFILL], cache)
        for state in cache.layers:
            if state is not None and not isinstance(state, LayerCache):
                state.reset()
        forgetful = ours(ids[:, PREFILL:PREFILL + 1], cache)
    assert max_diff(forgetful, reference[:, PREFILL:PREFILL + 1]) > 0.1


def _gdn_layers(spec) -> int:
    return sum(layer.state is not None for layer in spec.plan)


def test_prefill_flops_against_transformers(setup):
    """FlopCounterMode over transformers' eager model (experts looped) against the estimate
    (full attention squares). Per DeltaNet layer and sequence the two differ by exactly:
    - ut_solve, in the estimate: the chunk's triangular solve, which transformers' torch path
      runs as a row loop of elementwise products (no matmul the counter sees);
    - the conv's padding, in transformers: its conv pads both ends by K-1 and computes K-1
      outputs per channel that it slices off (2*(K-1)*K*conv_dim)."""
    spec = setup[0]
    m, batch = spec.mixer, 2
    terms = gdn.prefill_flops(m, spec.d_model, PREFILL)
    padded_conv = 2 * (m.conv_kernel - 1) * m.conv_kernel * m.conv_dim
    counted = hf_eager_prefill_flops(spec, batch=batch, tokens=PREFILL,
                                     experts_implementation="eager")
    estimated = prefill_flops(spec, PREFILL, batch=batch, attention="full").total
    assert estimated - counted == _gdn_layers(spec) * batch * (terms["ut_solve"] - padded_conv)


def test_decode_flops_against_transformers(setup):
    """One cached step after the prefill: the estimate (the new token reads PREFILL + 1 keys)
    against FlopCounterMode over transformers' step. Per DeltaNet layer and sequence,
    transformers' recurrent step writes state_read, state_write and output as broadcast
    products and sums (no matmul the counter sees), and its conv computes two outputs over the
    cached columns and the new one, keeping the last (one conv1d term more)."""
    spec, hf, _, ids, _ = setup
    batch = ids.shape[0]
    eager = transformers.AutoModelForCausalLM.from_config(
        hf.config, attn_implementation="eager", experts_implementation="eager").eval()
    eager.load_state_dict(hf.state_dict())
    with torch.no_grad():
        out = eager(ids[:, :PREFILL], use_cache=True)
        with FlopCounterMode(display=False) as counter:
            eager(ids[:, PREFILL:PREFILL + 1], **cache_kwargs(eager, returned_cache(out)),
                  use_cache=True)
    step = gdn.decode_flops(spec.mixer, spec.d_model)
    unseen = step["state_read"] + step["state_write"] + step["output"] - step["conv1d"]
    estimated = decode_flops(spec, PREFILL + 1, batch=batch).total
    assert estimated - counter.get_total_flops() == _gdn_layers(spec) * batch * unseen


def _held(cache) -> tuple[int, int]:
    """(KV bytes in the slots in use, state bytes) archscope's cache holds."""
    return slots_in_use_bytes(cache), cache.state_nbytes()


def test_cache_bytes_equal_the_estimate_and_transformers(setup):
    """After the prefill and after the decode steps, archscope's cache holds the estimate:
    KV for the attention layers' tokens, plus the constant DeltaNet state (conv window in the
    activations' dtype, recurrent matrices in fp32). transformers' DynamicCache holds the same
    bytes: its attention layers keep exactly the tokens seen, its linear-attention layers
    conv_states [B, conv_dim, K] and recurrent_states [B, H_v, d_k, d_v]."""
    spec, hf, ours, ids, _ = setup
    batch = ids.shape[0]
    cache = ours.new_cache(batch, T)
    with torch.no_grad():
        ours(ids[:, :PREFILL], cache)
    state = state_bytes(spec, batch, "fp32")
    assert _held(cache) == (kv_cache_bytes(spec, PREFILL, batch, "fp32"), state)
    with torch.no_grad():
        for i in range(PREFILL, T):
            ours(ids[:, i:i + 1], cache)
    assert _held(cache) == (kv_cache_bytes(spec, T, batch, "fp32"), state)
    with torch.no_grad():
        theirs = returned_cache(hf(ids, use_cache=True))
    assert their_cache_bytes(theirs) == (kv_cache_bytes(spec, T, batch, "fp32"), state)


def test_preset_params_on_meta_equal_transformers_and_the_estimate():
    spec, p, _ = checked_preset("qwen3-next-80b-a3b", "Qwen3NextForCausalLM")
    assert p.total == 79_674_391_296  # "80B total" on the card
    assert p.active == 3_874_929_408  # "3B active" (embedding and head included here)
    assert p.mtp == 1_650_471_424  # the mtp.* module: one attention + MoE layer, fc, norms
    assert [layer.layer_type for layer in spec.plan].count("full_attention") == 12


def test_make_checkpoint_of_the_preset_loads_in_transformers_and_generates(setup, tmp_path,
                                                                           run_cli):
    """make-checkpoint of a cut-down preset loads in transformers with the same logits, and
    `generate` runs on it (save_pretrained's checkpoints are the conformance case's)."""
    from archscope.weights import load_checkpoint

    ids = setup[3]
    folder = tmp_path / "ours"
    sets = ["n_layers=4", "vocab_size=512", "d_model=64", "attention.n_heads=4",
            "attention.head_dim=16", "mixer.n_key_heads=2", "mixer.n_value_heads=4",
            "mixer.key_head_dim=16", "mixer.value_head_dim=16", "ffn.n_experts=4",
            "ffn.top_k=2", "ffn.d_expert=32"]
    code, _, err = run_cli("make-checkpoint", "qwen3-next-80b-a3b", "--weights", str(folder),
                           "--dtype", "fp32", *[a for s in sets for a in ("--set", s)])
    assert code == 0, err
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    assert type(theirs).__name__ == "Qwen3NextForCausalLM"
    mine, _ = load_checkpoint(folder)
    short = ids[:, :9] % 512
    with torch.no_grad():
        assert max_diff(mine(short), theirs(short).logits) < TOL
    code, out, err = run_cli("generate", "--weights", str(folder), "--device", "cpu",
                             "--new-tokens", "4", "Hello")
    assert code == 0, err
    assert "4 new" in err
