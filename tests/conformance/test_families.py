"""The conformance suite of the families: every family case (family_cases.py) through the same
standard checks against transformers' own class built from the same config.json:

- parameters on the meta device: transformers' class = the estimate = archscope's build;
- active parameters: the estimate = the built modules less the routed experts a token skips;
- prefill logits on the same weights (fp32, under the case's tolerance);
- 12+ cached decode steps that cross any window or chunk, against the full-sequence logits;
- the cache: what archscope's holds after a real prefill = the estimate (per-token KV and a
  hybrid's per-sequence state), and so does transformers' own cache object, per layer;
- prefill FLOPs: FlopCounterMode over transformers' eager model = the estimate (full attention
  squares), less any difference the case documents;
- the config round trip: the spec written as a config.json, through transformers, reads back as
  the same network;
- a checkpoint archscope writes loads back into archscope and into transformers' class, with the
  same logits; one transformers saves (save_pretrained) loads here, with its logits;
- the weight table: archscope's state written back under transformers' names is transformers'
  state_dict, tensor for tensor (buffers too, such as a correction bias that the logits alone
  would not show while it is zero).

The archscope side starts from the config.json alone (archscope/spec/families/ reads it); the
weights go through the family's weight names.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass

import pytest
import torch
import transformers

from archscope.estimate import count_params, kv_cache_bytes, prefill_flops
from archscope.estimate.state import state_bytes
from archscope.nn import build_model
from archscope.spec import load_spec, with_overrides
from archscope.spec.families.registry import find
from archscope.weights import hf_to_ours, ours_to_hf, table_for
from family_cases import FAMILY_CASES, FamilyCase
from hf_configs import network, through_transformers
from parity import (active_params_from_modules, decode_stepwise, hf_decode_stepwise, their_cache_per_layer,
                    held_cache_bytes, max_diff, ours_loads_there, randomised, theirs_loads_here)

BATCH, PREFILL, STEPS = 2, 5, 13  # 13 cached decode steps after a 5-token prefill
T = PREFILL + STEPS


@dataclass
class Built:
    case: FamilyCase
    spec: object
    hf: object  # transformers' model (the text model of a wrapper)
    ours: object
    ids: torch.Tensor
    reference: torch.Tensor  # transformers' logits for `ids`


def _config(case: FamilyCase):
    return transformers.AutoConfig.for_model(case.hf_type or case.model_type, **case.config)


def _written(case: FamilyCase, folder) -> None:
    """The case's config.json in `folder`, as transformers saves it (model_type as the file
    says: kimi_k2's is not a type transformers registers)."""
    _config(case).save_pretrained(folder)
    path = folder / "config.json"
    data = json.loads(path.read_text())
    data["model_type"] = case.model_type
    path.write_text(json.dumps(data))


def _text_type(case: FamilyCase) -> str:
    """The model_type whose weight names the compared model uses (a wrapper's text model's)."""
    return _config(case).text_config.model_type if case.text_config else case.model_type


def _hf_class(case: FamilyCase):
    """The transformers Auto class that builds the compared model."""
    return (transformers.AutoModelForImageTextToText if case.multimodal_only
            else transformers.AutoModelForCausalLM)


def _text_part(case: FamilyCase, named) -> dict:
    """`named` (name -> tensor) less a multimodal-only class's vision tower."""
    skipped = find(case.model_type).skipped_prefixes if case.multimodal_only else ()
    return {k: v for k, v in named if not (skipped and k.startswith(skipped))}


@pytest.fixture(scope="module", params=FAMILY_CASES, ids=lambda c: c.id)
def built(request, tmp_path_factory) -> Built:
    case = request.param
    folder = tmp_path_factory.mktemp(case.id)
    _written(case, folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # keys the file lacks: transformers' defaults, noted
        spec = load_spec(folder)
    config = _config(case)
    config = config.text_config if case.text_config else config
    hf = randomised(_hf_class(case).from_config(config, attn_implementation="eager"))
    if case.prepare is not None:
        with torch.no_grad():
            case.prepare(hf)
    ours = build_model(spec)
    shapes = {k: v.shape for k, v in ours.state_dict().items()}
    mapped, unmatched = hf_to_ours(table_for(_text_type(case)),
                                   _text_part(case, hf.state_dict().items()), shapes)
    assert not unmatched, f"no weight-name rule for {unmatched}"
    ours.load_state_dict(mapped, strict=True)
    ids = torch.randint(0, spec.vocab_size, (BATCH, T), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        reference = hf(ids).logits
    return Built(case, spec, hf, ours.eval(), ids, reference)


def test_the_family_reads_its_own_config(built):
    family = find(built.case.model_type)
    assert family is not None and family.read is not None
    assert built.spec.vocab_size == _config(built.case).get_text_config().vocab_size


def test_parameters_on_meta_equal_transformers(built):
    config = _config(built.case)
    with torch.device("meta"):
        theirs = _hf_class(built.case).from_config(
            config.text_config if built.case.text_config else config)
    counted = sum(p.numel() for p in build_model(built.spec, device="meta").parameters())
    text = _text_part(built.case, theirs.named_parameters())
    assert count_params(built.spec).total == counted == sum(p.numel() for p in text.values())


def test_active_parameters_equal_the_built_modules(built):
    assert count_params(built.spec).active == active_params_from_modules(built.ours)


def test_prefill_logits_equal_transformers(built):
    with torch.no_grad():
        assert max_diff(built.ours(built.ids), built.reference) < built.case.tolerance


def test_cached_decode_equals_transformers(built):
    decoded = decode_stepwise(built.ours, built.ids, prefill=PREFILL)
    reference = built.reference
    if built.case.stepwise_reference:  # transformers' own cached decode (family_cases.py)
        reference = hf_decode_stepwise(built.hf, built.ids, prefill=PREFILL)
    assert max_diff(decoded, reference) < built.case.decode_tolerance


def test_the_cache_after_a_real_prefill_holds_the_estimate(built):
    spec, ours, ids = built.spec, built.ours, built.ids
    assert held_cache_bytes(ours, ids, 2 * T) == kv_cache_bytes(spec, T, BATCH, "fp32")
    cache = ours.new_cache(BATCH, 2 * T)
    with torch.no_grad():
        ours(ids, cache)
    assert cache.state_nbytes() == state_bytes(spec, BATCH, "fp32")


def test_prefill_flops_equal_transformers_eager(built):
    from torch.utils.flop_counter import FlopCounterMode

    spec, tokens = built.spec, 10
    moe = any(layer.is_moe for layer in spec.plan)
    eager = _hf_class(built.case).from_config(
        built.hf.config, attn_implementation="eager",
        **({"experts_implementation": "eager"} if moe else {})).eval()
    # no gradient anywhere: DbrxExperts hands parameter views to a submodule as inputs, which
    # FlopCounterMode's module tracker would hook for a backward pass that never comes
    eager.requires_grad_(False)
    ids = built.ids[:, :tokens]
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        eager(ids)
    gap = built.case.flops_gap(spec, BATCH, tokens) if built.case.flops_gap else 0
    assert prefill_flops(spec, tokens, batch=BATCH, attention="full").total - gap == \
        counter.get_total_flops()


def test_the_config_round_trips_through_transformers(built, tmp_path):
    assert network(through_transformers(built.spec, tmp_path)) == network(built.spec)


def test_a_written_checkpoint_loads_here_and_in_transformers(built, tmp_path):
    """make-checkpoint's writer, with a vocabulary its byte-level tokenizer fits in."""
    spec = with_overrides(built.spec, ["vocab_size=300"])
    assert ours_loads_there(spec, tmp_path / "ckpt", built.ids[:, :8]) < built.case.tolerance


def test_a_checkpoint_transformers_saves_loads_here(built, tmp_path):
    """save_pretrained's names and layouts (fused, interleaved, transposed experts) through the
    weight table, and its config.json read back as the same network."""
    _, spec, diff = theirs_loads_here(built.hf, tmp_path / "theirs", built.ids)
    assert diff < built.case.tolerance
    assert network(spec) == network(built.spec)


def test_the_weight_table_round_trips_tensor_for_tensor(built):
    theirs = _text_part(built.case, built.hf.state_dict().items())
    back = ours_to_hf(table_for(_text_type(built.case)), built.ours.state_dict())
    assert set(back) == set(theirs)
    assert all(torch.equal(back[k], theirs[k]) for k in theirs)


def test_transformers_own_cache_holds_what_the_estimate_counts(built):
    """After the same prefill, transformers' cache object: each attention layer's keys and
    values take the estimate's bytes per token (MLA's latent and shared RoPE key, as
    transformers caches them) for every token it holds, and each state-mixer
    layer's state the estimate's bytes. (How many tokens a windowed layer keeps is
    transformers' policy, window - 1 in its dynamic cache, so it is read, not compared.)"""
    from archscope.estimate.kv_cache import kv_elements_per_token
    from archscope.estimate.state import state_bytes_by_layer

    from archscope.measure.reference import cache_kwargs, returned_cache

    passed = (transformers.DynamicCache(config=built.hf.config)
              if built.case.module_state is not None else None)
    with torch.no_grad():
        out = built.hf(built.ids, use_cache=True,
                       **(cache_kwargs(built.hf, passed) if passed is not None else {}))
    theirs = their_cache_per_layer(passed if passed is not None else returned_cache(out))
    for i, held in (built.case.module_state(built.hf) if built.case.module_state else {}).items():
        theirs[i]["state_bytes"] += held
    states = state_bytes_by_layer(built.spec, "fp32")
    assert len(theirs) == built.spec.n_layers
    shared = built.spec.shared.at if built.spec.shared is not None else ()
    for layer, held in zip(built.spec.plan, theirs):
        expected_state = BATCH * sum(states.get(layer.index, {}).values())
        # a layer that runs a shared block (Zamba 2) caches that block's attention
        attention = built.spec.attention if layer.index in shared else layer.attention
        per_token = 4 * BATCH * kv_elements_per_token(attention) if attention is not None else 0
        assert (held["state_bytes"], held["kv_bytes"]) == \
            (expected_state, per_token * held["tokens"]), layer.index
        assert (held["tokens"] > 0) == (attention is not None), layer.index
