"""StarCoder2 (transformers' `starcoder2`, Starcoder2ForCausalLM): Mistral with LayerNorms with
bias (eps norm_epsilon), one use_bias switch for every projection (q, k, v, o and the MLP's),
a two-matrix MLP c_fc/c_proj (gelu_pytorch_tanh; archscope's up_proj/down_proj), embeddings
tied by default and the sliding window (null: none) on every layer."""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _heads, _rope, two_matrix_ffn
from archscope.spec.hf_writers_base import rope_parameters, two_matrix_act
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    width = c.size("hidden_size")
    heads, kv, head_dim = _heads(c, width)
    bias = c.flag("use_bias")
    return {"vocab_size": c.size("vocab_size"), "d_model": width,
            "n_layers": c.size("num_hidden_layers"),
            "max_seq_len": c.size("max_position_embeddings"),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "layernorm", "eps": c.number("norm_epsilon"), "position": "pre"},
            "position": _rope(c),
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": head_dim, "bias": bias,
                          "window": c.size("sliding_window", null=True)},
            "ffn": two_matrix_ffn(c, c.size("intermediate_size"), bias)}


def write(s: ModelSpec) -> dict:
    a = s.attention
    windows = [layer.window for layer in s.plan if layer.window]
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model,
            "num_hidden_layers": s.n_layers, "max_position_embeddings": s.max_seq_len,
            "tie_word_embeddings": s.tie_embeddings, "norm_epsilon": s.norm.eps,
            "rope_parameters": rope_parameters(s.position), "num_attention_heads": a.n_heads,
            "num_key_value_heads": a.kv_heads, "head_dim": a.head_dim, "use_bias": a.bias,
            "sliding_window": windows[0] if windows else None,
            "intermediate_size": s.ffn.d_ff, "hidden_act": two_matrix_act(s),
            "bos_token_id": None, "eos_token_id": None}


def biased_two_matrix(s: ModelSpec) -> bool:
    """Pre-norm LayerNorms with bias around a non-gated MLP, with RoPE (StarCoder2, Jais 2)."""
    return (s.norm.kind == "layernorm" and s.norm.has_bias and s.norm.position == "pre"
            and not s.norm.unit_offset and s.position.kind == "rope"
            and s.ffn.kind in ("mlp", "relu2"))


MLP_WEIGHTS = rules(("model.layers.{i}.mlp.c_fc.{p}", "layers.{i}.mlp.up_proj.{p}"),
                    ("model.layers.{i}.mlp.c_proj.{p}", "layers.{i}.mlp.down_proj.{p}"))
STARCODER2 = LLAMA.but(
    "starcoder2", "Starcoder2ForCausalLM", read=read, write=write, exports=biased_two_matrix,
    ffns=("mlp", "relu2"),
    weights=tuple(r for r in LLAMA.weights if ".mlp." not in r.hf) + MLP_WEIGHTS,
    spec_keys=LLAMA.key_table(**{"norm.eps": "norm_epsilon", "attention.bias": "use_bias",
                                 "ffn.bias": "use_bias"}),
    doc="Mistral with biased LayerNorms, one use_bias switch, a c_fc/c_proj GELU MLP")
FAMILIES = (STARCODER2,)
