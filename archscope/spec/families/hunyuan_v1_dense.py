"""HunYuan dense (transformers' `hunyuan_v1_dense`, HunYuanDenseV1ForCausalLM): Llama whose
attention norms q and k per head with learned weights (query_layernorm, key_layernorm) AFTER
RoPE. archscope's per-head QK-norm (qk_norm: head) precedes RoPE, and its post-RoPE one (l2,
Llama 4's) has no weight; the two orders differ (a weight scales the rotated pairs
differently), so the family is refused, naming use_qk_norm (the key the releases carry; the
class builds the norms whatever it says). Its RoPE is also the releases' "dynamic" type with a
fixed alpha (NTK-alpha), which archscope does not read either."""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys


def read(c: Keys) -> dict:
    raise c.error("use_qk_norm", "transformers' HunYuanDenseV1 norms q and k per head with "
                                 "learned weights after RoPE (query_layernorm, key_layernorm, "
                                 "whatever this key says); archscope's per-head QK-norm "
                                 "precedes RoPE and its post-RoPE norm (l2) has no weight, so "
                                 "it does not build this attention")


HUNYUAN_V1_DENSE = LLAMA.but("hunyuan_v1_dense", "HunYuanDenseV1ForCausalLM", read=read,
                             names=("hunyuan",),
                             doc="Llama + weighted per-head QK-norm after RoPE (refused)")
FAMILIES = (HUNYUAN_V1_DENSE,)
