"""One model's computed costs as JSON-ready records, read off its ModelRecord (estimate/record.py).

Nothing is computed here: every number is a field of the record; this module only picks the
contexts each surface shows and lays the fields out for the pages, `show` and estimates.json.
The conventions are the record's and are stated once in `conventions_text`, which the pages
print under their tables.
"""

from __future__ import annotations

from archscope.estimate import ModelRecord, model_record
from archscope.estimate.record import AtContext
from archscope.report.records import layers_text
from archscope.spec.schema import ModelSpec

REPORT_DTYPE = "fp16"  # the documents' tables are in fp16 (bf16 has the same size)
TABLE_LENGTHS = (1024, 4096)  # the documents' KV-cache and FLOPs contexts
DIVE_LENGTHS = (512, 1024, 4096, 8192, 32768, 131072)
SHOW_LENGTHS = (1024, 4096, 32768)
# the context at which a deep dive works out the comparison's cache columns (kv_cache_bytes,
# state_bytes, cache_bytes) from the model's own numbers, even past its context: 128K is where
# a per-token cache and a constant state differ most among the contexts people compare at
CACHE_SUM_LENGTH = 131072


def conventions_text(record: ModelRecord) -> dict[str, str]:
    """One sentence per convention, worded from the record's own conventions."""
    v = record.conventions
    return {
        "params": "unique tensors: a tied lm_head counts once; active = top_k routed + shared "
                  "experts, everything else whole; embedding = token embedding + learned positions",
        "kv_cache": "elements per token per layer: GQA 2 x n_kv_heads x head_dim; MLA kv_lora_rank "
                    "+ qk_rope_head_dim; sliding-window layers hold at most `window` tokens; "
                    "MHA-equivalent: n_heads x (q/k head dim + v head dim); "
                    f"priced in {v.cache_dtype}, batch {v.batch}",
        "flops": "2 FLOPs per multiply-add, matmuls only; decode = one new token reading `context` "
                 f"keys (itself included); prefill {v.attention_flops}; lm_head for every position; "
                 f"MoE: active experts only; MLA decode: '{v.mla_flops}' (kv_b_proj folded into the "
                 "query and output, attention on the cached latent); a prefill decompresses each "
                 "latent once",
        "units": "bytes are integers; MB = 10^6 bytes, MiB = 2^20 bytes, GB = 10^9, GiB = 2^30",
        **({"state": "state-mixer layers hold a constant state per sequence instead of a "
                     "per-token cache, whatever the context, each part in the dtype "
                     "transformers' class keeps it in (the mixer's explanation says which)"}
           if record.state_groups else {}),
    }


def below_context(spec: ModelSpec, lengths) -> list[int]:
    """The given lengths below the model's context, and the context itself."""
    return sorted({n for n in lengths if n < spec.max_seq_len} | {spec.max_seq_len})


def context_series(spec: ModelSpec, start: int = 128) -> list[int]:
    """Powers of two from `start` up to the model's context, and the context itself."""
    out, n = [], start
    while n < spec.max_seq_len:
        out.append(n)
        n *= 2
    return out + [spec.max_seq_len]


def report_record(spec: ModelSpec) -> ModelRecord:
    """The record every report page of `spec` reads: fp16, batch 1, at every context shown."""
    lengths = sorted({*TABLE_LENGTHS, *below_context(spec, DIVE_LENGTHS), *context_series(spec),
                      CACHE_SUM_LENGTH})
    return model_record(spec, lengths, weight_format=REPORT_DTYPE)


def kv_at(record: ModelRecord, c: AtContext) -> dict:
    """The cache at one context: per group of layers that cache alike, and in total."""
    cache = c.cache
    per_layer = [{"layers": layers_text(list(g.layers)), "count": len(g.layers),
                  "tokens_held": cache.tokens_held[g.layers[0]],
                  "bytes": cache.bytes_per_layer[g.layers[0]],
                  "mha_bytes": cache.mha_bytes_per_layer[g.layers[0]]}
                 for g in record.cache_groups]
    return {"seq_len": c.seq_len, "dtype": cache.dtype, "exceeds_context": c.exceeds_context,
            "per_layer": per_layer, "bytes": cache.bytes,
            "decompressed_bytes": cache.decompressed_bytes, "mha_bytes": cache.mha_bytes,
            "state_bytes": c.state_bytes}


def cache_sum(record: ModelRecord, seq_len: int = CACHE_SUM_LENGTH) -> dict:
    """How the comparison's cache columns at `seq_len` add up, one sequence: the row `compare`
    prints (record.row) and the terms it is the sum of, each group of layers that cache or
    hold alike with its count, tokens held and bytes per token (or per layer, for a state)."""
    c, row = record.at(seq_len), record.row(seq_len)
    kv = [{"layers": layers_text(list(g.layers)), "count": len(g.layers),
           "tokens_held": c.cache.tokens_held[g.layers[0]], "bytes_per_token": g.bytes_per_token,
           "bytes": len(g.layers) * c.cache.bytes_per_layer[g.layers[0]]}
          for g in record.cache_groups]
    return {"seq_len": seq_len, "max_seq_len": record.spec.max_seq_len,
            "exceeds_context": row["exceeds_context"], "kv_dtype": row["kv_dtype"],
            "kv_cache_bytes": row["kv_cache_bytes"], "state_bytes": row["state_bytes"],
            "cache_bytes": row["cache_bytes"], "kv_groups": kv, "state_groups": state_record(record)}


def flops_at(c: AtContext) -> dict:
    """A decode step at this context by component, and the MLA conventions when they differ."""
    out = {"context": c.seq_len, "total": c.decode.total, "by_component": c.decode.by_component,
           "mla_convention": c.decode.mla}
    if c.decode_by_mla:
        out["mla_conventions"] = c.decode_by_mla
    return out


def memory_at(c: AtContext) -> dict:
    m = c.memory
    return {"seq_len": c.seq_len, "batch": m.batch, "weights_dtype": m.dtype,
            "kv_dtype": m.kv_dtype, "weights": m.weights, "kv_cache": m.kv_cache,
            "state": m.state, "activations": m.activations, "total": m.total}


def state_record(record: ModelRecord) -> list[dict]:
    """The state-mixer layers' constant state, one sequence, per group of layers alike."""
    return [{"layers": layers_text(list(g.layers)), "count": len(g.layers), "kind": g.kind,
             "bytes_by_part": g.bytes_by_part, "bytes_per_layer": g.bytes_per_layer}
            for g in record.state_groups]


def params_record(spec: ModelSpec, record: ModelRecord) -> dict:
    p = record.params
    return {"total": p.total, "active": p.active, "embedding": p.embedding,
            "token_embedding": p.breakdown.get("embedding", 0),
            "positional": p.breakdown.get("positional", 0),
            "lm_head": p.breakdown.get("lm_head", 0),
            "saved_by_tying": p.tied_head, "tied_lm_head": spec.tie_embeddings,
            "groups": p.groups, "breakdown": p.breakdown,
            "mtp": p.mtp, "mtp_layers": spec.mtp_layers}


def cost_record(spec: ModelSpec, record: ModelRecord) -> dict:
    """The comparison's numbers: params, the cache and FLOPs at TABLE_LENGTHS, the series."""
    series = [record.at(n) for n in context_series(spec)]
    return {
        "conventions": conventions_text(record),
        "params": params_record(spec, record),
        "kv_cache": [kv_at(record, record.at(n)) for n in TABLE_LENGTHS],
        "decode_flops": [flops_at(record.at(n)) for n in TABLE_LENGTHS],
        "prefill_flops": [{"seq_len": n, "total": record.at(n).prefill.total}
                          for n in TABLE_LENGTHS],
        "weights_bytes": record.weights_by_format,
        "series": {
            "context": [c.seq_len for c in series],
            "kv_cache_bytes": [c.cache.bytes for c in series],
            "kv_cache_decompressed_bytes": [c.cache.decompressed_bytes for c in series],
            "state_bytes": [c.state_bytes for c in series],
            "decode_flops": [c.decode.total for c in series],
        },
    }


def details_record(spec: ModelSpec, record: ModelRecord, lengths) -> dict:
    """Per-context tables for `show` and the deep dives, at `lengths` (all in the record)."""
    at = [record.at(n) for n in lengths]
    return {
        "params": params_record(spec, record),
        "params_breakdown": [
            {"component": key, "params": value, "percent": 100 * value / record.params.total}
            for key, value in record.params.breakdown.items() if value],
        "kv_cache": {
            "dtype": record.conventions.cache_dtype,
            "groups": [{"layers": layers_text(list(g.layers)), "count": len(g.layers),
                        "variant": g.variant, "window": g.window,
                        "elements_per_token": g.elements_per_token,
                        "mha_elements_per_token": g.mha_elements_per_token,
                        "decompressed_elements_per_token": g.decompressed_elements_per_token,
                        "bytes_per_token": g.bytes_per_token} for g in record.cache_groups],
            "bytes_per_token": record.kv_cache_bytes_per_token,
            "at_lengths": [kv_at(record, c) for c in at],
        },
        "state": state_record(record),
        "decode_flops": [flops_at(c) for c in at],
        "prefill_flops": [{"seq_len": c.seq_len, "total": c.prefill.total} for c in at],
        "weights_bytes": record.weights_by_format,
        "inference_memory": [memory_at(c) for c in at],
        "conventions": conventions_text(record),
    }
