"""OLMoE (transformers' `olmoe`, OlmoeForCausalLM): Llama's pre-norm block + OLMo 2's
full-width QK-norm (q_norm over all query heads, k_norm over all key heads) + Mixtral's MoE on
every layer, routed as Qwen2-MoE's router (softmax, top-k, renormalised only when
norm_topk_prob). clip_qkv (clamping q, k and v) is refused: archscope does not model it.

The QK-norms are sized from hidden_size (hidden_size and (hidden_size // heads) * kv heads), so
the heads must tile hidden_size exactly. Published checkpoints keep one tensor per expert.
"""

from __future__ import annotations

from archscope.spec.families.deepseek_v2 import PER_EXPERT
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.families.mixtral import MOE_WEIGHTS
from archscope.spec.families.olmo2 import OLMO2
from archscope.spec.families.qwen3 import QK_NORM_WEIGHTS
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _act, _patch
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec


def full_width_heads(c: Keys, out: dict) -> None:
    """OlmoeAttention sizes q_norm as hidden_size: the query heads must fill it exactly."""
    a = out["attention"]
    if a["n_heads"] * a["head_dim"] != out["d_model"]:
        raise c.error("head_dim", f"num_attention_heads x head_dim ({a['n_heads']} x "
                                  f"{a['head_dim']}) must equal hidden_size ({out['d_model']}): "
                                  "the class sizes its q_norm as hidden_size")


def moe(c: Keys) -> dict:
    """Every layer's MoE: experts of intermediate_size, softmax top-k, norm_topk_prob."""
    n, k = c.size(c.alias("num_experts", "num_local_experts")), c.size("num_experts_per_tok")
    if k > n:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed num_experts ({n})")
    return {"kind": "moe", "activation": _act(c), "n_experts": n, "top_k": k,
            "d_expert": c.size("intermediate_size"),
            "router": {"normalize": c.flag("norm_topk_prob")}}


def read(c: Keys) -> dict:
    if c.raw.get("clip_qkv") is not None:
        raise c.error("clip_qkv", f"archscope does not model clamping q, k and v (clip_qkv), "
                                  f"{what(c.raw['clip_qkv'])}: only null is read")
    out = _patch(read_llama(c, bias=("attention_bias",)), attention={"qk_norm": "full"},
                 ffn=moe(c))
    full_width_heads(c, out)
    return out


def write(s: ModelSpec) -> dict:
    """Llama's keys + the MoE's (OlmoeConfig and FlexOlmoConfig read the same ones); the class
    fixes the norms, which the read-back compares."""
    f = s.ffn
    return {**without(write_llama(s), "mlp_bias", "intermediate_size"),
            "num_experts": f.n_experts, "num_experts_per_tok": f.top_k,
            "intermediate_size": f.d_expert, "norm_topk_prob": f.routing.normalize,
            "clip_qkv": None,
            # the classes' default token ids (pad 100277 in FlexOlmo) may be out of a small
            # vocabulary, where nn.Embedding refuses the padding row; a spec has none
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


def full_norm_moe(s: ModelSpec) -> bool:
    return s.attention.qk_norm == "full" and any(layer.is_moe for layer in s.plan)


OLMOE = OLMO2.but(
    "olmoe", "OlmoeForCausalLM", read=read, write=write,
    exports=lambda s: full_norm_moe(s) and s.norm.position == "pre", ffns=("moe",),
    weights=LLAMA.weights + QK_NORM_WEIGHTS + MOE_WEIGHTS, per_expert=PER_EXPERT,
    spec_keys=OLMO2.key_table(**{"ffn.n_experts": "num_experts",
                                 "ffn.router.normalize": "norm_topk_prob"}),
    names=("olmo",), doc="Llama + full-width QK-norm + MoE")
FAMILIES = (OLMOE,)
