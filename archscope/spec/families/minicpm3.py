"""MiniCPM3 (transformers' `minicpm3`, MiniCPM3ForCausalLM): DeepSeek-V2's MLA (q_a/q_b,
kv_a_proj_with_mqa, kv_b_proj; latent norms at eps 1e-6, the softmax scale with YaRN's
mscale_all_dim) in a Llama block with a dense SwiGLU MLP on every layer, and:
- the decoupled RoPE dims (qk_rope_head_dim) rotate in half-split pairs (rotate_half), where
  DeepSeek's rotate adjacent pairs: attention.rope_half_split;
- scale_emb multiplies the embedding (multipliers.embedding);
- each residual branch is multiplied by scale_depth / sqrt(num_hidden_layers)
  (multipliers.residual; scale_depth null: sqrt(num_hidden_layers), so 1);
- the final hidden state is divided by hidden_size / dim_model_base before lm_head
  (multipliers.logits; dim_model_base null: hidden_size, so 1)."""

from __future__ import annotations

import math

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.deepseek_v2 import _ATTN, _MLA, DEEPSEEK_V2
from archscope.spec.families.deepseek_v2 import read as read_deepseek_v2
from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    out = read_deepseek_v2(c, refused_by=None, dense_layers=lambda c, n: list(range(n)))
    n, d = out["n_layers"], out["d_model"]
    depth = c.number("scale_depth", null=True)
    base = c.size("dim_model_base", null=True)
    out["attention"]["rope_half_split"] = True
    out["multipliers"] = {"embedding": c.number("scale_emb"),
                          "residual": 1.0 if depth is None else depth / math.sqrt(n),
                          "logits": 1.0 if base is None else d / base}
    return out


def half_split_mla(s: ModelSpec) -> bool:
    return any(layer.attention is not None and layer.attention.kind == "mla"
               and layer.attention.rope_half_split for layer in s.plan)


def _whole(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def write(s: ModelSpec) -> dict:
    a, f, m = s.attention, s.ffn, s.mults
    if m.attention is not None:
        raise SpecError("MiniCPM3's softmax scale is MLA's own (no attention multiplier)",
                        key="multipliers.attention")
    return {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.n_heads,
            "attention_bias": a.bias, **{key: getattr(a, key) for key in a.MLA_KEYS},
            "hidden_act": HF_ACT[f.activation], "mlp_bias": f.bias, "intermediate_size": f.d_ff,
            "scale_emb": _whole(m.embedding or 1.0),
            "scale_depth": (m.residual or 1.0) * math.sqrt(s.n_layers),
            "dim_model_base": _whole(s.d_model / (m.logits or 1.0))}


# Llama's norms, embeddings and MLP + MLA's projections (DeepSeek's names)
WEIGHTS = tuple(r for r in LLAMA.weights if ".self_attn." not in r.hf) + rules(
    *[(f"{_ATTN}.{name}.{{p}}", f"layers.{{i}}.self_attn.{name}.{{p}}") for name in _MLA])
MINICPM3 = DEEPSEEK_V2.but("minicpm3", "MiniCPM3ForCausalLM", read=read, write=write,
                           exports=half_split_mla, attentions=("mla",), ffns=("swiglu",),
                           weights=WEIGHTS, per_expert=(), names=("minicpm",),
                           spec_keys=LLAMA.key_table(**{
                               **{f"attention.{k}": k for k in (
                                   "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                   "qk_rope_head_dim", "v_head_dim")},
                               "multipliers.embedding": "scale_emb",
                               "multipliers.residual": "scale_depth",
                               "multipliers.logits": "dim_model_base"}),
                           doc="DeepSeek-V2's MLA with half-split RoPE + multipliers")
FAMILIES = (MINICPM3,)
