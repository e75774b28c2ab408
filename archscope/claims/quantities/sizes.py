"""Size quantities for claims: parameters, KV cache, memory and FLOPs (registry.py).

Each reads the model's record (archscope.estimate.model_record) built under the claim's
conditions, the same record `show`, `compare` and the reports print; per-layer element counts
come from the kinds' cache layouts. None recomputes what the record states (the eager attention
scores, which no estimator prices, are the one formula of its own here).
"""

from __future__ import annotations

from archscope.claims.quantities.registry import attn_of, quantity, uniform
from archscope.errors import InputError, quote
from archscope.estimate import COMPONENTS, model_record, nbytes
from archscope.estimate.flops import INDEXER_COMPONENTS, MIXER_COMPONENTS
from archscope.estimate.kv_cache import (decompressed_elements_per_token,
                                         kv_elements_per_token, mha_elements_per_token)
from archscope.estimate.params import GROUPS, group_of
from archscope.estimate.structure import layer_parts
from archscope.spec.fields import did_you_mean


_RECORDS: dict = {}  # (id(spec), conditions) -> (spec, record): the last few asked for
_RECORDS_MAX = 256


def record_at(spec, seq_len: int = 1, dtype: str = "bf16", batch: int = 1,
              attention: str = "causal"):
    """The record under a claim's conditions; `dtype` prices the cache and the weights alike.
    Kept for the next claim of the same model and conditions: a document states the same
    model's figures many times, and a record takes a millisecond."""
    key = (id(spec), seq_len, dtype, batch, attention)
    held = _RECORDS.get(key)
    if held is not None and held[0] is spec:  # the spec itself is held: its id is not reused
        return held[1]
    if len(_RECORDS) >= _RECORDS_MAX:
        _RECORDS.clear()
    record = model_record(spec, seq_len, batch=batch, weight_format=dtype, cache_dtype=dtype,
                          attention_flops=attention)
    _RECORDS[key] = (spec, record)
    return record


def _params(spec):
    """The parameter counts of the record (the same `count_params` every surface reads)."""
    return record_at(spec).params


# --- parameters ---------------------------------------------------------------------------

@quantity("params_total", "params")
def params_total(spec):
    """Unique parameters: a tied lm_head counts once."""
    return _params(spec).total


@quantity("params_active", "params")
def params_active(spec):
    """Parameters one token uses (MoE: top_k routed + shared experts; embeddings included)."""
    return _params(spec).active


@quantity("params_embedding", "params")
def params_embedding(spec):
    """Token embedding + learned position table."""
    return _params(spec).embedding


@quantity("params_token_embedding", "params")
def params_token_embedding(spec):
    """The token embedding table alone: vocab_size x d_model."""
    return _params(spec).breakdown["embedding"]


@quantity("params_non_embedding", "params")
def params_non_embedding(spec):
    return _params(spec).non_embedding


@quantity("params_lm_head", "params")
def params_lm_head(spec):
    """lm_head's own parameters: 0 when tied to the embedding."""
    return _params(spec).breakdown.get("lm_head", 0)


@quantity("params_lm_head_weight", "params")
def params_lm_head_weight(spec):
    """The lm_head matrix, d_model x vocab_size, whether or not it is tied."""
    breakdown = _params(spec).breakdown  # tied: lm_head counts 0, the matrix is the embedding
    return breakdown.get("lm_head") or breakdown["embedding"]


def _keys(component) -> list[str]:
    keys = [component] if isinstance(component, str) else list(component)
    valid = set(GROUPS) | {"attention.q_proj", "attention.k_proj", "attention.v_proj",
                           "attention.o_proj", "ffn.gate_proj", "ffn.up_proj", "ffn.down_proj",
                           "ffn.router", "ffn.experts", "ffn.shared_experts"}
    for key in keys:
        if not (key in valid or key.startswith("attention.")):
            raise InputError(f"unknown component {quote(key)}{did_you_mean(key, valid)}; expected a "
                             f"group ({', '.join(GROUPS)}) or a breakdown key such as "
                             "attention.q_proj or ffn.up_proj")
    return keys


def _matches(name: str, keys: list[str]) -> bool:
    return any(name == k or group_of(name) == k for k in keys)


@quantity("params_component", "params")
def params_component(spec, component, per_layer=False, layer=None):
    """Parameters of breakdown keys or groups (a string or a list), over the whole model or,
    with per_layer, in one decoder layer (the value all layers share, or `layer`)."""
    keys = _keys(component)
    if not per_layer and layer is None:
        return sum(v for k, v in _params(spec).breakdown.items() if _matches(k, keys))
    return uniform(spec, f"params of {component}", lambda e: sum(
        p.params * p.copies for p in layer_parts(spec, e) if _matches(p.name, keys)), layer)


def _share(spec, component):
    return 100 * params_component(spec, component) / _params(spec).total


quantity("params_share", "percent", "params_component(component) as a percent of params_total.")(
    lambda spec, component: _share(spec, component))
for _group in ("attention", "ffn", "norms"):
    quantity(f"params_{_group}", "params", f"The {_group} group, all layers.")(
        lambda spec, _g=_group: params_component(spec, _g))
    quantity(f"params_{_group}_per_layer", "params", f"The {_group} group of one layer.")(
        lambda spec, layer=None, _g=_group: params_component(spec, _g, True, layer))
for _proj in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
    _key = ("attention." if _proj[0] in "qkvo" else "ffn.") + _proj
    quantity(f"params_{_proj}_per_layer", "params", f"{_key} of one layer.")(
        lambda spec, layer=None, _k=_key: params_component(spec, _k, True, layer))
quantity("params_kv_proj_per_layer", "params", "k_proj + v_proj of one layer.")(
    lambda spec, layer=None: params_component(
        spec, ["attention.k_proj", "attention.v_proj"], True, layer))


# --- KV cache -----------------------------------------------------------------------------

@quantity("kv_elements_per_token_per_layer", "elements")
def kv_elements_per_token_per_layer(spec, layer=None):
    """What the cache holds per token per layer: GQA 2 x n_kv_heads x head_dim; MLA
    kv_lora_rank + qk_rope_head_dim (the latent and the shared RoPE key)."""
    return uniform(spec, "the cache per token", lambda e: kv_elements_per_token(e.attention) if e.attention else 0,
                   layer)


@quantity("kv_elements_per_token_mha", "elements")
def kv_elements_per_token_mha(spec, layer=None):
    """MHA-equivalent cache per token per layer: n_heads x (qk_head_dim + v_head_dim).

    Every query head keeps its own key and value: 2 x n_heads x head_dim for GQA; for MLA
    n_heads x (qk_nope + qk_rope + v_head_dim), the decompressed size. The one value
    archscope.estimate.kv_cache.mha_elements_per_token states."""
    return mha_elements_per_token(attn_of(spec, layer))


@quantity("kv_elements_per_token_decompressed", "elements")
def kv_elements_per_token_decompressed(spec, layer=None):
    """Per token per layer after MLA's up-projection (K: qk_nope + qk_rope, V: v_head_dim)."""
    return uniform(spec, "the cache per token",
                   lambda e: decompressed_elements_per_token(e.attention) if e.attention else 0,
                   layer)


@quantity("kv_bytes_per_token", "bytes")
def kv_bytes_per_token(spec, dtype):
    """One more token of context, all layers, batch 1."""
    return record_at(spec, dtype=dtype).kv_cache_bytes_per_token


@quantity("kv_cache_bytes", "bytes")
def kv_cache_bytes(spec, seq_len, dtype, batch=1):
    """The whole cache: batch x tokens held (window-capped) x elements x dtype bytes."""
    return record_at(spec, seq_len, dtype, batch).at(seq_len).cache.bytes


@quantity("kv_cache_bytes_per_layer", "bytes")
def kv_cache_bytes_per_layer(spec, seq_len, dtype, batch=1, layer=None):
    per = record_at(spec, seq_len, dtype, batch).at(seq_len).cache.bytes_per_layer
    return uniform(spec, "the cache per layer", lambda e: per[e.index], layer)


@quantity("kv_cache_decompressed_bytes", "bytes")
def kv_cache_decompressed_bytes(spec, seq_len, dtype, batch=1):
    """The same tokens stored after MLA's up-projection (GQA: the cache itself)."""
    return record_at(spec, seq_len, dtype, batch).at(seq_len).cache.decompressed_bytes


# --- memory -------------------------------------------------------------------------------

@quantity("weights_bytes", "bytes")
def weights_bytes_q(spec, dtype):
    """Total parameters x bytes per parameter."""
    return record_at(spec, dtype=dtype).weights_bytes


@quantity("token_embedding_bytes", "bytes")
def token_embedding_bytes(spec, dtype):
    """vocab_size x d_model at dtype."""
    return nbytes(params_token_embedding(spec), dtype)


@quantity("attention_scores_bytes", "bytes")
def attention_scores_bytes(spec, seq_len, dtype, heads=None, batch=1):
    """One layer's full seq_len x seq_len score matrices, `heads` of them (default n_heads):
    what an eager (non-flash) kernel materialises."""
    heads = attn_of(spec).n_heads if heads is None else heads
    return nbytes(batch * heads * seq_len * seq_len, dtype)


# --- FLOPs --------------------------------------------------------------------------------

# a hybrid's state mixers' FLOPs and a DSA indexer's are part of the total
_ALL = COMPONENTS + MIXER_COMPONENTS + INDEXER_COMPONENTS


def _flop_keys(components) -> list[str]:
    keys = list(_ALL) if components is None else \
        [components] if isinstance(components, str) else list(components)
    for key in keys:
        if key not in _ALL:
            raise InputError(f"unknown FLOP component {quote(key)}{did_you_mean(key, _ALL)}; "
                             f"expected some of {', '.join(_ALL)}")
    return keys


def _decode(spec, context, keys) -> int:
    """Decode FLOPs of `keys`; the context only matters to attention_qk/av, so it may be
    left out when those are (claims of the "2 x weights per token" kind)."""
    if context is None:
        if {"attention_qk", "attention_av"} & set(keys):
            raise InputError("decode FLOPs with attention_qk/attention_av need the condition "
                             "`context`")
        context = 1
    count = record_at(spec, context).at(context).decode
    return sum(count.by_component.get(k, 0) for k in keys)  # mixer/indexer keys: some only


@quantity("decode_flops", "FLOPs")
def decode_flops_q(spec, context=None, components=None):
    """One decode step (2 FLOPs per multiply-add, matmuls only) at `context`; `components`
    picks some of attention_proj, attention_qk, attention_av, ffn, router, lm_head."""
    return _decode(spec, context, _flop_keys(components))


@quantity("decode_flops_per_layer", "FLOPs")
def decode_flops_per_layer(spec, context=None, components=("attention_proj", "attention_qk",
                                                           "attention_av", "ffn", "router")):
    """decode_flops of the decoder layers averaged over n_layers (lm_head is not a layer)."""
    keys = _flop_keys(components)
    if "lm_head" in keys:
        raise InputError("lm_head is not part of a layer")
    return _decode(spec, context, keys) / spec.n_layers


@quantity("prefill_flops", "FLOPs")
def prefill_flops_q(spec, seq_len, attention="causal", components=None):
    """A causal (or full) forward over seq_len tokens, one sequence."""
    count = record_at(spec, seq_len, attention=attention).at(seq_len).prefill
    return sum(count.by_component.get(k, 0) for k in _flop_keys(components))


@quantity("training_flops_per_token", "FLOPs")
def training_flops_per_token_q(spec, seq_len):
    """3 x forward FLOPs per token at seq_len."""
    return record_at(spec, seq_len).at(seq_len).training_flops_per_token
