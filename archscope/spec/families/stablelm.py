"""StableLM (transformers' `stablelm`, StableLmForCausalLM: StableLM 2, StableLM-3B-4E1T):
Llama's module names with LayerNorms with bias (eps layer_norm_eps), RoPE on the first
partial_rotary_factor of each head (default 0.25: attention.rotary_fraction), biases on q, k
and v only (use_qkv_bias; o_proj has none), head_dim always hidden_size / num_attention_heads,
and with use_parallel_residual one LayerNorm feeding attention and the MLP side by side
(norm.position parallel, no post_attention_layernorm). qk_layernorm is refused: its per-head
LayerNorms are one module per head (q_layernorm.norms.{h}), tensors archscope's weight names
cannot stack into its per-head QK-norm's one (heads, head_dim) weight."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.phi import partial_rope, write_rope
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import PARTIAL, _act, _divides
from archscope.spec.hf_writers_base import HF_ACT
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    width, heads = c.size("hidden_size"), c.size("num_attention_heads")
    _divides(c, "hidden_size", "num_attention_heads", width, heads, "StableLmAttention")
    kv = c.size("num_key_value_heads")
    if heads % kv:
        raise c.error("num_key_value_heads", f"num_attention_heads ({heads}) must be a "
                                             f"multiple of num_key_value_heads ({kv})")
    head_dim = c.size("head_dim", null=True, fallback=None)
    if head_dim not in (None, width // heads):  # the attention ignores it, its RoPE does not
        raise c.error("head_dim", f"transformers' StableLM attention uses hidden_size // "
                                  f"num_attention_heads ({width // heads}) while its RoPE "
                                  f"reads head_dim ({head_dim}): the two disagree and it fails")
    if c.flag("qk_layernorm"):
        raise c.error("qk_layernorm", "StableLM's QK LayerNorms are one module per head "
                                      "(q_layernorm.norms.{h}, k_layernorm.norms.{h}); "
                                      "archscope's per-head QK-norm holds one (heads, "
                                      "head_dim) weight and its weight names cannot stack "
                                      "per-head tensors")
    position, fraction = partial_rope(c, 0.25)
    return {"vocab_size": c.size("vocab_size"), "d_model": width,
            "n_layers": c.size("num_hidden_layers"),
            "max_seq_len": c.size("max_position_embeddings"),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "layernorm", "eps": c.number("layer_norm_eps"),
                     "position": "parallel" if c.flag("use_parallel_residual") else "pre"},
            "position": position,
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": width // heads, "bias": c.flag("use_qkv_bias"),
                          "out_bias": False, "rotary_fraction": fraction},
            "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"),
                    "activation": _act(c)}}


def write(s: ModelSpec) -> dict:
    a = s.attention
    if a.head_dim * a.n_heads != s.d_model:
        raise SpecError(f"transformers' StableLM sizes heads as hidden_size / "
                        f"num_attention_heads ({s.d_model} / {a.n_heads}); head_dim is "
                        f"{a.head_dim}", key="attention.head_dim")
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model,
            "num_hidden_layers": s.n_layers, "max_position_embeddings": s.max_seq_len,
            "tie_word_embeddings": s.tie_embeddings, "layer_norm_eps": s.norm.eps,
            "rope_parameters": write_rope(s), "num_attention_heads": a.n_heads,
            "num_key_value_heads": a.kv_heads, "use_qkv_bias": a.bias,
            "use_parallel_residual": s.norm.position == "parallel", "qk_layernorm": False,
            "intermediate_size": s.ffn.d_ff, "hidden_act": HF_ACT[s.ffn.activation]}


STABLELM = LLAMA.but(
    "stablelm", "StableLmForCausalLM", read=read, write=write,
    # LayerNorms with bias around a gated MLP
    exports=lambda s: (s.norm.kind == "layernorm" and s.norm.has_bias
                       and not s.norm.unit_offset and s.ffn.kind in ("swiglu", "geglu")),
    spec_keys=LLAMA.key_table(**{"norm.eps": "layer_norm_eps", "norm.position":
                                 "use_parallel_residual", "attention.bias": "use_qkv_bias",
                                 "attention.rotary_fraction": f"rope_parameters.{PARTIAL}"}),
    doc="Llama with biased LayerNorms, partial RoPE, q/k/v bias, optional parallel block")
FAMILIES = (STABLELM,)
