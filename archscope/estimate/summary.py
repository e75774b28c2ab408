"""One model's headline estimates as a flat record (the `compare --format json` row, DESIGN §4)."""

from __future__ import annotations

from archscope.estimate.dtypes import canonical_dtype, nbytes
from archscope.estimate.flops import decode_flops, prefill_flops, training_flops
from archscope.estimate.kv_cache import kv_cache
from archscope.estimate.memory import activation_bytes
from archscope.estimate.params import count_params
from archscope.spec import ModelSpec


def _variants(spec: ModelSpec) -> str:
    """'GQA', 'MLA', or e.g. 'GQA+MHA' when layers differ (in first-seen order)."""
    return "+".join(dict.fromkeys(layer.attention.variant for layer in spec.plan))


def summary(spec: ModelSpec, seq_len: int = 4096, batch: int = 1, dtype: str = "bf16",
            attention: str = "causal") -> dict:
    """Headline numbers at one context, batch and dtype. Every count is an int.

    - params_*: count_params (embedding = token embedding + learned positions).
    - kv_cache_bytes: the cache of `batch` sequences of `seq_len` tokens, stored in `dtype`.
    - flops_per_token: one decode step at context seq_len, for ONE sequence.
    - prefill_flops: the forward over the whole prompt of seq_len tokens, for all `batch`
      sequences (batch x the single-prompt figure), logits for every position; causal by
      default, `attention="full"` for the full square dense kernels compute.
    - training_flops_per_token: 3 x forward per token at seq_len (causal).
    - weights_bytes: total params at `dtype`.
    - inference_memory_bytes: weights + kv cache + activations of the prefill, all at `dtype`.
    - exceeds_context: seq_len is past the model's max_seq_len (the numbers are a what-if).
    """
    dtype = canonical_dtype(dtype)
    params = count_params(spec)
    cache = kv_cache(spec, seq_len, batch, dtype)
    weights = nbytes(params.total, dtype)
    return {
        "model": spec.name,
        "attention": _variants(spec),
        "moe": spec.moe,
        "seq_len": seq_len,
        "batch": batch,
        "dtype": dtype,
        "params_total": params.total,
        "params_active": params.active,
        "params_embedding": params.embedding,
        "kv_cache_bytes": cache.bytes,
        "kv_cache_bytes_per_token": cache.bytes_per_token,
        "flops_per_token": decode_flops(spec, seq_len).total,
        "prefill_flops": prefill_flops(spec, seq_len, batch, attention=attention).total,
        "prefill_attention": attention,
        "training_flops_per_token": round(training_flops(spec, seq_len).per_token),
        "weights_bytes": weights,
        "inference_memory_bytes": weights + cache.bytes
        + activation_bytes(spec, seq_len, batch, dtype),
        "exceeds_context": seq_len > spec.max_seq_len,
    }
