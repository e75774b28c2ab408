"""AFMoE (transformers' `afmoe`, AfmoeForCausalLM, Arcee's Trinity): refused, naming the
component archscope lacks. Its attention gates each head's output by sigmoid(gate_proj(x)),
gate_proj a Linear of its own (hidden_size -> num_attention_heads * head_dim), where archscope's
output gate (attention.output_gate, Qwen3-Next's) is fused into q_proj head by head and no
weight rule joins two tensors into one; and its router's selection bias (expert_bias) is a
parameter, which transformers counts, where archscope's is a buffer. (The rest has a spec:
Gemma-style sandwich norms, per-head QK-norm, RoPE on the sliding layers only, a sigmoid router
renormalised and scaled by route_scale, shared experts.)"""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys


def read(c: Keys) -> dict:
    raise c.error("model_type", "AfmoeAttention gates each head's output through gate_proj, a "
                                "Linear of its own; archscope's attention output gate is part "
                                "of q_proj (and AFMoE's router bias, expert_bias, is a counted "
                                "parameter where archscope's is a buffer)")


AFMOE = LLAMA.but("afmoe", "AfmoeForCausalLM", read=read, weights=(),
                  doc="refused: an output gate of its own, a parameter router bias")
FAMILIES = (AFMOE,)
