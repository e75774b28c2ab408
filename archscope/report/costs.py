"""One model's computed costs as JSON-ready records: parameters, KV cache, FLOPs, memory.

The conventions are the estimators' (DESIGN.md section 3) and are stated once in CONVENTIONS,
which the reports print under their tables.
"""

from __future__ import annotations

from archscope.estimate import (count_params, decode_flops, kv_cache, kv_elements_per_token,
                                mha_elements_per_token, nbytes, prefill_flops, weights_table)
from archscope.estimate.kv_cache import tokens_held
from archscope.report.records import distinct, layers_text
from archscope.spec.schema import ModelSpec

CACHE_DTYPE = "fp16"  # the documents' tables are in fp16 (bf16 has the same size)
TABLE_LENGTHS = (1024, 4096)  # the documents' KV-cache contexts
MLA_CONVENTIONS = ("naive", "recompute", "absorbed")

CONVENTIONS = {
    "params": "unique tensors: a tied lm_head counts once; active = top_k routed + shared "
              "experts, everything else whole; embedding = token embedding + learned positions",
    "kv_cache": "elements per token per layer: GQA 2 x n_kv_heads x head_dim; MLA kv_lora_rank "
                "+ qk_rope_head_dim; sliding-window layers hold at most `window` tokens; "
                f"priced in {CACHE_DTYPE}, batch 1",
    "flops": "2 FLOPs per multiply-add, matmuls only; decode = one new token reading `context` "
             "keys (itself included); prefill causal; lm_head for every position; MoE: active "
             "experts only; MLA: 'naive' (kv_b_proj decompresses per-head K/V once per token)",
    "units": "bytes are integers; MB = 10^6 bytes, MiB = 2^20 bytes, GB = 10^9, GiB = 2^30",
}


def context_series(spec: ModelSpec, start: int = 128) -> list[int]:
    """Powers of two from `start` up to the model's context, and the context itself."""
    out, n = [], start
    while n < spec.max_seq_len:
        out.append(n)
        n *= 2
    return out + [spec.max_seq_len]


def kv_at(spec: ModelSpec, seq_len: int) -> dict:
    """The cache at one context: per distinct attention layer and in total (fp16, batch 1)."""
    cache = kv_cache(spec, seq_len, 1, CACHE_DTYPE)
    per_layer = [{"layers": layers_text(idx), "count": len(idx),
                  "tokens_held": tokens_held(attn, seq_len),
                  "bytes": nbytes(tokens_held(attn, seq_len) * kv_elements_per_token(attn),
                                  CACHE_DTYPE),
                  "mha_bytes": nbytes(tokens_held(attn, seq_len) * mha_elements_per_token(attn),
                                      CACHE_DTYPE)}
                 for attn, idx in distinct(spec, "attention")]
    return {"seq_len": seq_len, "dtype": CACHE_DTYPE, "exceeds_context": seq_len > spec.max_seq_len,
            "per_layer": per_layer, "bytes": cache.bytes,
            "decompressed_bytes": cache.decompressed_bytes, "mha_bytes": cache.mha_bytes}


def flops_at(spec: ModelSpec, context: int) -> dict:
    """Decode step FLOPs at `context` (naive MLA) by component, and the other MLA conventions."""
    step = decode_flops(spec, context)
    record = {"context": context, "total": step.total, "by_component": step.by_component}
    if any(layer.attention.kind == "mla" for layer in spec.plan):
        record["mla_conventions"] = {c: decode_flops(spec, context, mla=c).total
                                     for c in MLA_CONVENTIONS}
    return record


def cost_record(spec: ModelSpec) -> dict:
    params = count_params(spec)
    lm_head = spec.vocab_size * spec.d_model
    series = context_series(spec)
    return {
        "params": {"total": params.total, "active": params.active, "embedding": params.embedding,
                   "token_embedding": params.breakdown.get("embedding", 0),
                   "positional": params.breakdown.get("positional", 0),
                   "lm_head": params.breakdown.get("lm_head", 0),
                   "saved_by_tying": lm_head if spec.tie_embeddings else 0,
                   "groups": params.groups, "breakdown": params.breakdown},
        "kv_cache": [kv_at(spec, n) for n in TABLE_LENGTHS],
        "decode_flops": [flops_at(spec, n) for n in TABLE_LENGTHS],
        "prefill_flops": [{"seq_len": n, "total": prefill_flops(spec, n).total}
                          for n in TABLE_LENGTHS],
        "weights_bytes": weights_table(spec),
        "series": {
            "context": series,
            "kv_cache_bytes": [kv_cache(spec, n, 1, CACHE_DTYPE).bytes for n in series],
            "kv_cache_decompressed_bytes": [kv_cache(spec, n, 1, CACHE_DTYPE).decompressed_bytes
                                            for n in series],
            "decode_flops": [decode_flops(spec, n).total for n in series],
        },
    }
