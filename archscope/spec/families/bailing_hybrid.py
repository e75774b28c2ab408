"""Ling 3 hybrids (transformers' bailing_hybrid, BailingHybridForCausalLM) config.json <-> spec.

BailingHybrid = Kimi Linear (families/kimi_linear.py: the same decoder layer, MoE, key names
and attribute_map) with:
- a KDA of full-rank gates (BailingHybridDeltaAttention: f_proj and g_proj d -> H*h in place of
  Kimi's low-rank pairs; A_log held [H]) and, with kda_safe_gate, a bounded decay
  kda_lower_bound * sigmoid(exp(A_log) * (f + dt_bias)): the kimi_delta mixer with
  gates full_rank and gate_lower_bound. Its heads, head width and conv are linear_num_heads,
  linear_head_dim and linear_conv_kernel_dim where the file has them (save_pretrained writes
  them), else num_attention_heads, head_dim and short_conv_kernel_size (__post_init__'s);
- MLA with RoPE (rope_parameters; rope_theta 6e6 by default) on adjacent pairs, every
  layer_group_size-th layer (layer_types), with a per-head sigmoid output gate (g_proj:
  attention.head_gate);
- num_mtp_layers (num_nextn_predict_layers) MTP layers stored after the decoder, which the class
  does not build (counted apart).
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.gpt_oss import sliding_select
from archscope.spec.families.kimi_linear import (_ATTN, KIMI_LINEAR, _dense_layers, _key, _moe,
                                                 moe_keys)
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _act, _rope, _select
from archscope.spec.hf_writers_base import HF_ACT, rope_parameters
from archscope.spec.schema import ModelSpec

_TYPES = ("linear_attention", "full_attention")
_MLA = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


# (field, the key BailingHybridConfig saves, the key its __post_init__ derives it from): a file
# that has the first is read by it (transformers sets it after __post_init__; save_pretrained
# writes both, head_dim then being qk_rope_head_dim's)
_MIXER_KEYS = (("n_heads", "linear_num_heads", "num_attention_heads"),
               ("head_dim", "linear_head_dim", "head_dim"),
               ("conv_kernel", "linear_conv_kernel_dim", "short_conv_kernel_size"))


def _layer_types(c: Keys, n: int) -> list[str]:
    types = c.get("layer_types", None)
    if types is None:  # BailingHybridConfig: the last layer of every group attends
        group = c.size("layer_group_size")
        types = [_TYPES[(i + 1) % group == 0] for i in range(n)]
    if not isinstance(types, list) or len(types) != n or any(t not in _TYPES for t in types):
        raise c.error("layer_types", f"expected {n} entries (num_hidden_layers), each "
                                     f"{' or '.join(_TYPES)}, {what(types)}")
    return types


def read(c: Keys) -> dict:
    n = c.size("num_hidden_layers")
    attends = [i for i, t in enumerate(_layer_types(c, n)) if t == "full_attention"]
    heads = c.size("num_attention_heads")
    safe = c.flag("kda_safe_gate")
    mixer = {"kind": "kimi_delta", "gates": "full_rank",
             **{field: c.size(key if key in c.raw else fallback)
                for field, key, fallback in _MIXER_KEYS},
             "gate_lower_bound": (c.number("kda_lower_bound", positive=False) if safe
                                  else None)}
    if safe and mixer["gate_lower_bound"] >= 0:
        raise c.error("kda_lower_bound", f"a bound on a log-space decay is negative, "
                                         f"{what(mixer['gate_lower_bound'])}")
    out = {"vocab_size": c.size("vocab_size"), "d_model": c.size("hidden_size"), "n_layers": n,
           "max_seq_len": c.size(_key(c, "max_position_embeddings")),
           "tie_embeddings": c.flag("tie_word_embeddings"),
           "norm": {"kind": "rmsnorm", "eps": c.number("rms_norm_eps"), "position": "pre"},
           "position": _rope(c), "mixer": mixer,
           "attention": {"kind": "mla", "n_heads": heads, "bias": c.flag("attention_bias"),
                         **{key: c.size(key, null=key == "q_lora_rank") for key in _MLA},
                         "head_gate": True},
           # the class's field is num_mtp_layers (attribute_map: num_nextn_predict_layers)
           "mtp_layers": c.size(c.alias("num_mtp_layers", "num_nextn_predict_layers"), least=0)}
    dense = _dense_layers(c, n, field=True)
    mlp = {"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": _act(c)}
    out["ffn"] = mlp if len(dense) == n else _moe(c)
    layers = []
    if len(attends) == n:  # no KDA layer: a plain (head-gated) MLA stack
        del out["mixer"]
    elif attends:
        layers.append({"select": sliding_select(attends, n), "mixer": "attention"})
    if dense and len(dense) < n:
        layers.append({"select": _select(dense), "ffn": mlp})
    return {**out, "layers": layers} if layers else out


def write(s: ModelSpec) -> dict:
    """BailingHybridConfig's keys for `s` (the names it saves); what the class cannot build
    comes back different from the read-back (the exporter names the key)."""
    m, a = s.mixer, s.attention
    for layer in s.plan:
        if layer.mixer is None or layer.ffn is None:
            missing = "mixer" if layer.mixer is None else "FFN"
            raise SpecError(f"layer {layer.index} has no {missing}: every Ling hybrid layer has "
                            "a mixer and an FFN", key="layers")
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    dense = [layer for layer in s.plan if not layer.is_moe]
    out = {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
           "model_max_length": s.max_seq_len, "tie_word_embeddings": s.tie_embeddings,
           "rms_norm_eps": s.norm.eps, "rope_parameters": rope_parameters(s.position),
           "num_attention_heads": a.n_heads, "num_key_value_heads": a.n_heads,
           "attention_bias": a.bias, **{key: getattr(a, key) for key in _MLA},
           "hidden_act": HF_ACT[(moe or s.plan[0].ffn).activation],
           "layer_types": [_TYPES[layer.state is None] for layer in s.plan],
           "mlp_layer_types": ["sparse" if layer.is_moe else "dense" for layer in s.plan],
           "num_nextn_predict_layers": s.mtp_layers,
           "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    if m is not None:
        out.update({key: getattr(m, field) for field, key, _ in _MIXER_KEYS})
        out.update({"head_dim": m.head_dim, "short_conv_kernel_size": m.conv_kernel,
                    "kda_safe_gate": m.gate_lower_bound is not None})
        if m.gate_lower_bound is not None:
            out["kda_lower_bound"] = m.gate_lower_bound
    if dense:
        out["intermediate_size"] = dense[0].ffn.d_ff
    if moe is not None:
        out.update(moe_keys(moe))
    return out


def _claims(s: ModelSpec) -> bool:
    return s.mixer is not None and s.mixer.kind == "kimi_delta" and s.mixer.gates == "full_rank"


# transformers' names: Kimi Linear's, the KDA's gates full-rank (forget_gate.f_proj, g_proj)
# and MLA's head gate (self_attn.g_proj: the same name, the rule whose target the layer has);
# save_pretrained writes them back as transformers' conversion_mapping reads them (Ling's
# files: word_embeddings, `attention` for self_attn, `dense` for o_proj, the conv in three, the
# forget gate's tensors beside the KDA's, expert_bias, one tensor per expert)
_ROWS = (
    *[(f"{_ATTN}.{name}.weight", f"layers.{{i}}.mixer.{name}.weight")
      for name in ("forget_gate.f_proj", "g_proj")],
    (f"{_ATTN}.g_proj.weight", "layers.{i}.self_attn.g_proj.weight"),
)
_MLP = "model.layers.{i}.mlp"
_OLD = "model.layers.{i}.attention"
_SAME = ("q_proj", "k_proj", "v_proj", "b_proj", "o_norm", "g_proj", "kv_a_proj_with_mqa",
         "kv_a_layernorm", "kv_b_proj", "q_a_proj", "q_a_layernorm", "q_b_proj")
RENAMED = (
    ("model.word_embeddings.weight", "model.embed_tokens.weight"),
    *[(f"{_OLD}.{name}.weight", f"{_ATTN}.{name}.weight") for name in _SAME],
    *[(f"{_OLD}.{x}_conv1d.weight", f"{_ATTN}.{x}_conv1d.weight") for x in "qkv"],
    (f"{_OLD}.dense.weight", f"{_ATTN}.o_proj.weight"),
    (f"{_OLD}.f_proj.weight", f"{_ATTN}.forget_gate.f_proj.weight"),
    *[(f"{_OLD}.{name}", f"{_ATTN}.forget_gate.{name}") for name in ("dt_bias", "A_log")],
    (f"{_MLP}.gate.expert_bias", f"{_MLP}.gate.e_score_correction_bias"),
)
PER_EXPERT = ((f"{_MLP}.experts.{{j}}.gate_proj.weight", f"{_MLP}.experts.gate_up_proj", 0, 2),
              (f"{_MLP}.experts.{{j}}.up_proj.weight", f"{_MLP}.experts.gate_up_proj", 1, 2),
              (f"{_MLP}.experts.{{j}}.down_proj.weight", f"{_MLP}.experts.down_proj", 0, 1))

BAILING_HYBRID = KIMI_LINEAR.but(
    "bailing_hybrid", "BailingHybridForCausalLM", read=read, write=write, exports=_claims,
    mixers=("kimi_delta",), attentions=("mla",), ffns=("moe", "swiglu"),
    weights=KIMI_LINEAR.weights + rules(*_ROWS), per_expert=PER_EXPERT, renamed_tensors=RENAMED,
    spec_keys=KIMI_LINEAR.key_table(**{
        "position.theta": "rope_theta", "layers": "layer_types",
        "mixer.gate_lower_bound": "kda_lower_bound",
        "mtp_layers": "num_nextn_predict_layers"}),
    key_fields=KIMI_LINEAR.field_table(short_conv_kernel_size="conv_kernel", head_dim="head_dim",
                                       layer_group_size="n_layers"),
    names=("ling",), doc="Kimi Linear with full-rank KDA gates, a bounded decay and RoPE MLA")
FAMILIES = (BAILING_HYBRID,)
