"""The Gated DeltaNet mixer's spec: its keys, what it derives, what it refuses (naming the key)."""

from __future__ import annotations

import pytest

from archscope.errors import SpecError
from archscope.spec.fields import from_mapping, to_mapping
from archscope.spec.gated_deltanet import DEFAULT_CHUNK, HF_KEYS, GatedDeltaNetSpec

# Qwen3-Next-80B-A3B's config.json values (the transformers config's defaults are the same)
QWEN3_NEXT = dict(kind="gated_deltanet", n_key_heads=16, n_value_heads=32, key_head_dim=128,
                  value_head_dim=128, conv_kernel=4)


def test_reads_and_derives():
    g = from_mapping(GatedDeltaNetSpec, QWEN3_NEXT)
    assert g.chunk_size == DEFAULT_CHUNK == 64
    assert (g.heads_per_key, g.key_dim, g.value_dim) == (2, 2048, 4096)
    assert g.conv_dim == 2 * 2048 + 4096
    assert (g.qkvz_width, g.ba_width) == (2 * 2048 + 2 * 4096, 64)
    assert from_mapping(GatedDeltaNetSpec, to_mapping(g)) == g


def test_hf_keys_name_fields():
    names = {f for f in GatedDeltaNetSpec.__dataclass_fields__}
    assert set(HF_KEYS.values()) <= names


@pytest.mark.parametrize("changes, key, words", [
    (dict(n_value_heads=24), "n_value_heads", "multiple of n_key_heads"),
    (dict(conv_kernel=0), "conv_kernel", "positive"),
    (dict(chunk_size=-64), "chunk_size", "positive"),
    (dict(key_head_dim=0), "key_head_dim", "positive"),
    (dict(kind="mamba2"), "kind", "gated_deltanet"),
    (dict(n_heads=4), "n_heads", "unknown key"),
])
def test_refuses_naming_the_key(changes, key, words):
    with pytest.raises(SpecError) as err:
        from_mapping(GatedDeltaNetSpec, {**QWEN3_NEXT, **changes}, "mixer")
    assert err.value.key == f"mixer.{key}"
    assert words in str(err.value)


def test_shape_keys_are_required():
    mapping = dict(QWEN3_NEXT)
    del mapping["key_head_dim"]
    with pytest.raises(SpecError, match="missing required key 'key_head_dim'"):
        from_mapping(GatedDeltaNetSpec, mapping)
