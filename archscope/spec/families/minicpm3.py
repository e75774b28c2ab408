"""MiniCPM3 (transformers' `minicpm3`, MiniCPM3ForCausalLM): DeepSeek-V2's MLA (q_a/q_b,
kv_a_proj_with_mqa, kv_b_proj) in a Llama block, with scale_emb (embedding multiplier),
scale_depth / sqrt(num_hidden_layers) on each residual branch and logits divided by
hidden_size / dim_model_base: all of which archscope builds. What it does not: MiniCPM3 rotates
the decoupled RoPE dims (qk_rope_head_dim) in half-split pairs (rotate_half), where archscope's
MLA, as DeepSeek's, rotates adjacent pairs. The two agree only after a per-head permutation of
the RoPE rows of q_b_proj and kv_a_proj_with_mqa, which archscope's weight layouts cannot say,
so the family is refused naming qk_rope_head_dim (its parameters, cache and FLOPs would match:
no count depends on how pairs are formed)."""

from __future__ import annotations

from archscope.spec.families.deepseek_v2 import DEEPSEEK_V2
from archscope.spec.hf_keys import Keys


def read(c: Keys) -> dict:
    raise c.error("qk_rope_head_dim", "MiniCPM3's MLA rotates these dims in half-split pairs "
                                      "(rotate_half); archscope's MLA rotates adjacent pairs "
                                      "(DeepSeek's), and a checkpoint would need its RoPE rows "
                                      "permuted per head, which archscope's weight mapping "
                                      "cannot express")


MINICPM3 = DEEPSEEK_V2.but("minicpm3", "MiniCPM3ForCausalLM", read=read, weights=(),
                           names=("minicpm",),
                           doc="DeepSeek-V2's MLA with half-split RoPE + multipliers (refused)")
FAMILIES = (MINICPM3,)
