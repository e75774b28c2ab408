"""nanochat (transformers' `nanochat`, NanoChatForCausalLM): Llama's attention with weightless
RMSNorms everywhere (norm.weight false; the final norm also norms the embedding before the
first layer: norm.embedding), RoPE turning the other way (its rotate_half flips the signs:
position.reversed), q and k normed by a weightless RMSNorm after RoPE (Llama 4's l2: qk_norm
l2), attention_bias on q, k, v and o, a two-matrix MLP fc1/fc2 without bias (relu2 by default:
ffn.kind relu2) and the final logits soft-capped (final_logit_softcapping: head.softcap)."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import Family, frozen, rules
from archscope.spec.families.llama import SPEC_KEYS
from archscope.spec.families.llama import WEIGHTS as LLAMA_WEIGHTS
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _heads, _rope, two_matrix_ffn
from archscope.spec.hf_writers_base import rope_parameters, two_matrix_act
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    width = c.size("hidden_size")
    heads, kv, head_dim = _heads(c, width)
    cap = c.number("final_logit_softcapping", null=True)
    return {"vocab_size": c.size("vocab_size"), "d_model": width,
            "n_layers": c.size("num_hidden_layers"),
            "max_seq_len": c.size("max_position_embeddings"),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "rmsnorm", "eps": c.number("rms_norm_eps"), "position": "pre",
                     "weight": False, "embedding": True},
            "position": {**_rope(c), "reversed": True},
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": head_dim, "bias": c.flag("attention_bias"),
                          "qk_norm": "l2"},
            "ffn": two_matrix_ffn(c, c.size("intermediate_size"), False),
            **({"head": {"softcap": cap}} if cap is not None else {})}


def write(s: ModelSpec) -> dict:
    a = s.attention
    if s.position.kind != "rope":
        raise SpecError(f"nanochat uses RoPE, not {s.position.kind!r}", key="position.kind")
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model,
            "num_hidden_layers": s.n_layers, "max_position_embeddings": s.max_seq_len,
            "tie_word_embeddings": s.tie_embeddings, "rms_norm_eps": s.norm.eps,
            "rope_parameters": rope_parameters(s.position), "num_attention_heads": a.n_heads,
            "num_key_value_heads": a.kv_heads, "head_dim": a.head_dim,
            "attention_bias": a.bias, "intermediate_size": s.ffn.d_ff,
            "hidden_act": two_matrix_act(s), "final_logit_softcapping": s.lm_head.softcap,
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


_ATTENTION = tuple(r for r in LLAMA_WEIGHTS if ".self_attn." in r.hf)
NANOCHAT = Family(
    "nanochat", "NanoChatForCausalLM", read=read, write=write,
    # the one class with a norm after the embedding and RoPE turning the other way
    exports=lambda s: bool(s.norm.embedding or s.position.reversed),
    ffns=("mlp", "relu2"),
    weights=rules(("model.embed_tokens.weight", "embed_tokens.weight"),
                  ("model.layers.{i}.mlp.fc1.weight", "layers.{i}.mlp.up_proj.weight"),
                  ("model.layers.{i}.mlp.fc2.weight", "layers.{i}.mlp.down_proj.weight"),
                  ("lm_head.weight", "lm_head.weight")) + _ATTENTION,
    spec_keys=frozen({**SPEC_KEYS, "head.softcap": "final_logit_softcapping"}),
    doc="weightless RMSNorms (one after the embedding), reversed RoPE, l2 QK-norm, "
        "squared-ReLU fc1/fc2, final soft cap")
FAMILIES = (NANOCHAT,)
