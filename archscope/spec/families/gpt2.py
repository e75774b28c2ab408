"""GPT-2 (transformers' `gpt2`, GPT2LMHeadModel): LayerNorm before each sublayer, learned
positions, multi-head attention and a GELU MLP, all with biases; q, k and v in one Conv1D
(`c_attn`, [in, out]) that archscope splits. GPT-3 has this class's structure (transformers has
no GPT-3 class)."""

from __future__ import annotations

from archscope.spec.families.base import Family, frozen, rules
from archscope.spec.families.llama import SPEC_KEYS
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _divides
from archscope.spec.hf_writers_base import HF_ACT
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    width, heads = c.size("n_embd"), c.size("n_head")
    _divides(c, "n_embd", "n_head", width, heads, "GPT2Attention")
    return {"vocab_size": c.size("vocab_size"), "d_model": width, "n_layers": c.size("n_layer"),
            "max_seq_len": c.size("n_positions"),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "layernorm", "eps": c.number("layer_norm_epsilon"),
                     "position": "pre"},
            "position": {"kind": "learned"},
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": heads,
                          "head_dim": width // heads, "bias": True},
            "ffn": {"kind": "mlp", "d_ff": c.size("n_inner", null=True) or 4 * width,
                    "activation": _act(c, "activation_function"), "bias": True}}


def write(s: ModelSpec) -> dict:
    return {"vocab_size": s.vocab_size, "n_embd": s.d_model, "n_layer": s.n_layers,
            "n_head": s.attention.n_heads, "n_positions": s.max_seq_len, "n_inner": s.ffn.d_ff,
            "activation_function": HF_ACT[s.ffn.activation],
            "layer_norm_epsilon": s.norm.eps, "tie_word_embeddings": s.tie_embeddings}


WEIGHTS = rules(
    ("transformer.wte.weight", "embed_tokens.weight"),
    ("transformer.wpe.weight", "embed_positions.weight"),
    ("transformer.h.{i}.ln_1.{p}", "layers.{i}.input_layernorm.{p}"),
    ("transformer.h.{i}.attn.c_attn.{p}", ["layers.{i}.self_attn.q_proj.{p}",
                                          "layers.{i}.self_attn.k_proj.{p}",
                                          "layers.{i}.self_attn.v_proj.{p}"], {"conv1d": True}),
    ("transformer.h.{i}.attn.c_proj.{p}", "layers.{i}.self_attn.o_proj.{p}", {"conv1d": True}),
    ("transformer.h.{i}.ln_2.{p}", "layers.{i}.post_attention_layernorm.{p}"),
    ("transformer.h.{i}.mlp.c_fc.{p}", "layers.{i}.mlp.up_proj.{p}", {"conv1d": True}),
    ("transformer.h.{i}.mlp.c_proj.{p}", "layers.{i}.mlp.down_proj.{p}", {"conv1d": True}),
    ("transformer.ln_f.{p}", "norm.{p}"),
    ("lm_head.weight", "lm_head.weight"),
)

GPT2 = Family(
    "gpt2", "GPT2LMHeadModel", read=read, write=write,
    # GPT-3 too: transformers has no GPT-3 class
    exports=lambda s: s.position.kind == "learned" and s.norm.kind == "layernorm",
    ffns=("mlp",),
    weights=WEIGHTS,
    spec_keys=frozen({**SPEC_KEYS, "d_model": "n_embd", "n_layers": "n_layer",
                      "max_seq_len": "n_positions", "attention.n_heads": "n_head",
                      "attention.n_kv_heads": "n_head", "attention.head_dim": "n_head",
                      "norm.eps": "layer_norm_epsilon", "ffn.d_ff": "n_inner",
                      "ffn.activation": "activation_function"}),
    # other values build networks the spec cannot hold
    fixed=frozen({"scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
                  "add_cross_attention": False}),
    names=("gpt",), spellings={"gpt3": "gpt3-175b"},
    usual={"gpt3": "gpt3-175b", "gpt2": "gpt2"}, doc="LayerNorm, learned positions, GELU MLP")
FAMILIES = (GPT2,)
