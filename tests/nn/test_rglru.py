"""The RG-LRU mixer (Griffin's recurrent block) and RecurrentGemma against transformers'
RecurrentGemmaForCausalLM, for what the conformance case does not cover: a width whose
sqrt is not a bfloat16 (the embedding scale transformers keeps as a bf16 buffer), an LRU
wider than the model, a prefill then decode steps crossing the window; negative controls;
the state transformers' own modules hold after a prefill (RecurrentGemma keeps it in the
recurrent blocks, not in the cache object: conv1d_state and rg_lru.recurrent_states) and the
KV its DynamicCache holds, against the estimate, in fp32 and in bf16 (the recurrent state
stays fp32); the mixer's FLOPs under FlopCounterMode in prefill and decode; the preset on the
meta device.
"""

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from archscope.estimate import kv_cache_bytes
from archscope.estimate.state import state_bytes
from archscope.kinds import rglru as kind
from archscope.measure.reference import cache_kwargs
from archscope.nn.cache import LayerCache
from archscope.spec.families.recurrent_gemma import embedding_scale
from parity import checked_preset, load_same_weights, max_diff, tiny_spec, twin_case

TOL = 1e-4
D, WINDOW, T, PREFILL = 80, 8, 24, 6  # PREFILL < WINDOW - 1: transformers keeps every token
ATTENDS = [1, 4]
MIXER = dict(kind="rglru", lru_width=100, n_heads=5, conv_kernel=4)


def griffin(**changes):
    base = dict(d_model=D, n_layers=5, max_seq_len=64,
                norm=dict(kind="rmsnorm", eps=1e-6, unit_offset=True),
                attention=dict(kind="gqa", n_heads=5, n_kv_heads=1, head_dim=16, out_bias=True,
                               window=WINDOW, rotary_fraction=0.5),
                mixer=MIXER,
                ffn=dict(kind="geglu", d_ff=48, activation="gelu_tanh", bias=True),
                multipliers=dict(embedding=embedding_scale(D)), head=dict(softcap=30.0),
                tie_embeddings=True,
                layers=[dict(select=ATTENDS, mixer="attention")])
    return tiny_spec(**{**base, **changes})


@pytest.fixture(scope="module")
def setup():
    return twin_case(griffin(), T)


def _recurrent_blocks(hf):
    return [layer.temporal_block for layer in hf.model.layers
            if type(layer.temporal_block).__name__ == "RecurrentGemmaRecurrentBlock"]


def test_transformers_builds_the_same_layers(setup):
    spec, hf, ours, _, _ = setup
    assert type(hf).__name__ == "RecurrentGemmaForCausalLM"
    assert [i for i, t in enumerate(hf.config.layers_block_type)
            if t == "sliding_attention"] == ATTENDS
    assert [layer.mixer_name for layer in ours.layers] == \
        ["mixer", "self_attn", "mixer", "mixer", "self_attn"]
    # sqrt(80) = 8.944.. is 8.9375 in bfloat16: transformers' normalizer, and the spec's
    assert hf.model.normalizer.item() == spec.mults.embedding == 8.9375


@pytest.mark.slow
def test_prefill_logits_and_cached_decode_match(setup):
    """The full prompt, then a prefill of 6 and 18 steps through the cache (the window of 8
    crossed), against transformers' full-sequence logits."""
    _, _, ours, ids, reference = setup
    assert reference.abs().max() > 1  # far from trivial
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < TOL
        cache = ours.new_cache(2, T)
        steps = [ours(ids[:, :PREFILL], cache)]
        steps += [ours(ids[:, i:i + 1], cache) for i in range(PREFILL, T)]
    assert max_diff(torch.cat(steps, dim=1), reference) < TOL


def test_negative_controls(setup):
    """The checks can fail: the exact sqrt(80) for the embedding scale (not transformers'
    bfloat16 value) gives other logits; and decoding with the RG-LRU state dropped after the
    prefill (the step starting from zeros) gives other next-token logits."""
    spec, hf, ours, ids, reference = setup
    exact = load_same_weights(griffin(multipliers=dict(embedding=D ** 0.5)), hf, "recurrent_gemma")
    with torch.no_grad():
        assert max_diff(exact(ids), reference) > 10 * TOL
    cache = ours.new_cache(2, T)
    with torch.no_grad():
        ours(ids[:, :PREFILL], cache)
        for state in cache.layers:
            if state is not None and not isinstance(state, LayerCache):
                state.recurrent.zero_()
        forgetful = ours(ids[:, PREFILL:PREFILL + 1], cache)
    assert max_diff(forgetful, reference[:, PREFILL:PREFILL + 1]) > 0.1


def _theirs_after_prefill(hf, ids):
    """(KV bytes of transformers' DynamicCache, state bytes its recurrent blocks hold, the
    blocks) after a prefill of `ids`."""
    cache = transformers.DynamicCache(config=hf.config)  # the class returns none: pass one
    with torch.no_grad():
        hf(ids, use_cache=True, **cache_kwargs(hf, cache))
    kv = sum(t.numel() * t.element_size() for layer in cache.layers
             for t in (getattr(layer, "keys", None), getattr(layer, "values", None))
             if isinstance(t, torch.Tensor))
    blocks = _recurrent_blocks(hf)
    state = sum(t.numel() * t.element_size() for b in blocks
                for t in (b.conv1d_state, b.rg_lru.recurrent_states))
    return kv, state, blocks


def test_state_and_kv_after_a_prefill_equal_the_estimate(setup):
    """After a prefill shorter than the window, transformers holds exactly the estimate: the
    attention layers' keys and values of every token, and per recurrent layer conv1d_state
    [B, lru_width, K - 1] in the model's dtype plus rg_lru.recurrent_states [B, lru_width] in
    fp32. archscope's cache holds the same."""
    spec, hf, ours, ids, _ = setup
    batch, m = ids.shape[0], spec.mixer
    kv, state, blocks = _theirs_after_prefill(hf, ids[:, :PREFILL])
    assert kv == kv_cache_bytes(spec, PREFILL, batch, "fp32")
    assert state == state_bytes(spec, batch, "fp32")
    for b in blocks:
        assert b.conv1d_state.shape == (batch, m.lru_width, m.conv_kernel - 1)
        assert b.rg_lru.recurrent_states.shape == (batch, m.lru_width)
    cache = ours.new_cache(batch, T)
    with torch.no_grad():
        ours(ids[:, :PREFILL], cache)
    assert cache.state_nbytes() == state


def test_past_the_window_transformers_keeps_one_token_less_than_the_peak(setup):
    """A prefill longer than the window: transformers' sliding layers keep window - 1 tokens
    (the next step brings the window-th); the estimate counts the window, the peak during a
    step. The state is the same whatever the prompt."""
    spec, hf, _, ids, _ = setup
    batch = ids.shape[0]
    kv, state, _ = _theirs_after_prefill(hf, ids)
    assert kv == kv_cache_bytes(spec, WINDOW - 1, batch, "fp32")
    per_token = kv_cache_bytes(spec, 1, batch, "fp32")
    assert kv_cache_bytes(spec, T, batch, "fp32") - kv == per_token
    assert state == state_bytes(spec, batch, "fp32")


def test_in_bf16_the_recurrent_state_stays_fp32(setup):
    """bf16 weights: transformers' conv1d_state is bf16, its recurrent_states fp32 (so is
    archscope's), and both hold the estimate at bf16 activations."""
    spec, hf, ours, ids, _ = setup
    batch = ids.shape[0]
    theirs = transformers.AutoModelForCausalLM.from_config(hf.config).to(torch.bfloat16).eval()
    _, state, blocks = _theirs_after_prefill(theirs, ids[:, :PREFILL])
    assert {b.conv1d_state.dtype for b in blocks} == {torch.bfloat16}
    assert {b.rg_lru.recurrent_states.dtype for b in blocks} == {torch.float32}
    assert state == state_bytes(spec, batch, "bf16") < state_bytes(spec, batch, "fp32")
    mine = ours.new_cache(batch, T, dtype=torch.bfloat16)
    assert {s.recurrent.dtype for s in mine.layers if s is not None
            and not isinstance(s, LayerCache)} == {torch.float32}
    assert mine.state_nbytes() == state


def test_mixer_flops_against_transformers(setup):
    """FlopCounterMode over transformers' recurrent block against kinds/rglru.py. Prefill: the
    same but for the conv's padding (transformers pads K-1 on both ends and drops K-1 outputs
    a channel, 2*(K-1)*K*w FLOPs a sequence); the scan is elementwise and counted by neither
    (the convention: scan_flops and step_flops are empty). Decode: transformers' conv step is
    an elementwise product and sum, which the counter does not see (2*w*K a sequence)."""
    spec, hf, _, ids, _ = setup
    m, d, batch = spec.mixer, spec.d_model, ids.shape[0]
    block = _recurrent_blocks(hf)[0]
    x = torch.randn(batch, PREFILL, d)
    positions = torch.arange(PREFILL)[None].expand(batch, -1)
    with torch.no_grad():
        with FlopCounterMode(display=False) as prefill:
            block(x, positions, None, use_cache=True)
        with FlopCounterMode(display=False) as step:
            block(x[:, :1], positions[:, :1] + PREFILL, None, use_cache=True)
    estimated = batch * sum(kind.prefill_flops(m, d, PREFILL).values())
    padding = 2 * (m.conv_kernel - 1) * m.conv_kernel * m.lru_width
    assert estimated - prefill.get_total_flops() == -batch * padding
    terms = kind.decode_flops(m, d)
    assert batch * sum(terms.values()) - step.get_total_flops() == batch * terms["conv_1d"]
    assert terms["rg_lru.input_gate"] == terms["rg_lru.recurrent_gate"] == \
        2 * m.lru_width * m.block_width
    assert kind.step_flops(m) == kind.scan_flops(m, PREFILL) == {}


def test_preset_params_on_meta_equal_transformers_and_the_estimate():
    spec, p, theirs = checked_preset("recurrentgemma-9b", "RecurrentGemmaForCausalLM")
    assert theirs.config.layers_block_type.count("sliding_attention") == 12
    assert [layer.layer_type for layer in spec.plan] == theirs.config.layers_block_type
    assert theirs.config.head_dim == spec.attention.head_dim == 256


_CONFIG = dict(model_type="recurrent_gemma", vocab_size=97, hidden_size=64, num_hidden_layers=3,
               intermediate_size=96, num_attention_heads=4, num_key_value_heads=1, lru_width=48,
               attention_window_size=6, conv1d_width=4, block_types=["recurrent", "attention"])


@pytest.mark.parametrize("changes, key", [
    (dict(block_types=["recurrent", "mlp"]), "block_types[1]"),
    (dict(block_types=[]), "block_types"),
    (dict(lru_width=50), "num_attention_heads"),  # 4 gate blocks cannot split 50 channels
    (dict(rope_parameters=dict(rope_type="linear", rope_theta=1e4, factor=2.0)),
     "rope_parameters.rope_type"),
    (dict(logits_soft_cap=0.0), "logits_soft_cap"),  # transformers would divide by it
])
def test_the_reader_refuses_what_the_class_cannot_run_naming_the_key(changes, key):
    from archscope.errors import SpecError
    from archscope.spec.hf_import import mapping_from_raw

    with pytest.raises(SpecError) as err:
        mapping_from_raw({**_CONFIG, **changes}, "config.json", "t", "test")
    assert err.value.key == key


def test_the_reader_without_max_position_embeddings_takes_the_window():
    """RecurrentGemmaConfig has no max_position_embeddings: the window, noted as defaulted."""
    from archscope.spec import ModelSpec
    from archscope.spec.fields import from_mapping
    from archscope.spec.hf_import import mapping_from_raw

    mapping = mapping_from_raw(dict(_CONFIG), "config.json", "t", "test")
    assert mapping["max_seq_len"] == mapping["attention"]["window"] == 6
    spec = from_mapping(ModelSpec, {**mapping, "name": "t", "source": "test"})
    assert [layer.layer_type for layer in spec.plan] == \
        ["linear_attention", "sliding_attention", "linear_attention"]
    assert spec.ffn.d_ff == 48 and spec.mixer.lru_width == 48  # intermediate_size // 2


@pytest.mark.parametrize("changes, key", [
    (dict(n_heads=3), "n_heads"),  # 100 channels in 3 blocks
    (dict(conv_kernel=0), "conv_kernel"),
    (dict(activation="relu2"), "activation"),
])
def test_a_bad_mixer_spec_names_its_key(changes, key):
    from archscope.errors import SpecError

    with pytest.raises(SpecError) as err:
        griffin(mixer={**MIXER, **changes})
    assert err.value.key.endswith(key)


def test_a_kernel_of_one_keeps_no_conv_column():
    """conv1d_width 1: the conv reads only the new input, so the state keeps no column (and
    decoding through the cache still equals the full pass)."""
    from archscope.nn import build_model

    spec = griffin(mixer={**MIXER, "conv_kernel": 1})
    model = build_model(spec, seed=2)
    ids = torch.randint(0, 97, (2, 12), generator=torch.Generator().manual_seed(3))
    cache = model.new_cache(2, 12)
    with torch.no_grad():
        whole = model(ids)
        steps = [model(ids[:, :5], cache)] + [model(ids[:, i:i + 1], cache) for i in range(5, 12)]
    assert max_diff(torch.cat(steps, dim=1), whole) < 1e-5
    assert cache.state_nbytes() == state_bytes(spec, 2, "fp32") == 2 * 3 * 100 * 4
