"""GLM-4 (transformers' `glm`, GlmForCausalLM: GLM-4 9B; modular: Llama's attention, Phi-3's
MLP): Llama + attention_bias on q, k and v only (GlmAttention's o_proj never has one) + the MLP's
gate_proj and up_proj fused in one gate_up_proj (ffn.fused_gate_up) + RoPE on adjacent pairs
(repeat_interleave'd frequencies: position.interleaved) of the first int(head_dim *
partial_rotary_factor) dims of each head (attention.rotary_fraction; GlmConfig's default 0.5).
head_dim is GlmConfig's field (default 128), not hidden_size // heads."""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.minimax_m2 import head_dims
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import PARTIAL, _act, _base, rotary_fraction
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec

PARTIAL_DEFAULT = 0.5  # GlmConfig.__post_init__ sets it when the file has none


def read(c: Keys) -> dict:
    base = _base(c, read_elsewhere=(PARTIAL,))
    heads, kv, head_dim = head_dims(c, base["d_model"])
    return {**base, "position": {**base["position"], "interleaved": True},
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": head_dim,
                          **({"bias": True, "out_bias": False} if c.flag("attention_bias")
                             else {}),
                          "rotary_fraction": rotary_fraction(c, PARTIAL_DEFAULT)},
            "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"),
                    "activation": _act(c), "fused_gate_up": True}}


def write(s: ModelSpec) -> dict:
    """GlmConfig's keys; what the class fixes (o_proj without bias, the fused MLP, adjacent
    pairs) the exporter's read-back compares."""
    a, f = s.attention, s.ffn
    base = to_base(s)
    base["rope_parameters"][PARTIAL] = a.rotary_fraction or 1.0
    return {**base, "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias, "intermediate_size": f.d_ff,
            "hidden_act": HF_ACT[f.activation],
            # GlmConfig's pad_token_id (151329) would lie outside a smaller vocabulary
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


def partial_pairs(s: ModelSpec) -> bool:
    """Part of each head rotated on adjacent pairs: GLM's RoPE."""
    return bool(s.position.interleaved and s.attention.rotary_fraction)


# Llama's names, Phi-3's fused gate_up_proj in place of gate_proj and up_proj
WEIGHTS = tuple(r for r in LLAMA.weights if ".mlp.gate_proj." not in r.hf
                and ".mlp.up_proj." not in r.hf) + rules(
    ("model.layers.{i}.mlp.gate_up_proj.{p}", "layers.{i}.mlp.gate_up_proj.{p}"))
GLM = LLAMA.but(
    "glm", "GlmForCausalLM", read=read, write=write,
    exports=lambda s: partial_pairs(s) and s.norm.position == "pre", weights=WEIGHTS,
    spec_keys=LLAMA.key_table(**{"attention.out_bias": "attention_bias",
                                 "attention.rotary_fraction": f"rope_parameters.{PARTIAL}"}),
    names=("glm",), doc="Llama + q/k/v bias + fused gate_up_proj + partial RoPE on adjacent pairs")
FAMILIES = (GLM,)
