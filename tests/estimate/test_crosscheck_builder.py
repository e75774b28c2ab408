"""The estimators against archscope's own network (archscope.nn): parameters counted on the meta
device for every preset; FLOPs under torch's FlopCounterMode and cache bytes for a tiny variant
of each (prefill, one decode step; MLA decode steps in both forms, absorbed and recompute).

Kinds the builder does not have yet are skipped, not failed. Attention runs on SDPA's math
backend: on CPU the fused kernel (`_scaled_dot_product_flash_attention_for_cpu`, which GQA's
`enable_gqa` selects) has no FLOP formula in torch's counter and would count as zero. Routed
experts run their reference loop (one F.linear per expert, `path = "reference"`): the sorted path's
grouped_mm has no formula either, and its padded-bmm fallback computes padding too.
"""

from __future__ import annotations

import pytest

from archscope.errors import SpecError
from archscope.estimate import count_params, decode_flops, kv_cache_bytes, prefill_flops
from archscope.estimate.state import state_bytes
from archscope.spec import load_spec, preset_names

torch = pytest.importorskip("torch")
nn = pytest.importorskip("archscope.nn")
if not hasattr(nn, "build_model"):
    pytest.skip("archscope.nn.build_model is not there yet", allow_module_level=True)
from archscope.measure.counted import module_table_differences  # noqa: E402
from archscope.nn.mla import set_mla_decode_form  # noqa: E402
from parity import counted_flops, reference_experts, uncounted_solves  # noqa: E402

MLA_PRESETS = [n for n in preset_names() if load_spec(n).attention.kind == "mla"]
BATCH, PROMPT = 2, 10


def build_or_skip(spec, device: str, mla_decode_form: str | None = None):
    try:
        model = nn.build_model(spec, device=device, dtype=torch.float32)
    except SpecError as err:
        if "no builder" in str(err):
            pytest.skip(str(err))
        raise
    reference_experts(model)
    if mla_decode_form is not None:
        set_mla_decode_form(model, mla_decode_form)
    return model


def prompt(spec, length: int = PROMPT):
    return torch.randint(0, spec.vocab_size, (BATCH, length))


@pytest.mark.parametrize("name", preset_names())
def test_params_match_the_built_model_on_meta(name):
    """Full size on meta: the parameter count, and the module tables `show` prints from the spec
    (the check `show --verify` runs), both against the built module."""
    spec = load_spec(name)
    model = build_or_skip(spec, "meta")
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    assert module_table_differences(spec, model) == []


@pytest.mark.parametrize("name", preset_names())
def test_full_prefill_flops_match_the_flop_counter(name, tiny_variant):
    spec = tiny_variant(load_spec(name))
    model = build_or_skip(spec, "cpu")
    ids = prompt(spec)
    expected = prefill_flops(spec, PROMPT, batch=BATCH, attention="full").total
    assert counted_flops(lambda: model(ids)) == expected - BATCH * uncounted_solves(spec)


@pytest.mark.parametrize("name", preset_names())
def test_decode_step_flops_and_cache_bytes(name, tiny_variant):
    """Prefill PROMPT - 1 tokens, then count one step at context PROMPT (window: 6 keys)."""
    spec = tiny_variant(load_spec(name))
    model = build_or_skip(spec, "cpu")
    cache = model.new_cache(BATCH, spec.max_seq_len)
    assert cache.kv_nbytes() == kv_cache_bytes(spec, spec.max_seq_len, BATCH, "fp32")
    assert cache.state_nbytes() == state_bytes(spec, BATCH, "fp32")  # 0 without state mixers
    with torch.no_grad():
        model(prompt(spec, PROMPT - 1), cache)
    step = prompt(spec, 1)
    # by default the builder decodes MLA in the absorbed form (GQA layers ignore `mla`)
    expected = decode_flops(spec, PROMPT, batch=BATCH, mla="absorbed").total
    assert counted_flops(lambda: model(step, cache)) == expected


@pytest.mark.parametrize("name", MLA_PRESETS)
def test_recompute_mla_flops(name, tiny_variant):
    """decode_form "recompute": a prefill decompresses as always (mla="naive"); a decode step
    re-decompresses every latent it reads (mla="recompute")."""
    spec = tiny_variant(load_spec(name))
    model = build_or_skip(spec, "cpu", mla_decode_form="recompute")
    ids = prompt(spec)
    expected = prefill_flops(spec, PROMPT, BATCH, attention="full", mla="naive").total
    # (a hybrid's chunked triangular solves are uncounted, as in the full prefill above)
    assert counted_flops(lambda: model(ids)) == expected - BATCH * uncounted_solves(spec)
    cache = model.new_cache(BATCH, spec.max_seq_len)
    with torch.no_grad():
        model(prompt(spec, PROMPT - 1), cache)
    step = prompt(spec, 1)
    expected = decode_flops(spec, PROMPT, batch=BATCH, mla="recompute").total
    assert counted_flops(lambda: model(step, cache)) == expected
