"""LFM2 (transformers' `lfm2`, Lfm2ForCausalLM) config.json <-> spec, both ways.

LFM2 = Llama's pre-norm decoder (RMSNorms of norm_eps, RoPE, GQA) with:
- per layer either attention or a gated short convolution (spec/short_conv.py: the model's
  `mixer`, with `mixer: attention` overrides on the attention layers). `layer_types` says
  which ("full_attention" or "conv"; the class's masks know no other); absent, the layers
  `full_attn_idxs` lists attend (absent too: every layer, Lfm2Config's rule);
- attention with per-head QK-norm (q_layernorm, k_layernorm), no biases, out_proj for o_proj;
- the short conv at the model's width (mixer.width = hidden_size), conv_L_cache taps,
  conv_bias on its in_proj, conv and out_proj;
- a SwiGLU (w1 gate, w3 up, w2 down; silu, the class's own) whose width Lfm2MLP computes from
  intermediate_size (its older spelling block_ff_dim wins where given, as Lfm2Config pops it):
  with block_auto_adjust_ff_dim, int(2 * size / 3), then, unless block_ffn_dim_multiplier is
  null, int(multiplier * that) rounded up to a multiple of block_multiple_of (`d_ff` below);
- the final norm named `embedding_norm` (it follows the last layer, as Llama's `norm`);
- tie_embedding, the older spelling of tie_word_embeddings, wins where given (Lfm2Config pops
  it).
Written back as intermediate_size = d_ff with block_auto_adjust_ff_dim false, layer_types and
head_dim (which LlamaAttention reads when the config has one).
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _check_types, _heads, _rope, _select, class_default
from archscope.spec.hf_writers_base import to_base, without
from archscope.spec.schema import ModelSpec
from archscope.spec.short_conv import HF_KEYS as MIXER_KEYS

CONV, ATTENTION = "conv", "full_attention"


def base(c: Keys) -> dict:
    """Shape, norm and RoPE: Llama's keys with norm_eps and the older tie_embedding."""
    tie = "tie_embedding" if "tie_embedding" in c.raw else "tie_word_embeddings"
    return {"vocab_size": c.size("vocab_size"), "d_model": c.size("hidden_size"),
            "n_layers": c.size("num_hidden_layers"),
            "max_seq_len": c.size("max_position_embeddings"), "tie_embeddings": c.flag(tie),
            "norm": {"kind": "rmsnorm", "eps": c.number("norm_eps"), "position": "pre"},
            "position": _rope(c)}


def attention(c: Keys, d: int) -> dict:
    heads, kv, head_dim = _heads(c, d)
    return {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim,
            "qk_norm": "head"}


def mixer(c: Keys, d: int) -> dict:
    return {"kind": "short_conv", "width": d, "conv_kernel": c.size("conv_L_cache"),
            "bias": c.flag("conv_bias")}


def layer_types(c: Keys, n: int, derived: bool = True) -> list[str]:
    """layer_types, else (`derived`: Lfm2Config's rule) attention on full_attn_idxs' layers,
    or on every layer where that is absent too."""
    types = c.get("layer_types", None)
    if types is None and derived:
        attends = (c.indices("full_attn_idxs", n) if c.raw.get("full_attn_idxs") is not None
                   else set(class_default(c, "full_attn_idxs", list(range(n)))))
        types = [ATTENTION if i in attends else CONV for i in range(n)]
    _check_types(c, types, n, (ATTENTION, CONV), "the class's masks know no other")
    return types


def with_mixer(c: Keys, out: dict, types: list[str]) -> dict:
    """`out` with the short conv as its mixer and attention on the attention layers (no
    mixer where every layer attends: the conv keys are still checked)."""
    conv = mixer(c, out["d_model"])
    attends = [i for i, t in enumerate(types) if t == ATTENTION]
    if len(attends) == len(types):
        return out
    out = {**out, "mixer": conv}
    if attends:
        out["layers"] = [*out.get("layers", []), {"select": _select(attends),
                                                  "mixer": "attention"}]
    return out


def d_ff(c: Keys) -> int:
    """The width Lfm2MLP computes (see the module doc)."""
    size = c.size("block_ff_dim" if "block_ff_dim" in c.raw else "intermediate_size")
    if not c.flag("block_auto_adjust_ff_dim"):
        return size
    size = int(2 * size / 3)
    multiplier = c.number("block_ffn_dim_multiplier", null=True)
    if multiplier is None:
        return size
    size, step = int(multiplier * size), c.size("block_multiple_of")
    return step * ((size + step - 1) // step)


def swiglu(width: int) -> dict:
    return {"kind": "swiglu", "d_ff": width, "activation": "silu"}


def read(c: Keys) -> dict:
    out = base(c)
    n = out["n_layers"]
    out.update(attention=attention(c, out["d_model"]), ffn=swiglu(d_ff(c)))
    return with_mixer(c, out, layer_types(c, n))


def check_layers(s: ModelSpec, family: str) -> None:
    """What both LFM2 classes build: every layer attention or the short conv (at the model's
    width), and an FFN."""
    for layer in s.plan:
        if layer.mixer is None or layer.ffn is None:
            missing = "mixer" if layer.mixer is None else "FFN"
            raise SpecError(f"layer {layer.index} has no {missing}: every {family} layer has "
                            "attention or a short conv, and an FFN", key="layers")
    if s.mixer is not None and s.mixer.kind != "short_conv":
        raise SpecError(f"{family}'s state mixer is short_conv, not {s.mixer.kind!r}",
                        key="mixer.kind")
    if s.mixer is not None and s.mixer.width != s.d_model:
        raise SpecError(f"{family}'s short conv works at hidden_size ({s.d_model}), not "
                        f"{s.mixer.width}", key="mixer.width")


def write_common(s: ModelSpec, family: str) -> dict:
    """The keys both LFM2 configs share: shape, norm_eps, RoPE, heads, layer types, the conv."""
    check_layers(s, family)
    a = s.attention
    out = {**without(to_base(s), "rms_norm_eps"), "norm_eps": s.norm.eps,
           "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim,
           "layer_types": [CONV if layer.state is not None else ATTENTION for layer in s.plan],
           # the class's default token ids (pad 0, bos 1, eos 2) mean nothing to a spec
           "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    if s.mixer is not None:
        out.update({key: getattr(s.mixer, field) for key, field in MIXER_KEYS.items()})
    return out


def write(s: ModelSpec) -> dict:
    """Lfm2Config's keys for `s`: d_ff as intermediate_size, not adjusted."""
    return {**write_common(s, "LFM2"), "intermediate_size": s.ffn.d_ff,
            "block_auto_adjust_ff_dim": False}


def is_lfm2(s: ModelSpec) -> bool:
    return s.mixer is not None and s.mixer.kind == "short_conv"


_L = "model.layers.{i}"
ATTENTION_AND_CONV = rules(
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    *[(f"{_L}.self_attn.{p}_proj.weight", f"layers.{{i}}.self_attn.{p}_proj.weight")
      for p in "qkv"],
    (f"{_L}.self_attn.out_proj.weight", "layers.{i}.self_attn.o_proj.weight"),
    (f"{_L}.self_attn.q_layernorm.weight", "layers.{i}.self_attn.q_norm.weight"),
    (f"{_L}.self_attn.k_layernorm.weight", "layers.{i}.self_attn.k_norm.weight"),
    *[(f"{_L}.conv.{m}.{{p}}", f"layers.{{i}}.mixer.{m}.{{p}}")
      for m in ("in_proj", "conv", "out_proj")],
    (f"{_L}.operator_norm.weight", "layers.{i}.input_layernorm.weight"),
    (f"{_L}.ffn_norm.weight", "layers.{i}.post_attention_layernorm.weight"),
    ("model.embedding_norm.weight", "norm.weight"),
    ("lm_head.weight", "lm_head.weight"))
DENSE = rules(*[(f"{_L}.feed_forward.{hf}.weight", f"layers.{{i}}.mlp.{ours}.weight")
                for hf, ours in (("w1", "gate_proj"), ("w3", "up_proj"), ("w2", "down_proj"))])

SPEC_KEYS = LLAMA.key_table(**{
    "norm.eps": "norm_eps", "tie_embeddings": "tie_word_embeddings", "layers": "layer_types",
    "mixer": "layer_types", "mixer.width": "hidden_size",
    **{f"mixer.{field}": key for key, field in MIXER_KEYS.items()}})
KEY_FIELDS = LLAMA.field_table(conv_L_cache="conv_kernel", block_ff_dim="d_ff",
                               block_multiple_of="d_ff")

LFM2 = LLAMA.but(
    "lfm2", "Lfm2ForCausalLM", read=read, write=write,
    exports=lambda s: is_lfm2(s) and not any(layer.is_moe for layer in s.plan),
    mixers=("short_conv",), ffns=("swiglu",), weights=ATTENTION_AND_CONV + DENSE,
    spec_keys=SPEC_KEYS, key_fields=KEY_FIELDS, names=("lfm2",),
    usual={"lfm2": "lfm2-2.6b"},
    doc="Llama + QK-norm + LFM2's gated short-conv layers, block-sized SwiGLU")
FAMILIES = (LFM2,)
