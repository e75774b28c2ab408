"""One model's per-component numbers, as records: the tables `show` and the deep dives print.

Everything here is a call to the estimators; nothing is rendered.
"""

from __future__ import annotations

from archscope.estimate import (count_params, decode_flops, inference_memory, kv_cache,
                                mha_elements_per_token, weights_table)
from archscope.spec.schema import ModelSpec

COMMON_LENGTHS = (1024, 4096, 32768)


def lengths_for(spec: ModelSpec) -> list[int]:
    """The common lengths up to the model's context, and the context itself."""
    return sorted({n for n in COMMON_LENGTHS if n < spec.max_seq_len} | {spec.max_seq_len})


def model_details(spec: ModelSpec, dtype: str = "bf16", seq_len: int = 4096) -> dict:
    params = count_params(spec)
    lengths = lengths_for(spec)
    one = kv_cache(spec, 1, 1, dtype)
    first = spec.plan[0].attention
    return {
        "params_breakdown": [
            {"component": key, "params": value, "percent": 100 * value / params.total}
            for key, value in params.breakdown.items() if value],
        "params_groups": params.groups,
        "kv_cache": {
            "dtype": dtype,
            "elements_per_token_per_layer": one.elements_per_token[0],
            "bytes_per_token_per_layer": one.bytes_per_token_per_layer[0],
            "bytes_per_token": one.bytes_per_token,
            "mha_equivalent_elements_per_token_per_layer": mha_elements_per_token(first),
            "at_lengths": [
                {"seq_len": n, "bytes": (c := kv_cache(spec, n, 1, dtype)).bytes,
                 "decompressed_bytes": c.decompressed_bytes, "mha_bytes": c.mha_bytes}
                for n in lengths],
        },
        "decode_flops": [
            {"context": n, "total": (f := decode_flops(spec, n)).total, **f.by_component}
            for n in lengths],
        "weights_bytes": weights_table(spec),
        "inference_memory": [
            {"seq_len": n, **vars(inference_memory(spec, n, 1, dtype))} for n in lengths],
    }
