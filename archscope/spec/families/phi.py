"""Phi-1/Phi-2 (transformers' `phi`, PhiForCausalLM): a parallel block (one LayerNorm with bias
feeds attention and the MLP side by side: norm.position parallel), biases on q, k, v and on
the output projection (`dense`, archscope's o_proj), RoPE on the first partial_rotary_factor
of each head (default 0.5; half-split pairs within them: attention.rotary_fraction), a
two-matrix MLP fc1/fc2 with bias (gelu_new), final_layernorm, an lm_head with a bias
(head.bias), and with qk_layernorm a LayerNorm with bias of q and of k over each head, one
weight for all heads (attention.qk_norm head, qk_norm_kind layernorm, qk_norm_bias)."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import Family, frozen, rules
from archscope.spec.families.llama import SPEC_KEYS
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import PARTIAL, _heads, _rope, rotary_fraction, two_matrix_ffn
from archscope.spec.hf_writers_base import rope_parameters, two_matrix_act
from archscope.spec.schema import ModelSpec


def partial_rope(c: Keys, default: float) -> tuple[dict, float]:
    """(the position, the rotary fraction) of a family with partial RoPE (Phi 0.5, StableLM
    0.25, Nemotron 0.5 by default; transformers 5 saves the factor in rope_parameters)."""
    return _rope(c, read_elsewhere=(PARTIAL,)), rotary_fraction(c, default)


def write_rope(s: ModelSpec) -> dict:
    if s.position.kind != "rope":
        raise SpecError(f"this transformers class uses RoPE, not {s.position.kind!r}",
                        key="position.kind")
    return {**rope_parameters(s.position), PARTIAL: s.attention.rotary_fraction or 1.0}


def read(c: Keys) -> dict:
    width = c.size("hidden_size")
    heads, kv, head_dim = _heads(c, width)
    position, fraction = partial_rope(c, 0.5)
    attention = {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim,
                 "bias": True, "rotary_fraction": fraction}
    if c.flag("qk_layernorm"):
        if head_dim != width // heads:  # PhiAttention sizes these by hidden_size // heads
            raise c.error("head_dim", f"with qk_layernorm transformers' Phi norms "
                                      f"hidden_size // num_attention_heads ({width // heads}) "
                                      f"values a head, not head_dim ({head_dim}): it fails")
        attention.update(qk_norm="head", qk_norm_kind="layernorm", qk_norm_bias=True)
    return {"vocab_size": c.size("vocab_size"), "d_model": width,
            "n_layers": c.size("num_hidden_layers"),
            "max_seq_len": c.size("max_position_embeddings"),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "layernorm", "eps": c.number("layer_norm_eps"),
                     "position": "parallel"},
            "position": position, "attention": attention,
            "ffn": two_matrix_ffn(c, c.size("intermediate_size"), True),
            "head": {"bias": True}}


def write(s: ModelSpec) -> dict:
    a = s.attention
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model,
            "num_hidden_layers": s.n_layers, "max_position_embeddings": s.max_seq_len,
            "tie_word_embeddings": s.tie_embeddings, "layer_norm_eps": s.norm.eps,
            "rope_parameters": write_rope(s), "num_attention_heads": a.n_heads,
            "num_key_value_heads": a.kv_heads, "head_dim": a.head_dim,
            "intermediate_size": s.ffn.d_ff, "hidden_act": two_matrix_act(s),
            "qk_layernorm": a.qk_norm == "head"}


WEIGHTS = rules(
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    *[(f"model.layers.{{i}}.self_attn.{name}.{{p}}", f"layers.{{i}}.self_attn.{name}.{{p}}")
      for name in ("q_proj", "k_proj", "v_proj")],
    ("model.layers.{i}.self_attn.dense.{p}", "layers.{i}.self_attn.o_proj.{p}"),
    ("model.layers.{i}.self_attn.q_layernorm.{p}", "layers.{i}.self_attn.q_norm.{p}"),
    ("model.layers.{i}.self_attn.k_layernorm.{p}", "layers.{i}.self_attn.k_norm.{p}"),
    ("model.layers.{i}.mlp.fc1.{p}", "layers.{i}.mlp.up_proj.{p}"),
    ("model.layers.{i}.mlp.fc2.{p}", "layers.{i}.mlp.down_proj.{p}"),
    ("model.layers.{i}.input_layernorm.{p}", "layers.{i}.input_layernorm.{p}"),
    ("model.final_layernorm.{p}", "norm.{p}"),
    ("lm_head.{p}", "lm_head.{p}"),
)
PHI = Family(
    "phi", "PhiForCausalLM", read=read, write=write,
    # a parallel block of LayerNorms with bias: only Phi's class builds one
    exports=lambda s: (s.norm.position == "parallel" and s.norm.kind == "layernorm"
                       and s.norm.has_bias),
    ffns=("mlp", "relu2"), weights=WEIGHTS,
    spec_keys=frozen({**SPEC_KEYS, "norm.eps": "layer_norm_eps",
                      "attention.rotary_fraction": f"rope_parameters.{PARTIAL}",
                      "attention.qk_norm": "qk_layernorm"}),
    names=("phi",), doc="parallel LayerNorm block, partial RoPE, fc1/fc2 MLP, lm_head bias")
FAMILIES = (PHI,)
