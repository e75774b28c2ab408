"""A prefill into an empty cache attends with SDPA's is_causal and no mask tensor, with the
logits of the explicit-mask path; windowed and chunked layers, and a prefill after cached
tokens, still pass a mask."""

import pytest
import torch
import torch.nn.functional as F

from archscope.nn import build_model
from archscope.nn.attention import attend

from parity import tiny_spec

SDPA = F.scaled_dot_product_attention


@pytest.fixture
def sdpa_calls(monkeypatch):
    """Every SDPA call's (attn_mask, is_causal), the call passed on unchanged."""
    calls = []

    def spy(*args, **kwargs):
        calls.append((kwargs.get("attn_mask"), kwargs.get("is_causal", False)))
        return SDPA(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    return calls


def _as_masked(*args, is_causal=False, **kwargs):
    """SDPA with is_causal spelled out as the boolean mask the cache path used to build."""
    if is_causal:
        t, s = args[0].shape[-2], args[1].shape[-2]
        kwargs["attn_mask"] = torch.ones(t, s, dtype=torch.bool).tril()
    return SDPA(*args, **kwargs)


def _prefill(spec, ids, cached: int = 0):
    model = build_model(spec)
    cache = model.new_cache(ids.shape[0], ids.shape[1])
    with torch.no_grad():
        if cached:
            model(ids[:, :cached], cache)
        return model, cache, model(ids[:, cached:], cache)


def test_empty_cache_prefill_passes_no_mask(sdpa_calls):
    spec = tiny_spec()
    _prefill(spec, torch.randint(0, 97, (2, 12)))
    assert len(sdpa_calls) == spec.n_layers
    assert all(mask is None and causal for mask, causal in sdpa_calls)


@pytest.mark.parametrize("attention", [dict(window=4), dict(chunk=4)])
def test_windowed_and_chunked_layers_still_mask(sdpa_calls, attention):
    _prefill(tiny_spec(attention=attention), torch.randint(0, 97, (2, 12)))
    assert sdpa_calls and all(mask is not None and not causal for mask, causal in sdpa_calls)


def test_prefill_after_cached_tokens_still_masks(sdpa_calls):
    spec = tiny_spec()
    _prefill(spec, torch.randint(0, 97, (2, 12)), cached=5)
    second = sdpa_calls[spec.n_layers:]  # the first call per layer is the empty-cache prefill
    assert len(second) == spec.n_layers
    assert all(mask is not None and not causal for mask, causal in second)


def test_is_causal_gives_the_masked_logits(monkeypatch):
    torch.manual_seed(0)
    spec, ids = tiny_spec(), torch.randint(0, 97, (2, 33))
    torch.manual_seed(1)
    _, _, unmasked = _prefill(spec, ids)
    monkeypatch.setattr(F, "scaled_dot_product_attention", _as_masked)
    torch.manual_seed(1)
    _, _, masked = _prefill(spec, ids)
    assert unmasked.dtype == torch.float32
    assert (unmasked - masked).abs().max().item() < 1e-6


def test_attend_alike_with_and_without_key_positions():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 9, 16), torch.randn(2, 2, 9, 16), torch.randn(2, 2, 9, 16)
    common = dict(start=0, window=None, scale=0.25, gqa=True)
    unmasked = attend(q, k, v, key_pos=None, **common)
    masked = attend(q, k, v, key_pos=torch.arange(9), **common)
    assert (unmasked - masked).abs().max().item() < 1e-6
