"""KV-cache size from the spec alone.

Per token per layer, in elements (numbers), what the model's own cache holds:
- GQA (MHA, MQA): 2 * n_kv_heads * head_dim (one key and one value per KV head);
- MLA: kv_lora_rank + qk_rope_head_dim (the compressed latent and the one RoPE key shared by
  all heads; DeepSeek-V2 paper, section 2.1; transformers' DeepseekV2 caches exactly these),
  plus the indexer's key, index head_dim, on a layer with a sparse-attention indexer of its
  own (DeepSeek-V3.2: 512 + 64 + 128 = 704; transformers' DynamicIndexedLayer keeps it beside
  the latent; a shared indexer, GLM-5's, caches none);
each from the kind's entry in archscope/kinds.
Beside it, two reference sizes for the same layers:
- decompressed: what a naive MLA implementation stores after kv_b_proj,
  n_heads * (qk_nope + qk_rope) for K plus n_heads * v_head_dim for V (GQA: same as cached),
  and any indexer keys (those are not compressed);
- MHA-equivalent: every query head keeps its own key and value,
  n_heads * (qk_head_dim + value_head_dim), i.e. 2 * n_heads * head_dim for GQA (for MLA it
  equals the decompressed size).
A sliding-window layer holds min(seq_len, window) tokens, any other layer seq_len tokens; a
layer without attention (a state mixer, an MLP-only layer) holds none (a state mixer's
constant state is estimate/state.py's).
Total bytes = batch * sum over layers (tokens held * elements per token) * dtype bytes.

Left out: allocator padding, paged-cache block rounding, the quantisation scales of an int8/int4
cache, and static caches preallocated to max_seq_len (price those with seq_len=max_seq_len).
"""

from __future__ import annotations

from dataclasses import dataclass

from archscope.estimate.dtypes import canonical_dtype, nbytes
from archscope.estimate.shared_blocks import kv_uses
from archscope.kinds import attention_kind
from archscope.spec import AttentionSpec, ModelSpec


def kv_elements_per_token(attn: AttentionSpec) -> int:
    """Elements the cache holds per token for one layer (its kind's entry says)."""
    return attention_kind(attn.kind).cache_elements(attn)


def decompressed_elements_per_token(attn: AttentionSpec) -> int:
    """Per token per layer after MLA's up-projection (GQA: nothing to decompress)."""
    return attention_kind(attn.kind).decompressed_elements(attn)


def mha_elements_per_token(attn: AttentionSpec) -> int:
    """Per token per layer if every query head kept its own key and value: the one stated
    MHA-equivalent size (DeepSeek-V2's MLA layer: 128 * (192 + 128) = 40,960)."""
    return attn.n_heads * (attn.qk_head_dim + attn.value_head_dim)


def tokens_held(attn: AttentionSpec, seq_len: int) -> int:
    """Tokens a layer attends to and caches at context seq_len (AttentionSpec.tokens_held)."""
    return attn.tokens_held(seq_len)


@dataclass(frozen=True)
class KVCache:
    seq_len: int
    batch: int
    dtype: str
    elements_per_token: tuple[int, ...]  # per layer
    tokens_held: tuple[int, ...]  # per layer: seq_len, or the window when smaller
    bytes_per_layer: tuple[int, ...]  # batch x tokens held x elements, at dtype
    mha_bytes_per_layer: tuple[int, ...]  # the same tokens, one K and V per query head
    bytes: int  # the whole cache
    decompressed_bytes: int  # the same tokens, stored decompressed (MLA; GQA: == bytes)
    mha_bytes: int  # the same tokens, one K and V per query head

    @property
    def bytes_per_token_per_layer(self) -> tuple[int, ...]:
        return tuple(nbytes(e, self.dtype) for e in self.elements_per_token)

    @property
    def elements_per_token_all_layers(self) -> int:
        return sum(self.elements_per_token)

    @property
    def bytes_per_token(self) -> int:
        """One more token of context, all layers, batch 1 (ignoring window caps)."""
        return nbytes(self.elements_per_token_all_layers, self.dtype)


def _cache_bytes(spec: ModelSpec, seq_len: int, batch: int, dtype: str, per_token) -> int:
    return nbytes(batch * (sum(count * tokens_held(layer.attention, seq_len)
                               * per_token(layer.attention)
                               for layer, count in spec.distinct_layers
                               if layer.attention is not None)
                           + sum(tokens_held(a, seq_len) * per_token(a)  # shared blocks' uses
                                 for _, a in kv_uses(spec))), dtype)


def kv_cache(spec: ModelSpec, seq_len: int, batch: int = 1, dtype: str = "bf16") -> KVCache:
    """The cache after `seq_len` tokens for `batch` sequences, stored in `dtype`."""
    dtype = canonical_dtype(dtype)
    # Per attention spec object, one row: tokens held, then per token the elements cached, the
    # MHA-equivalent and the decompressed ones, then the layer's bytes and MHA-equivalent
    # bytes. The plan's layers share their spec objects, so each is asked once; equal specs
    # may still be two objects, so every object in the plan is keyed (not only the first of
    # each of distinct_layers).
    row_of: dict[int, tuple[int, ...]] = {}
    # without `layers` overrides every layer holds the model's own attention (or none): the
    # first layer's is every layer's, and no per-layer loop is needed (a sweep's variants)
    shared = dict(kv_uses(spec))  # layer -> the attention a shared block runs there
    per_layer = bool(spec.layers or shared)
    plan = spec.plan if per_layer else spec.plan[:1]
    for attn in [layer.attention for layer in plan] + list(shared.values()):
        if attn is not None and id(attn) not in row_of:
            held, elements = tokens_held(attn, seq_len), kv_elements_per_token(attn)
            mha = mha_elements_per_token(attn)
            row_of[id(attn)] = (held, elements, mha, decompressed_elements_per_token(attn),
                                nbytes(batch * held * elements, dtype),
                                nbytes(batch * held * mha, dtype))
    no_cache = (0,) * 6  # a layer without attention caches nothing per token
    rows = [row_of.get(id(shared.get(layer.index, layer.attention)), no_cache) for layer in plan]
    held, elements, _, _, layer_bytes, layer_mha_bytes = zip(
        *(rows if per_layer else rows * spec.n_layers))
    counts = [(row_of.get(id(layer.attention), no_cache), n)
              for layer, n in spec.distinct_layers] + [(row_of[id(a)], 1) for a in shared.values()]

    def whole(column: int) -> int:  # as _cache_bytes: one sum over the layers, then bytes
        return nbytes(batch * sum(n * row[0] * row[column] for row, n in counts), dtype)

    return KVCache(
        seq_len=seq_len, batch=batch, dtype=dtype,
        elements_per_token=elements, tokens_held=held,
        bytes_per_layer=layer_bytes, mha_bytes_per_layer=layer_mha_bytes,
        bytes=whole(1), decompressed_bytes=whole(3), mha_bytes=whole(2))


def kv_cache_bytes(spec: ModelSpec, seq_len: int, batch: int = 1, dtype: str = "bf16") -> int:
    """Bytes of the whole cache (see `kv_cache` for the parts)."""
    return _cache_bytes(spec, seq_len, batch, canonical_dtype(dtype), kv_elements_per_token)
