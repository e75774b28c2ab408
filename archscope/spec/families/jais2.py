"""Jais 2 (transformers' `jais2`, Jais2ForCausalLM): Llama with LayerNorms with bias (eps
layer_norm_eps; the config has no rms_norm_eps) and Nemotron's two-matrix MLP, up_proj then
down_proj, squared ReLU by default (hidden_act relu2: ffn.kind relu2), attention_bias (q, k, v
and o) and mlp_bias, both true by default."""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.families.phi import partial_rope
from archscope.spec.families.starcoder2 import biased_two_matrix
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _heads, _rope, two_matrix_ffn
from archscope.spec.hf_writers_base import rope_parameters, two_matrix_act
from archscope.spec.schema import ModelSpec


def read(c: Keys, eps: str = "layer_norm_eps", unit_offset: bool = False,
         partial: float | None = None) -> dict:
    """A pre-norm LayerNorm-with-bias model with a two-matrix MLP (Jais 2; Nemotron with its
    eps key, (1 + weight) norms and partial RoPE, `partial` its default fraction)."""
    width = c.size("hidden_size")
    heads, kv, head_dim = _heads(c, width, "Jais2Config" if eps == "layer_norm_eps" else None)
    position, fraction = partial_rope(c, partial) if partial else (_rope(c), None)
    return {"vocab_size": c.size("vocab_size"), "d_model": width,
            "n_layers": c.size("num_hidden_layers"),
            "max_seq_len": c.size("max_position_embeddings"),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "layernorm", "eps": c.number(eps), "position": "pre",
                     **({"unit_offset": True} if unit_offset else {})},
            "position": position,
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": head_dim, "bias": c.flag("attention_bias"),
                          **({"rotary_fraction": fraction} if partial else {})},
            "ffn": two_matrix_ffn(c, c.size("intermediate_size"), c.flag("mlp_bias"))}


def write(s: ModelSpec, eps: str = "layer_norm_eps") -> dict:
    a = s.attention
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model,
            "num_hidden_layers": s.n_layers, "max_position_embeddings": s.max_seq_len,
            "tie_word_embeddings": s.tie_embeddings, eps: s.norm.eps,
            "rope_parameters": rope_parameters(s.position), "num_attention_heads": a.n_heads,
            "num_key_value_heads": a.kv_heads, "head_dim": a.head_dim,
            "attention_bias": a.bias, "intermediate_size": s.ffn.d_ff,
            "hidden_act": two_matrix_act(s), "mlp_bias": s.ffn.bias,
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


# Llama's names less gate_proj (NemotronMLP: up_proj and down_proj)
WEIGHTS = tuple(r for r in LLAMA.weights if "gate_proj" not in r.hf)
JAIS2 = LLAMA.but(
    "jais2", "Jais2ForCausalLM", read=read, write=write, exports=biased_two_matrix,
    ffns=("mlp", "relu2"), weights=WEIGHTS,
    spec_keys=LLAMA.key_table(**{"norm.eps": "layer_norm_eps"}),
    doc="Llama with biased LayerNorms and a two-matrix squared-ReLU MLP")
FAMILIES = (JAIS2,)
