"""The conformance suite of the component kinds: every kind case (kind_cases.py) through the
builder and the estimators: parameters and module tables on the meta device (what
`show --verify` checks, and the command itself), prefill and decode FLOPs under FlopCounterMode,
and the cache a real prefill leaves (per-token KV and per-sequence state)."""

from __future__ import annotations

import pytest
import torch
import yaml

from archscope.estimate import count_params, decode_flops, kv_cache_bytes, prefill_flops
from archscope.estimate.state import state_bytes
from archscope.measure.counted import module_table_differences
from archscope.nn import build_model
from archscope.spec.fields import to_mapping
from kind_cases import KIND_CASES, kind_spec
from parity import counted_flops, reference_experts, uncounted_solves

BATCH, PROMPT = 2, 10


def _built(spec):
    model = build_model(spec, device="cpu", dtype=torch.float32)
    reference_experts(model)
    return model


def _prompt(spec, length: int = PROMPT):
    return torch.randint(0, spec.vocab_size, (BATCH, length),
                         generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("case", KIND_CASES)
def test_parameters_and_module_tables_on_meta(case):
    spec = kind_spec(case)
    model = build_model(spec, device="meta")
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    assert module_table_differences(spec, model) == []


@pytest.mark.parametrize("case", KIND_CASES)
def test_prefill_flops_equal_the_flop_counter(case):
    spec = kind_spec(case)
    model, ids = _built(spec), _prompt(spec)
    expected = prefill_flops(spec, PROMPT, batch=BATCH, attention="full").total
    assert counted_flops(lambda: model(ids)) == expected - BATCH * uncounted_solves(spec)


@pytest.mark.parametrize("case", KIND_CASES)
def test_a_decode_step_and_the_cache_it_reads(case):
    """A prefill of PROMPT - 1 tokens, then one step at context PROMPT: its FLOPs, and the cache
    (KV slots holding a token, and the constant state) against the estimate."""
    from parity import slots_in_use_bytes

    spec = kind_spec(case)
    model = _built(spec)
    cache = model.new_cache(BATCH, spec.max_seq_len)
    with torch.no_grad():
        model(_prompt(spec, PROMPT - 1), cache)
    step = _prompt(spec, 1)
    assert counted_flops(lambda: model(step, cache)) == decode_flops(spec, PROMPT,
                                                                     batch=BATCH).total
    assert slots_in_use_bytes(cache) == kv_cache_bytes(spec, PROMPT, BATCH, "fp32")
    assert cache.state_nbytes() == state_bytes(spec, BATCH, "fp32")


@pytest.mark.parametrize("case", KIND_CASES)
def test_show_verify_agrees(case, run_cli, tmp_path):
    path = tmp_path / f"{case}.yaml"
    path.write_text(yaml.safe_dump(to_mapping(kind_spec(case)), sort_keys=False))
    code, out, err = run_cli("show", str(path), "--verify", "--format", "json")
    assert code == 0, err
