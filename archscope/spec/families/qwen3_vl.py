"""Qwen3-VL's text models (transformers' multimodal `qwen3_vl` and `qwen3_vl_moe`,
Qwen3VL[Moe]ForConditionalGeneration; transformers registers no causal LM for them alone), read
from `text_config`:

- qwen3_vl's text model is Qwen3's (per-head QK-norm, attention_bias on q, k, v and o, no
  window), head_dim a field of Qwen3VLTextConfig (default 128);
- qwen3_vl_moe's is Qwen3-MoE's on the layers decoder_sparse_step and mlp_only_layers pick, its
  router always renormalised (Qwen3VLMoeTextTopKRouter has no norm_topk_prob switch), no window.

Their RoPE is interleaved M-RoPE (mrope_section): with text alone the three position streams
are equal, so it rotates as plain RoPE, and the mrope keys are not read. The lm_head is tied by
the wrapper's top-level tie_word_embeddings (text_config's is ignored: Qwen3VLMoeTextConfig's
default true ties nothing). The vision tower (`model.visual.*`) is skipped while loading.
Read only: the text models write as qwen3 and qwen3_moe.
"""

from __future__ import annotations


from archscope.spec.families.base import frozen, renamed, rules
from archscope.spec.families.minimax_m2 import head_dims
from archscope.spec.families.qwen2_moe import moe_layers
from archscope.spec.families.qwen3 import QWEN3
from archscope.spec.families.qwen3_moe import QWEN3_MOE
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _base, _select, read_text_config

_MROPE = ("mrope_section", "mrope_interleaved")


def _read_text(c: Keys) -> dict:
    base = _base(c, read_elsewhere=_MROPE)
    heads, kv, head_dim = head_dims(c, base["d_model"])
    return {**base, "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                                  "head_dim": head_dim, "bias": c.flag("attention_bias"),
                                  "qk_norm": "head"},
            "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": _act(c)}}


def _read_text_moe(c: Keys) -> dict:
    out = _read_text(c)
    n = out["n_layers"]
    key = c.alias("num_experts", "num_local_experts")  # transformers 5 saves the second
    dense = moe_layers(c, n, key)
    if len(dense) == n:
        return out
    experts, k = c.size(key), c.size("num_experts_per_tok")
    if k > experts:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed {key} ({experts})")
    mlp, out["ffn"] = out["ffn"], {"kind": "moe", "activation": _act(c), "n_experts": experts,
                                   "top_k": k, "d_expert": c.size("moe_intermediate_size"),
                                   "router": {"normalize": True}}
    if dense:
        out["layers"] = [{"select": _select(dense), "ffn": mlp}]
    return out


def _wrapped(read_text, text_type: str):
    """The reader of a wrapper whose text model `read_text` reads (`text_type`: its config
    class, whose defaults fill the keys text_config lacks); errors name text_config.<key>."""
    def read(c: Keys) -> dict:
        tie = c.flag("tie_word_embeddings")  # the wrapper's: it ties the lm_head
        sub = Keys({**c.mapping("text_config"), "tie_word_embeddings": tie}, text_type, c.where,
                   c.fields)
        return read_text_config(c, sub, read_text)
    return read


def _text_weights(table):
    """A text model's names under the wrapper's `model.language_model.`, and its lm_head."""
    text = tuple(r for r in table if r.hf.startswith("model."))
    return renamed(text, "model.", "model.language_model.") + rules(("lm_head.weight",
                                                                     "lm_head.weight"))


_VISION = ("model.visual.",)
QWEN3_VL = QWEN3.but(
    "qwen3_vl", "Qwen3VLForConditionalGeneration", read=_wrapped(_read_text, "qwen3_vl_text"),
    weights=_text_weights(QWEN3.weights), skipped_prefixes=_VISION,
    spec_keys=frozen({k: f"text_config.{v}" for k, v in QWEN3.spec_keys.items()}),
    names=("qwen",), doc="Qwen3's model as Qwen3-VL's text model")
QWEN3_VL_MOE = QWEN3_MOE.but(
    "qwen3_vl_moe", "Qwen3VLMoeForConditionalGeneration",
    read=_wrapped(_read_text_moe, "qwen3_vl_moe_text"), ffns=("moe", "swiglu"),
    weights=_text_weights(QWEN3_MOE.weights), skipped_prefixes=_VISION,
    spec_keys=frozen({k: f"text_config.{v}" for k, v in QWEN3_MOE.spec_keys.items()}),
    names=("qwen",), doc="Qwen3-MoE's model (always renormalised) as Qwen3-VL-MoE's text model")
FAMILIES = (QWEN3_VL, QWEN3_VL_MOE)
