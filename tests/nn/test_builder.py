"""The builder: meta builds allocate nothing; caches hold what they should; cache == no cache."""

import torch

from archscope.nn import build_model, count_parameters
from archscope.spec import load_spec

from parity import decode_stepwise, max_diff, tiny_spec


def test_meta_build_allocates_nothing():
    model = build_model(load_spec("llama-3.1-8b"), device="meta")
    assert all(p.device.type == "meta" for p in model.parameters())
    assert count_parameters(model) > 8e9


def test_tied_head_shares_storage():
    model = build_model(tiny_spec(tie_embeddings=True))
    assert model.lm_head.weight is model.embed_tokens.weight


def test_build_in_bf16():
    model = build_model(tiny_spec(), dtype=torch.bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    logits = model(torch.zeros(1, 3, dtype=torch.long))
    assert logits.dtype == torch.bfloat16 and logits.shape == (1, 3, 97)


def test_window_cache_holds_only_the_window():
    spec = tiny_spec(attention=dict(window=4))
    model = build_model(spec)
    cache = model.new_cache(batch=2, max_len=40)
    with torch.no_grad():
        model(torch.randint(0, 97, (2, 30)), cache)
    per_layer = 2 * 2 * spec.attention.n_kv_heads * spec.attention.head_dim * 4  # k,v; batch; fp32
    assert cache.nbytes() == spec.n_layers * per_layer * 4


def test_chunked_prefill_through_a_ring_buffer_matches_full_forward():
    spec = tiny_spec(attention=dict(window=5))
    model = build_model(spec)
    ids = torch.randint(0, 97, (2, 23))
    with torch.no_grad():
        full = model(ids)
        cache = model.new_cache(2, 23)
        parts = [model(ids[:, a:b], cache) for a, b in ((0, 7), (7, 16), (16, 23))]
    assert max_diff(torch.cat(parts, 1), full) < 1e-5
    assert max_diff(decode_stepwise(model, ids, prefill=9), full) < 1e-5
