"""RecurrentGemma (transformers' `recurrent_gemma`, RecurrentGemmaForCausalLM) config.json <->
spec, both ways.

Griffin's residual blocks: `block_types` (cycled over num_hidden_layers, as
RecurrentGemmaConfig.layers_block_type does) picks per layer a recurrent block (the spec's
`mixer`, kind rglru: spec/rglru.py) or local attention (`mixer: attention` overrides). What
transformers 5.24 builds:

- attention: MQA/GQA (num_attention_heads, num_key_value_heads) with head_dim = hidden_size //
  num_attention_heads (RecurrentGemmaConfig sets it so, whatever the file says), q/k/v biases
  from attention_bias and an o_proj bias always (attention.out_bias), every layer windowed to
  attention_window_size (attention.window), RoPE on the first int(head_dim *
  partial_rotary_factor) dims of each head (attention.rotary_fraction; the class's 0.5), the
  default RoPE only;
- the recurrent block: lru_width (null: hidden_size), num_attention_heads gate blocks,
  conv1d_width taps, the y branch through hidden_activation;
- the MLP: gate/up/down with biases, intermediate_size // 2 wide (RecurrentGemmaMlp halves
  it), hidden_activation (gelu_pytorch_tanh: kind geglu);
- RMSNorms scaling by (1 + weight) (norm.unit_offset), a final one (`final_norm`);
- embeddings times sqrt(hidden_size) rounded to bfloat16 (the class's `normalizer` buffer is
  a bf16 tensor: multipliers.embedding, e.g. 50.5 for 2560);
- the logits soft-capped at logits_soft_cap (head.softcap).

RecurrentGemmaConfig has no max_position_embeddings (the recurrence has no limit): a file's own
is read (transformers keeps the key, and archscope writes it); without one, archscope takes the
attention window, beyond which no layer's memory grows, noted as defaulted.
Read by no module, so not read: head_dim (overridden), w_init_variance_scale,
final_w_init_variance_scale (initialisation), attention_dropout (training),
embeddings_scale_by_sqrt_dim (older files; the class always scales).
"""

from __future__ import annotations

import struct

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.gemma3 import _HF_ACT
from archscope.spec.families.gpt_oss import sliding_select
from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import PARTIAL, _act, _rope, class_default, rotary_fraction
from archscope.spec.hf_writers_base import rope_parameters
from archscope.spec.rglru import HF_KEYS as MIXER_KEYS
from archscope.spec.schema import ModelSpec

_PARTIAL_DEFAULT = 0.5  # RecurrentGemmaConfig.__post_init__'s
_BLOCKS = ("recurrent", "attention")
_REPEATS = 100  # layers_block_type: (block_types * 100)[:num_hidden_layers]


def bf16(x: float) -> float:
    """x rounded to bfloat16 (to nearest, ties to even), as torch.tensor(x, dtype=bfloat16)."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def embedding_scale(width: int) -> float:
    """RecurrentGemmaModel's normalizer: hidden_size ** 0.5 stored as a bfloat16 tensor."""
    return bf16(width ** 0.5)


def _block_types(c: Keys, n: int) -> list[str]:
    types = c.get("block_types")
    if not isinstance(types, list) or not types:
        raise c.error("block_types", f"expected a non-empty list of {' or '.join(_BLOCKS)}, "
                                     f"{what(types)}")
    for i, t in enumerate(types):
        if not isinstance(t, str) or t not in _BLOCKS:
            raise c.error(f"block_types[{i}]", f"expected {' or '.join(_BLOCKS)} (Griffin's "
                                               f"two residual blocks), {what(t)}")
    if len(types) * _REPEATS < n:
        raise c.error("block_types", f"transformers repeats it {_REPEATS} times, fewer than "
                                     f"num_hidden_layers ({n}) layers")
    return (types * _REPEATS)[:n]


def read(c: Keys) -> dict:
    width, n = c.size("hidden_size"), c.size("num_hidden_layers")
    heads = c.size("num_attention_heads")
    kv = c.size("num_key_value_heads", null=True) or heads
    if heads % kv:
        raise c.error("num_key_value_heads", f"num_attention_heads ({heads}) must be a multiple "
                                             f"of num_key_value_heads ({kv})")
    if width < heads:
        raise c.error("num_attention_heads", f"hidden_size ({width}) is smaller than "
                                             f"num_attention_heads ({heads}): head_dim would be 0")
    lru = c.size("lru_width", null=True) or width
    if lru % heads:
        raise c.error("num_attention_heads", f"must divide lru_width ({lru}): the RG-LRU's gates "
                                             f"are num_attention_heads blocks, got {heads}")
    position = _rope(c, read_elsewhere=(PARTIAL,))
    if "scaling" in position:
        raise c.error("rope_parameters.rope_type", "RecurrentGemmaRotaryEmbedding supports only "
                                                   "the default RoPE")
    act = _act(c, "hidden_activation")
    window = c.size("attention_window_size")
    if "max_position_embeddings" in c.raw:
        context = c.size("max_position_embeddings")
    else:  # the class has no such key (module doc)
        context = class_default(c, "max_position_embeddings", window)
    types = _block_types(c, n)
    out = {"vocab_size": c.size("vocab_size"), "d_model": width, "n_layers": n,
           "max_seq_len": context, "tie_embeddings": c.flag("tie_word_embeddings"),
           "norm": {"kind": "rmsnorm", "eps": c.number("rms_norm_eps"), "position": "pre",
                    "unit_offset": True},
           "position": position,
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                         "head_dim": width // heads, "bias": c.flag("attention_bias"),
                         "out_bias": True, "window": window,
                         "rotary_fraction": rotary_fraction(c, _PARTIAL_DEFAULT)},
           "mixer": {"kind": "rglru", "lru_width": lru, "n_heads": heads,
                     "conv_kernel": c.size("conv1d_width"), "activation": act},
           "ffn": {"kind": "geglu" if act == "gelu_tanh" else "swiglu",
                   "d_ff": c.size("intermediate_size", least=2) // 2, "activation": act,
                   "bias": True},
           "multipliers": {"embedding": embedding_scale(width)},
           "head": {"softcap": c.number("logits_soft_cap")}}
    attends = [i for i, t in enumerate(types) if t == "attention"]
    if len(attends) == n:  # no recurrent layer: a plain local-attention stack
        del out["mixer"]
    elif attends:
        out["layers"] = [{"select": sliding_select(attends, n), "mixer": "attention"}]
    return out


def write(s: ModelSpec) -> dict:
    """RecurrentGemmaConfig's keys for `s`; what the class cannot build (another head_dim, a
    full-attention layer, gate blocks other than the heads) comes back different from the
    read-back (the exporter names the key), except what must be refused first."""
    for layer in s.plan:
        if layer.mixer is None or layer.ffn is None:
            missing = "mixer" if layer.mixer is None else "FFN"
            raise SpecError(f"layer {layer.index} has no {missing}: every RecurrentGemma block "
                            "has a temporal block and an MLP", key="layers")
    if s.mixer is not None and s.mixer.kind != "rglru":
        raise SpecError(f"RecurrentGemma's state mixer is rglru, not {s.mixer.kind!r}",
                        key="mixer.kind")
    if s.position.kind != "rope":
        raise SpecError(f"RecurrentGemma uses RoPE, not {s.position.kind!r}",
                        key="position.kind")
    if s.mults.embedding != embedding_scale(s.d_model):
        raise SpecError(f"RecurrentGemma scales embeddings by bf16(sqrt(hidden_size)) = "
                        f"{embedding_scale(s.d_model)!r}, not {s.mults.embedding!r}",
                        key="multipliers.embedding")
    a = s.attention
    windows = [layer.window for layer in s.plan if layer.attention is not None]
    rope = rope_parameters(s.position)
    rope[PARTIAL] = a.rotary_fraction or 1.0
    out = {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
           "max_position_embeddings": s.max_seq_len, "tie_word_embeddings": s.tie_embeddings,
           "rms_norm_eps": s.norm.eps, "rope_parameters": rope,
           "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "attention_bias": a.bias,
           "attention_window_size": (windows[0] if windows else a.window) or s.max_seq_len,
           "intermediate_size": 2 * s.ffn.d_ff,
           "hidden_activation": _HF_ACT.get(s.ffn.activation, s.ffn.activation),
           "logits_soft_cap": s.lm_head.softcap,
           "block_types": [_BLOCKS[layer.state is None] for layer in s.plan]}
    if s.mixer is not None:
        out.update({key: getattr(s.mixer, field) for key, field in MIXER_KEYS.items()
                    if key != "num_attention_heads"})
    return out


_L, _T = "model.layers.{i}", "model.layers.{i}.temporal_block"
RECURRENT_GEMMA_ROWS = (
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    (f"{_L}.temporal_pre_norm.weight", "layers.{i}.input_layernorm.weight"),
    (f"{_L}.channel_pre_norm.weight", "layers.{i}.post_attention_layernorm.weight"),
    *[(f"{_T}.{proj}.{{p}}", f"layers.{{i}}.self_attn.{proj}.{{p}}")
      for proj in ("q_proj", "k_proj", "v_proj", "o_proj")],
    *[(f"{_T}.{name}.{{p}}", f"layers.{{i}}.mixer.{name}.{{p}}")
      for name in ("linear_y", "linear_x", "linear_out", "conv_1d")],
    *[(f"{_T}.rg_lru.{name}", f"layers.{{i}}.mixer.rg_lru.{name}")
      for name in ("recurrent_param", "input_gate_weight", "input_gate_bias",
                   "recurrent_gate_weight", "recurrent_gate_bias")],
    *[(f"{_L}.mlp_block.{proj}.{{p}}", f"layers.{{i}}.mlp.{proj}.{{p}}")
      for proj in ("gate_proj", "up_proj", "down_proj")],
    ("model.final_norm.weight", "norm.weight"),
    ("lm_head.weight", "lm_head.weight"),
)


def _claims(s: ModelSpec) -> bool:
    return s.mixer is not None and s.mixer.kind == "rglru"


RECURRENT_GEMMA = LLAMA.but(
    "recurrent_gemma", "RecurrentGemmaForCausalLM", read=read, write=write, exports=_claims,
    mixers=("rglru",), weights=rules(*RECURRENT_GEMMA_ROWS),
    spec_keys=LLAMA.key_table(**{
        "max_seq_len": "max_position_embeddings", "attention.head_dim": "num_attention_heads",
        "attention.window": "attention_window_size", "layers": "block_types",
        "attention.rotary_fraction": "partial_rotary_factor",
        "ffn.d_ff": "intermediate_size", "ffn.activation": "hidden_activation",
        "head.softcap": "logits_soft_cap", "multipliers.embedding": "hidden_size",
        "mixer.lru_width": "lru_width", "mixer.n_heads": "num_attention_heads",
        "mixer.conv_kernel": "conv1d_width", "mixer.activation": "hidden_activation"}),
    key_fields=LLAMA.field_table(lru_width="lru_width", conv1d_width="conv_kernel",
                                 attention_window_size="window"),
    names=("recurrentgemma", "griffin"),
    doc="Griffin: RG-LRU recurrent blocks + local MQA, (1 + w) RMSNorm, GeGLU with biases, "
        "soft-capped logits")
FAMILIES = (RECURRENT_GEMMA,)
