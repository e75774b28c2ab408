"""Pure analytic estimators: functions of the spec alone (no torch, DESIGN.md sections 1 and 3).

params: count_params; kv_cache: kv_cache, kv_cache_bytes; flops: decode_flops, prefill_flops,
training_flops; memory: weights_bytes, inference_memory, max_context; record: model_record,
the one typed record of a model that every surface reads.
Each module's docstring states its formula, its source and what it leaves out.
"""

from archscope.estimate.dtypes import (DTYPE_BYTES, UnknownDtypeError, canonical_dtype,
                                       dtype_bytes, nbytes)
from archscope.estimate.flops import (COMPONENTS, FlopCount, causal_pairs, decode_flops, prefill_flops,
                                      training_flops, training_flops_per_token)
from archscope.estimate.kv_cache import (KVCache, decompressed_elements_per_token, kv_cache,
                                         kv_cache_bytes, kv_elements_per_token,
                                         mha_elements_per_token)
from archscope.estimate.memory import (InferenceMemory, activation_bytes, inference_memory,
                                       max_context, weights_bytes, weights_table)
from archscope.estimate.params import ParamCount, count_params
from archscope.estimate.record import ModelRecord, model_record

__all__ = [
    "DTYPE_BYTES", "UnknownDtypeError", "canonical_dtype", "dtype_bytes", "nbytes",
    "COMPONENTS", "FlopCount", "causal_pairs", "decode_flops", "prefill_flops", "training_flops",
    "training_flops_per_token",
    "KVCache", "kv_cache", "kv_cache_bytes", "kv_elements_per_token",
    "decompressed_elements_per_token", "mha_elements_per_token",
    "InferenceMemory", "activation_bytes", "inference_memory", "max_context", "weights_bytes",
    "weights_table",
    "ParamCount", "count_params",
    "ModelRecord", "model_record",
]
