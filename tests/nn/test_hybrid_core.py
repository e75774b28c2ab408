"""The hybrid core on tiny specs, independent of any transformers family: a layer's mixer is
attention, the model's state mixer or none, and a layer may lack its FFN. The built network
against the estimators (parameters, cache and state bytes, FLOPs) and against itself (a cached
decode equals one pass over the whole sequence). Family parity with transformers is in each
family's own test file.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from archscope.errors import SpecError
from archscope.estimate import count_params, decode_flops, kv_cache_bytes, prefill_flops
from archscope.estimate.record import model_record
from archscope.estimate.state import state_bytes
from archscope.kinds import mixer_kind
from archscope.nn import build_model
from parity import decode_stepwise, max_diff, tiny_spec

MAMBA2 = dict(kind="mamba2", n_heads=8, head_dim=8, d_state=8, n_groups=2, conv_kernel=4,
              chunk_size=4)
DELTANET = dict(kind="gated_deltanet", n_key_heads=2, n_value_heads=4, key_head_dim=8,
                value_head_dim=8, conv_kernel=4, chunk_size=4)
RGLRU = dict(kind="rglru", lru_width=48, n_heads=4, conv_kernel=4)
SHORT_CONV = dict(kind="short_conv", width=64, conv_kernel=3, bias=True)  # d_model's width
# layer 1 attends, layer 2 has no FFN (a mixer-only block), layer 3 no mixer (MLP only)
PATTERN = [dict(select=[1], mixer="attention"), dict(select=[2], ffn="none"),
           dict(select=[3], mixer="none")]
T, PREFILL, BATCH = 22, 9, 2  # a 9-token prompt over three chunks of 4, then 13 cached steps


def hybrid(mixer: dict, **changes):
    return tiny_spec(n_layers=4, mixer=mixer, layers=PATTERN, **changes)


@pytest.fixture(params=[MAMBA2, DELTANET, RGLRU], ids=["mamba2", "gated_deltanet", "rglru"])
def spec(request):
    return hybrid(request.param)


def test_the_plan_reads_the_mixer_words(spec):
    plan = spec.plan
    assert [layer.layer_type for layer in plan] == ["linear_attention", "full_attention",
                                                    "linear_attention", "mlp"]
    assert plan[0].state is spec.mixer and plan[0].attention is None
    assert plan[1].attention == spec.attention and plan[1].state is None
    assert plan[2].ffn is None and plan[3].mixer is None
    assert spec.hybrid and not tiny_spec().hybrid


@pytest.mark.parametrize("layers, key, words", [
    ([dict(select=[0], mixer="mamba")], "layers[0].mixer", "attention, none, mamba2"),
    ([dict(select=[0], attention=dict(window=4))], "layers[0].attention",
     "whose mixer is 'mamba2'"),
    ([dict(select=[0], mixer="none", ffn="none")], "layers", "neither a mixer nor an FFN"),
    ([dict(select=[0, 1, 2, 3], mixer="attention")], "mixer", "is no layer's mixer"),
    ([dict(select=[0], ffn="nothing")], "layers[0].ffn", "'none' for no FFN"),
])
def test_bad_mixer_choices_name_the_key(layers, key, words):
    with pytest.raises(SpecError) as err:
        tiny_spec(n_layers=4, mixer=MAMBA2, layers=layers)
    assert err.value.key == key and words in str(err.value)


def test_a_state_layer_needs_the_models_mixer():
    with pytest.raises(SpecError, match="needs the model's `mixer:` spec"):
        tiny_spec(layers=[dict(select=[0], mixer="mamba2")])


def test_an_unknown_mixer_kind_lists_the_kinds():
    with pytest.raises(SpecError) as err:
        tiny_spec(mixer=dict(MAMBA2, kind="mamba3"))
    assert err.value.key == "mixer.kind" and "mamba2, gated_deltanet" in str(err.value)


def test_parameters_of_the_built_model_equal_the_estimate(spec):
    model = build_model(spec, device="meta")
    names = dict(model.named_parameters())
    assert sum(p.numel() for p in names.values()) == count_params(spec).total
    assert any(n.startswith("layers.0.mixer.") for n in names)
    assert "layers.2.post_attention_layernorm.weight" not in names  # no FFN, no FFN norm
    assert "layers.3.input_layernorm.weight" not in names  # no mixer, no mixer norm
    assert count_params(spec).groups["mixer"] == sum(
        p.numel() for n, p in names.items() if ".mixer." in n)


@pytest.mark.parametrize("mixer", [MAMBA2, DELTANET, RGLRU, SHORT_CONV],
                         ids=["mamba2", "gated_deltanet", "rglru", "short_conv"])
def test_cached_decoding_equals_one_pass(mixer):
    """The prompt spans chunks of the scan; each later token runs the one-step recurrence."""
    model = build_model(hybrid(mixer), seed=3)
    ids = torch.randint(0, 97, (BATCH, T), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        whole = model(ids)
    assert max_diff(decode_stepwise(model, ids, PREFILL), whole) < 1e-5


def test_a_fresh_prompt_after_reset_starts_from_zero_state(spec):
    model = build_model(spec, seed=1)
    ids = torch.randint(0, 97, (BATCH, 12), generator=torch.Generator().manual_seed(1))
    cache = model.new_cache(BATCH, 32)
    with torch.no_grad():
        model(ids[:, :7], cache)
        cache.reset()
        again = model(ids, cache)
        assert max_diff(again, model(ids)) < 1e-5


@pytest.mark.parametrize("dtype, name", [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_cache_and_state_bytes_equal_the_estimate(spec, dtype, name):
    """The KV part grows to the cache's capacity, the state part is constant, after a prefill
    and after decode steps alike; the state's conv window is in the activations' dtype, its
    SSM / recurrent matrix fp32 (so bf16 does not halve it)."""
    model = build_model(spec, dtype=dtype)
    capacity = 40
    cache = model.new_cache(BATCH, capacity)
    ids = torch.randint(0, 97, (BATCH, 12))
    expected_state = state_bytes(spec, BATCH, name)
    with torch.no_grad():
        for step in (ids[:, :10], ids[:, 10:11], ids[:, 11:12]):
            model(step, cache)
            assert cache.kv_nbytes() == kv_cache_bytes(spec, capacity, BATCH, name)
            assert cache.state_nbytes() == expected_state
    row = model_record(spec, capacity, batch=BATCH, weight_format=name).row()
    assert (row["kv_cache_bytes"], row["state_bytes"]) == (cache.kv_nbytes(), expected_state)
    assert row["cache_bytes"] == cache.nbytes()
    assert state_bytes(spec, BATCH, "bf16") > state_bytes(spec, BATCH, "fp32") // 2


def counted(run) -> int:
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as c:
        run()
    return c.get_total_flops()


def test_flops_of_the_built_model_equal_the_estimate(spec):
    """Prefill (the full attention square that the counter sees) and one decode step. The
    chunked delta rule's triangular solves are real multiply-adds the counter has no rule
    for: the estimate names them (`ut_solve`), and they are the only difference."""
    model = build_model(spec)
    ids = torch.randint(0, 97, (BATCH, 10))
    prefill = prefill_flops(spec, 10, BATCH, attention="full")
    solves = BATCH * sum(mixer_kind(layer.state.kind).scan_flops(layer.state, 10).get("ut_solve", 0)
                         for layer in spec.plan if layer.state)
    # the scan's own terms, for every state layer: Mamba-2's and the delta rule's matmuls; the
    # RG-LRU's recurrence is elementwise and has none (kinds/rglru.py)
    scans = [mixer_kind(layer.state.kind).scan_flops(layer.state, 10)
             for layer in spec.plan if layer.state]
    assert prefill.by_component["mixer_state"] == BATCH * sum(sum(s.values()) for s in scans)
    assert (prefill.by_component["mixer_state"] > 0) == (spec.mixer.kind != "rglru")
    assert counted(lambda: model(ids)) == prefill.total - solves
    cache = model.new_cache(BATCH, 32)
    with torch.no_grad():
        model(ids[:, :9], cache)
    step = decode_flops(spec, 10, BATCH)
    assert counted(lambda: model(ids[:, 9:10], cache)) == step.total


def test_state_does_not_grow_with_the_context(spec):
    small, large = (model_record(spec, n).at(n) for n in (16, 64))
    assert small.state_bytes == large.state_bytes > 0
    assert large.kv_cache_bytes == 4 * small.kv_cache_bytes  # the one attention layer
