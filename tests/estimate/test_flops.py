"""FLOP counts on tiny specs, computed by hand in the comments (2 FLOPs per multiply-add)."""

import pytest

from archscope.errors import InputError
from archscope.estimate import (causal_pairs, count_params, decode_flops, prefill_flops,
                                training_flops, training_flops_per_token)

# Tiny base, multiply-adds per token per layer: projections 768, SwiGLU 1536; per query-key
# pair per layer: 4 heads x 4 (QK^T) + 4 heads x 4 (AV); lm_head 16 x 100 per position.


def test_decode_step_by_hand(tiny):
    f = decode_flops(tiny(), context=10)
    assert f.by_component == {
        "attention_proj": 2 * 2 * 768, "attention_qk": 2 * 2 * 10 * 16,
        "attention_av": 2 * 2 * 10 * 16, "ffn": 2 * 2 * 1536, "router": 0,
        "lm_head": 2 * 1600}
    assert f.total == 13696 and f.tokens == 1


def test_prefill_causal_and_full_by_hand(tiny):
    causal = prefill_flops(tiny(), 10)
    full = prefill_flops(tiny(), 10, attention="full")
    assert causal.by_component["attention_qk"] == 2 * 2 * 55 * 16  # 10*11/2 pairs per head
    assert full.by_component["attention_qk"] == 2 * 2 * 100 * 16
    assert causal.total == 131200 and full.total == 136960
    assert causal.total < full.total
    assert causal.by_component["lm_head"] == 2 * 10 * 1600  # logits for every position


def test_batch_multiplies(tiny):
    assert prefill_flops(tiny(), 10, batch=3).total == 3 * prefill_flops(tiny(), 10).total
    assert decode_flops(tiny(), 10, batch=3).total == 3 * decode_flops(tiny(), 10).total


def test_tied_head_still_does_its_matmul(tiny):
    assert decode_flops(tiny(tie_embeddings=True), 10).total == decode_flops(tiny(), 10).total


@pytest.mark.parametrize("n", [1, 2, 5, 9])
@pytest.mark.parametrize("window", [None, 1, 3, 5, 20])
def test_causal_pairs_match_brute_force(n, window):
    brute = sum(1 for i in range(n) for j in range(i + 1) if window is None or i - j < window)
    assert causal_pairs(n, window) == brute


def test_window_layers(tiny):
    spec = tiny(layers=[{"select": "1:2", "attention": {"window": 4}}])
    d = decode_flops(spec, 10)
    assert d.by_component["attention_qk"] == 2 * (10 + 4) * 16  # the window layer reads 4 keys
    p = prefill_flops(spec, 10)
    assert p.by_component["attention_qk"] == 2 * (55 + causal_pairs(10, 4)) * 16
    # dense kernels compute (and torch's counter counts) the full square, window or not
    assert prefill_flops(spec, 10, attention="full").by_component["attention_qk"] \
        == 2 * 2 * 100 * 16


def test_moe_counts_active_experts_only(tiny):
    f = decode_flops(tiny(ffn=tiny.MOE), 10)
    assert f.by_component["ffn"] == 2 * 2 * (2 + 1) * 384  # top_k 2 + 1 shared, 384 each
    assert f.by_component["router"] == 2 * 2 * 64


def test_mla_naive_convention(tiny):
    # q_a 128 + q_b 192 + kv_a 128 + kv_b 168 + o 192 multiply-adds per token.
    spec = tiny(attention=tiny.MLA)
    per_token = 128 + 192 + 128 + 168 + 192
    ten = decode_flops(spec, 10, mla="naive")
    assert ten.by_component["attention_proj"] == 2 * 2 * per_token
    assert ten.by_component["attention_qk"] == 2 * 2 * 10 * 4 * 6  # per head q/k dim 4+2
    assert ten.by_component["attention_av"] == 2 * 2 * 10 * 4 * 3  # per head v dim 3
    assert prefill_flops(spec, 10).by_component["attention_proj"] == 2 * 2 * 10 * per_token
    # a latent cache re-decompresses all 10 keys it reads, the new one included
    recompute = decode_flops(spec, 10, mla="recompute")
    assert recompute.total - ten.total == 2 * 2 * 9 * 168
    assert prefill_flops(spec, 10, mla="recompute").total == prefill_flops(spec, 10).total


def test_mla_absorbed(tiny):
    # kv_b_proj's halves move into the query and output: the same 168 multiply-adds per token;
    # attention runs on the latent: q/k dim 6 + 2, v dim 6, for each of the 4 heads.
    spec = tiny(attention=tiny.MLA)
    naive, absorbed = decode_flops(spec, 10), decode_flops(spec, 10, mla="absorbed")
    assert absorbed.by_component["attention_proj"] == naive.by_component["attention_proj"]
    assert absorbed.by_component["attention_qk"] == 2 * 2 * 10 * 4 * 8
    assert absorbed.by_component["attention_av"] == 2 * 2 * 10 * 4 * 6
    gqa = tiny()  # GQA layers ignore the MLA convention
    assert decode_flops(gqa, 10, mla="absorbed").total == decode_flops(gqa, 10).total


def test_training_is_three_forwards(tiny):
    fwd = prefill_flops(tiny(), 10)
    assert training_flops(tiny(), 10).total == 3 * fwd.total
    assert training_flops_per_token(tiny(), 10) == 3 * fwd.total / 10


def test_decode_is_about_two_flops_per_weight(preset):
    spec = preset("llama-3.2-1b")  # tied, no biases: every weight but the norms is a matmul
    p = count_params(spec)
    f = decode_flops(spec, 1)
    attention = f.by_component["attention_qk"] + f.by_component["attention_av"]
    norms = p.breakdown["norms"] + p.breakdown["final_norm"]
    assert f.total - attention == 2 * (p.total - norms)


def test_bad_arguments(tiny):
    with pytest.raises(InputError):
        prefill_flops(tiny(), 10, attention="half")
    with pytest.raises(InputError):
        decode_flops(tiny(), 0)
    with pytest.raises(InputError):
        decode_flops(tiny(), 4, mla="fast")
