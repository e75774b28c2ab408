"""Llama (transformers' `llama`, LlamaForCausalLM): the family most others are declared as a
difference from. RMSNorm before each sublayer, RoPE, GQA attention whose attention_bias covers
q, k, v and o, a SwiGLU MLP (mlp_bias), optionally tied embeddings."""

from __future__ import annotations

from archscope.spec.families.base import Family, frozen, rules
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _base, _heads
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec


def read(c: Keys, bias: tuple[str, ...] = ("attention_bias", "mlp_bias"),
         refused_by: str | None = None) -> dict:
    """The spec mapping of a Llama-like config.json; `bias`: the bias switches the class reads
    (the others are false); `refused_by`: the config class that refuses heads not dividing the
    width even when head_dim is given."""
    base = _base(c)
    heads, kv, head_dim = _heads(c, base["d_model"], refused_by)
    return {**base,
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": head_dim,
                          "bias": c.flag("attention_bias") if "attention_bias" in bias else False},
            "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"),
                    "activation": _act(c),
                    "bias": c.flag("mlp_bias") if "mlp_bias" in bias else False}}


def write(s: ModelSpec) -> dict:
    a, f = s.attention, s.ffn
    # GeGLU is LlamaMLP's gated form with Gemma's activation (it reads back as swiglu with
    # gelu_tanh, the same network: see resolved._SAME_NETWORK; the extra key keeps `geglu`)
    act = "gelu_pytorch_tanh" if f.kind == "geglu" else HF_ACT[f.activation]
    return {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias, "intermediate_size": f.d_ff,
            "hidden_act": act, "mlp_bias": f.bias}


WEIGHTS = rules(
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    ("model.layers.{i}.self_attn.q_proj.{p}", "layers.{i}.self_attn.q_proj.{p}"),
    ("model.layers.{i}.self_attn.k_proj.{p}", "layers.{i}.self_attn.k_proj.{p}"),
    ("model.layers.{i}.self_attn.v_proj.{p}", "layers.{i}.self_attn.v_proj.{p}"),
    ("model.layers.{i}.self_attn.o_proj.{p}", "layers.{i}.self_attn.o_proj.{p}"),
    ("model.layers.{i}.mlp.gate_proj.{p}", "layers.{i}.mlp.gate_proj.{p}"),
    ("model.layers.{i}.mlp.up_proj.{p}", "layers.{i}.mlp.up_proj.{p}"),
    ("model.layers.{i}.mlp.down_proj.{p}", "layers.{i}.mlp.down_proj.{p}"),
    ("model.layers.{i}.input_layernorm.{p}", "layers.{i}.input_layernorm.{p}"),
    ("model.layers.{i}.post_attention_layernorm.{p}", "layers.{i}.post_attention_layernorm.{p}"),
    ("model.norm.{p}", "norm.{p}"),
    ("lm_head.weight", "lm_head.weight"),
)

# spec key -> the config.json key it is read from, for the spec's own consistency errors after
# the read (`{rope}` is rope_parameters or rope_scaling, whichever the file uses)
SPEC_KEYS = frozen({
    "vocab_size": "vocab_size", "d_model": "hidden_size", "n_layers": "num_hidden_layers",
    "max_seq_len": "max_position_embeddings", "tie_embeddings": "tie_word_embeddings",
    "norm.eps": "rms_norm_eps", "position.theta": "rope_theta",
    "position.scaling": "{rope}", "position.scaling.kind": "{rope}.rope_type",
    "position.scaling.original_max_seq_len": "{rope}.original_max_position_embeddings",
    "attention.n_heads": "num_attention_heads", "attention.n_kv_heads": "num_key_value_heads",
    "attention.head_dim": "head_dim", "attention.bias": "attention_bias",
    "attention.window": "sliding_window", "layers": "sliding_window",
    "ffn.d_ff": "intermediate_size", "ffn.activation": "hidden_act", "ffn.bias": "mlp_bias",
    "ffn.n_experts": "num_local_experts", "ffn.top_k": "num_experts_per_tok",
    "ffn.d_expert": "intermediate_size",
    "multipliers.embedding": "embedding_multiplier", "multipliers.attention":
        "attention_multiplier", "multipliers.residual": "residual_multiplier",
    "multipliers.logits": "logits_scaling",
})

LLAMA = Family("llama", "LlamaForCausalLM", read=lambda c: read(c, refused_by="LlamaConfig"),
               write=write,
               exports=lambda s: True, generic=True,  # the root: any spec
               weights=WEIGHTS, spec_keys=SPEC_KEYS, names=("llama",),
               doc="RMSNorm, RoPE, GQA, SwiGLU")
FAMILIES = (LLAMA,)
