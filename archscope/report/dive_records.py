"""One model's deep-dive numbers as JSON-ready records (rendered by deep_dive.py).

`modules` comes from archscope.measure.counted.layer_module_rows (the layer built on the meta
device): module names, weight shapes and parameters exactly as the built model has them.
"""

from __future__ import annotations

from archscope.estimate import (count_params, inference_memory, kv_cache, prefill_flops,
                                weights_table)
from archscope.report.costs import CACHE_DTYPE, flops_at
from archscope.report.mermaid_parts import attention_title, ffn_title
from archscope.report.markdown import layers_label
from archscope.report.records import layers_text
from archscope.spec.schema import ModelSpec

DIVE_LENGTHS = (512, 1024, 4096, 8192, 32768, 131072)


def dive_lengths(spec: ModelSpec) -> list[int]:
    """The usual contexts below the model's own, and its own."""
    return sorted({n for n in DIVE_LENGTHS if n < spec.max_seq_len} | {spec.max_seq_len})


def structure_groups(spec: ModelSpec) -> list[dict]:
    """Layers grouped by identical (attention, ffn), in plan order, with their notes."""
    groups: dict[tuple, list[int]] = {}
    for layer in spec.plan:
        groups.setdefault((layer.attention, layer.ffn), []).append(layer.index)
    out = []
    for (attn, ffn), idx in groups.items():
        by_note: dict[str, list[int]] = {}
        for i in idx:  # a note may cover only some of the group (GPT-3's odd layers)
            if spec.plan[i].note:
                by_note.setdefault(spec.plan[i].note, []).append(i)
        notes = [f"{layers_label(sub)}: {note}" for note, sub in by_note.items()]
        out.append({"layers": layers_text(idx), "count": len(idx), "first": idx[0],
                    "attention": attention_title(attn), "ffn": ffn_title(ffn), "notes": notes})
    return out


def module_groups(modules: dict[tuple[int, ...], list[dict]]) -> list[dict]:
    return [{"layers": layers_text(list(idx)), "count": len(idx), "rows": rows}
            for idx, rows in modules.items()]


def dive_record(spec: ModelSpec, modules: dict[tuple[int, ...], list[dict]]) -> dict:
    params = count_params(spec)
    lengths = dive_lengths(spec)
    one = kv_cache(spec, 1, 1, CACHE_DTYPE)
    return {
        "structure": structure_groups(spec),
        "modules": module_groups(modules),
        "params": {"total": params.total, "active": params.active, "embedding": params.embedding,
                   "groups": params.groups, "breakdown": params.breakdown,
                   "tied_lm_head": spec.tie_embeddings},
        "kv_cache": {
            "dtype": CACHE_DTYPE,
            "bytes_per_token": one.bytes_per_token,
            "at_lengths": [{"seq_len": n, "bytes": c.bytes,
                            "decompressed_bytes": c.decompressed_bytes, "mha_bytes": c.mha_bytes}
                           for n in lengths for c in [kv_cache(spec, n, 1, CACHE_DTYPE)]],
        },
        "decode_flops": [flops_at(spec, n) for n in lengths],
        "prefill_flops": [{"seq_len": n, "total": prefill_flops(spec, n).total} for n in lengths],
        "weights_bytes": weights_table(spec),
        "inference_memory": [
            {"seq_len": n, "weights": m.weights, "kv_cache": m.kv_cache,
             "activations": m.activations, "total": m.total}
            for n in lengths for m in [inference_memory(spec, n, 1, CACHE_DTYPE)]],
    }
