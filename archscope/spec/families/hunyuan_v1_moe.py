"""Hunyuan MoE (transformers' `hunyuan_v1_moe`, HunYuanMoEV1ForCausalLM, Hunyuan-A13B):
refused, naming the component archscope lacks. Its attention norms each query and key head
(query_layernorm, key_layernorm, RMSNorm with a weight) AFTER RoPE, whatever the published
use_qk_norm says; archscope's per-head QK-norm comes before RoPE, and its after-RoPE norm
(Llama 4's l2) has no weight. (The rest has a spec: a softmax top-k router always renormalised,
experts and an always-on shared MLP of intermediate_size, and the NTK-alpha RoPE, whose fixed
alpha is a larger base: rope_theta * alpha ** (head_dim / (head_dim - 2)).)"""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys


def read(c: Keys) -> dict:
    raise c.error("use_qk_norm", "transformers' HunYuanMoEV1Attention RMS-norms each query and "
                                 "key head with a weight after RoPE (query_layernorm, "
                                 "key_layernorm), whatever this key says; archscope's weighted "
                                 "QK-norm comes before RoPE")


HUNYUAN_V1_MOE = LLAMA.but("hunyuan_v1_moe", "HunYuanMoEV1ForCausalLM", read=read, weights=(),
                           doc="refused: QK-norm after RoPE")
FAMILIES = (HUNYUAN_V1_MOE,)
