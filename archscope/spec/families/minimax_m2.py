"""MiniMax-M2 (transformers' `minimax_m2`, MiniMaxM2ForCausalLM): Mixtral's block (pre-norm,
every layer MoE with experts of intermediate_size, no bias anywhere) + OLMo 2's full-width
QK-norm + RoPE on the first int(head_dim * partial_rotary_factor) dims of each head + a sigmoid
router that chooses the top-k experts by score + a selection-only correction bias (a buffer
beside the router, `mlp.e_score_correction_bias`) and weighs them by their unbiased scores,
always renormalised: DeepSeek-V3's noaux_tc with one group.

The rotated fraction: rope_parameters' partial_rotary_factor, else a top-level one, else the
published files' rotary_dim / head_dim, else the whole head (MiniMaxM2Config's order). head_dim
is MiniMaxM2Config's field (default 128), not hidden_size // heads. Published checkpoints keep
Mixtral's per-expert names under block_sparse_moe.
"""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.deepseek_v3 import sigmoid_routed
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.mixtral import MIXTRAL, MOE_WEIGHTS
from archscope.spec.families.qwen3 import QK_NORM_WEIGHTS
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import PARTIAL, _act, _base, _heads, rotary_fraction
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec


def head_dims(c: Keys, width: int, refused_by: str | None = None) -> tuple[int, int, int]:
    """(query heads, key/value heads, head_dim), head_dim from the file or its config class's
    own default (a field of the class, not hidden_size // heads, unless that default is
    null)."""
    heads, kv, derived = _heads(c, width, refused_by)
    return heads, kv, c.size("head_dim", null=True) or derived


def _fraction(c: Keys, head_dim: int) -> float:
    stated = any(c.mapping(s).get(PARTIAL) is not None for s in ("rope_parameters",
                                                                  "rope_scaling"))
    if stated or c.raw.get(PARTIAL) is not None or c.raw.get("rotary_dim") is None:
        return rotary_fraction(c, 1.0)
    return c.size("rotary_dim") / head_dim


def read(c: Keys) -> dict:
    base = _base(c, read_elsewhere=(PARTIAL,))
    heads, kv, head_dim = head_dims(c, base["d_model"])
    n, k = c.size(c.alias("num_local_experts", "num_experts")), c.size("num_experts_per_tok")
    if k > n:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed num_local_experts ({n})")
    return {**base, "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                                  "head_dim": head_dim, "qk_norm": "full",
                                  "rotary_fraction": _fraction(c, head_dim)},
            "ffn": {"kind": "moe", "activation": _act(c), "n_experts": n, "top_k": k,
                    "d_expert": c.size("intermediate_size"),
                    "router": {"method": "noaux_tc", "scoring": "sigmoid",
                               "correction_bias": True, "normalize": True,
                               "n_group": 1, "topk_group": 1}}}


def write(s: ModelSpec) -> dict:
    """MiniMaxM2Config's keys; what its class fixes (the norms, the router) the read-back
    compares."""
    a, f = s.attention, s.ffn
    base = to_base(s)
    base["rope_parameters"][PARTIAL] = a.rotary_fraction or 1.0
    return {**base, "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "hidden_act": HF_ACT[f.activation],
            "num_local_experts": f.n_experts, "num_experts_per_tok": f.top_k,
            "intermediate_size": f.d_expert,
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


_MLP = "model.layers.{i}.mlp"
MINIMAX_M2 = MIXTRAL.but(
    "minimax_m2", "MiniMaxM2ForCausalLM", read=read, write=write,
    exports=lambda s: s.attention.qk_norm == "full" and sigmoid_routed(s), ffns=("moe",),
    weights=LLAMA.weights + QK_NORM_WEIGHTS + MOE_WEIGHTS
    + rules((f"{_MLP}.e_score_correction_bias", "layers.{i}.mlp.gate.e_score_correction_bias")),
    per_expert=MIXTRAL.per_expert,
    renamed_tensors=MIXTRAL.renamed_tensors + (
        ("model.layers.{i}.block_sparse_moe.e_score_correction_bias",
         f"{_MLP}.e_score_correction_bias"),),
    spec_keys=MIXTRAL.key_table(**{"attention.rotary_fraction": "partial_rotary_factor",
                                   "ffn.d_expert": "intermediate_size"}),
    doc="Mixtral + full-width QK-norm + partial RoPE + a sigmoid router with a correction "
        "bias")
FAMILIES = (MINIMAX_M2,)
