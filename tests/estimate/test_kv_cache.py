"""KV-cache sizes: GQA, MLA, windows, dtypes."""

import pytest

from archscope.errors import InputError
from archscope.estimate import kv_cache, kv_cache_bytes, nbytes
from archscope.estimate.dtypes import UnknownDtypeError, canonical_dtype, dtype_bytes


def test_tiny_gqa(tiny):
    # 2 KV heads x head_dim 4, K and V: 16 elements per token per layer; 2 layers.
    c = kv_cache(tiny(), seq_len=10, batch=3, dtype="bf16")
    assert c.elements_per_token == (16, 16)
    assert c.bytes_per_token_per_layer == (32, 32)
    assert c.bytes_per_token == 64
    assert c.bytes == 3 * 10 * 2 * 16 * 2 == sum(c.bytes_per_layer)
    assert c.decompressed_bytes == c.bytes
    assert c.mha_bytes == 3 * 10 * 2 * (2 * 4 * 4) * 2  # every query head its own K and V
    assert kv_cache_bytes(tiny(), 10, 3, "bf16") == c.bytes


def test_window_caps_the_tokens_held(tiny):
    spec = tiny(layers=[{"select": "1:2", "attention": {"window": 4}}])
    c = kv_cache(spec, seq_len=10, dtype="fp32")
    assert c.tokens_held == (10, 4)
    assert c.bytes == (10 + 4) * 16 * 4
    assert kv_cache(spec, seq_len=3, dtype="fp32").tokens_held == (3, 3)


def test_equal_attention_specs_built_apart_cache_alike(tiny):
    # Layer 1's override restates the model's head count and layer 2's sets a window, then
    # layer 3's lifts it again: layers 1 and 3 hold attention specs equal to the model's but
    # built apart (other objects). Every layer must still be priced, by value, not by object.
    spec = tiny(n_layers=4, layers=[{"select": "1:2", "attention": {"n_kv_heads": 2}},
                                    {"select": "2:4", "attention": {"window": 4}},
                                    {"select": "3:4", "attention": {"window": None}}])
    plain = [layer.attention for layer in spec.plan]
    assert plain[1] == plain[3] == plain[0] and plain[1] is not plain[0]
    c = kv_cache(spec, seq_len=10, dtype="fp32")
    assert c.tokens_held == (10, 10, 4, 10)
    assert c.elements_per_token == (16, 16, 16, 16)
    assert c.bytes_per_layer == (640, 640, 256, 640)
    assert c.bytes == sum(c.bytes_per_layer) == kv_cache_bytes(spec, 10, 1, "fp32")
    # every query head its own K and V: 4 heads x 4 dims x 2, over the 34 tokens held
    assert c.mha_bytes == sum(c.mha_bytes_per_layer) == (10 + 10 + 4 + 10) * (4 * 4 * 2) * 4


def test_tiny_mla(tiny):
    # latent 6 + shared RoPE key 2 = 8; decompressed: 4 heads x (4+2) K + 4 heads x 3 V = 36.
    c = kv_cache(tiny(attention=tiny.MLA), seq_len=5, dtype="bf16")
    assert c.elements_per_token == (8, 8)
    assert c.bytes == 2 * 5 * 8 * 2
    assert c.decompressed_bytes == c.mha_bytes == 2 * 5 * 36 * 2


def test_deepseek_v2_mla_is_576_per_token_per_layer(preset):
    spec = preset("deepseek-v2")
    c = kv_cache(spec, seq_len=1)
    assert set(c.elements_per_token) == {576}  # 512 latent + 64 RoPE key
    assert c.decompressed_bytes == 60 * 128 * (192 + 128) * 2


def test_llama_3_2_1b(preset):
    c = kv_cache(preset("llama-3.2-1b"), seq_len=4096, dtype="bf16")
    assert c.bytes_per_token == 16 * 2 * 8 * 64 * 2 == 32768
    assert c.bytes == 4096 * 32768


def test_mistral_window_caps_its_cache(preset):
    spec = preset("mistral-7b-v0.1")
    assert kv_cache_bytes(spec, 32768) == kv_cache_bytes(spec, 4096)


def test_dtypes():
    assert dtype_bytes("int4") == 0.5 and dtype_bytes("bf16") == 2
    assert canonical_dtype("torch.bfloat16") == canonical_dtype("BF16") == "bf16"
    assert nbytes(3, "int4") == 2  # rounded up to a whole byte
    with pytest.raises(InputError, match="fp32.*bf16.*int4"):
        dtype_bytes("fp12")
    assert issubclass(UnknownDtypeError, InputError)
