"""Kimi Linear (transformers' kimi_linear, KimiLinearForCausalLM) config.json <-> spec.

Kimi Linear = DeepSeek-V3's MLA and MoE (KimiLinearConfig derives DeepseekV3Config) with:
- Kimi Delta Attention (`mixer`, kind kimi_delta) on the `linear_attention` layers and MLA on the
  `full_attention` ones (`layer_types`; else the checkpoint's 1-indexed
  linear_attn_config.full_attn_layers / kda_layers; else every layer i > 0 with i % 4 == 0
  attends): in the spec, `mixer: attention` overrides on those layers;
- MLA without RoPE (KimiLinearModel has no rotary embedding: its decoupled key passes
  unrotated; position.kind none, softmax scale 1/sqrt(qk_nope + qk_rope));
- the MLP on the `dense` layers of mlp_layer_types (else the first first_k_dense_replace, 1 by
  default) and DeepSeek-V3's MoE (sigmoid noaux_tc router, correction bias, groups) elsewhere;
- its own key names (attribute_map): num_experts, num_experts_per_token, num_shared_experts,
  moe_renormalize, num_expert_group, model_max_length; the KDA's linear_* keys, which the
  checkpoint's linear_attn_config sub-dict (num_heads, head_dim, short_conv_kernel_size)
  overrides.
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.deepseek_v3 import DEEPSEEK_V3
from archscope.spec.families.gpt_oss import sliding_select
from archscope.spec.families.mixtral import DOWN, GATE_UP
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _act, _select, class_default
from archscope.spec.hf_writers_base import HF_ACT
from archscope.spec.kimi_delta import HF_KEYS as MIXER_KEYS
from archscope.spec.kimi_delta import SUB_KEYS
from archscope.spec.schema import ModelSpec

_TYPES = ("linear_attention", "full_attention")
_SUB = "linear_attn_config"
# the class's attribute_map: a dataclass field (its default's key) -> the name it stores, saves
# and the checkpoints say
NAMES = {"max_position_embeddings": "model_max_length", "norm_topk_prob": "moe_renormalize",
         "n_group": "num_expert_group", "num_local_experts": "num_experts",
         "num_experts_per_tok": "num_experts_per_token", "n_shared_experts": "num_shared_experts"}
_MLA = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def _key(c: Keys, field: str) -> str:
    return c.alias(field, NAMES[field])


def _mixer(c: Keys) -> dict:
    sub = c.mapping(_SUB)
    out = {"kind": "kimi_delta"}
    for sub_key, key in SUB_KEYS.items():  # the sub-dict wins, as KimiLinearConfig reads it
        field = MIXER_KEYS[key]
        out[field] = (c.size(f"{_SUB}.{sub_key}") if sub_key in sub else c.size(key))
    return out


def _layer_types(c: Keys, n: int) -> list[str]:
    types = c.get("layer_types", None)
    sub = c.mapping(_SUB)
    if types is None and "full_attn_layers" in sub and "kda_layers" in sub:
        types = [None] * n
        for key, kind in (("full_attn_layers", "full_attention"), ("kda_layers", _TYPES[0])):
            listed = sub[key]
            if not isinstance(listed, list):
                raise c.error(f"{_SUB}.{key}", f"expected a list of 1-indexed layers, "
                                               f"{what(listed)}")
            for j, layer in enumerate(listed):
                if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= n:
                    raise c.error(f"{_SUB}.{key}[{j}]", f"expected a layer from 1 to {n} "
                                                        f"(1-indexed), {what(layer)}")
                types[layer - 1] = kind
        if None in types:
            raise c.error(f"{_SUB}.kda_layers", f"layer {types.index(None) + 1} is in neither "
                                                "kda_layers nor full_attn_layers")
    elif types is None:  # KimiLinearConfig's default: layer i > 0 with i % 4 == 0 attends
        types = [_TYPES[bool(i) and i % 4 == 0] for i in range(n)]
    if not isinstance(types, list) or len(types) != n or any(t not in _TYPES for t in types):
        raise c.error("layer_types", f"expected {n} entries (num_hidden_layers), each "
                                     f"{' or '.join(_TYPES)}, {what(types)}")
    return types


def _dense_layers(c: Keys, n: int, field: bool = False) -> list[int]:
    """The dense layers: mlp_layer_types, else the first first_k_dense_replace (`field`: a
    dataclass field of the class, Ling's; else a kwarg KimiLinearConfig defaults to 1)."""
    kinds = c.get("mlp_layer_types", None)
    if kinds is None:
        k = (c.size("first_k_dense_replace", least=0) if field or "first_k_dense_replace" in c.raw
             else class_default(c, "first_k_dense_replace", 1))
        return list(range(min(k, n)))
    if not isinstance(kinds, list) or len(kinds) != n or any(t not in ("dense", "sparse")
                                                               for t in kinds):
        raise c.error("mlp_layer_types", f"expected {n} entries (num_hidden_layers), each dense "
                                         f"or sparse, {what(kinds)}")
    return [i for i, t in enumerate(kinds) if t == "dense"]


def _moe(c: Keys) -> dict:
    """DeepSeek-V3's MoE under Kimi's names: KimiLinearTopkRouter always routes by sigmoid
    scores with a correction bias, in groups (noaux_tc)."""
    c.text("moe_router_activation_func", ("sigmoid",), null=True, fallback=None,
           noun="router activation (transformers' KimiLinearTopkRouter is sigmoid only)")
    n, k = c.size(_key(c, "num_local_experts")), c.size(_key(c, "num_experts_per_tok"))
    if k > n:
        raise c.error(_key(c, "num_experts_per_tok"), f"top-k ({k}) cannot exceed the "
                                                      f"{n} experts")
    router = {"method": "noaux_tc", "scoring": "sigmoid", "correction_bias": True,
              "normalize": c.flag(_key(c, "norm_topk_prob")),
              "scaling_factor": c.number("routed_scaling_factor"),
              "n_group": c.size(_key(c, "n_group")), "topk_group": c.size("topk_group")}
    return {"kind": "moe", "activation": _act(c), "n_experts": n, "top_k": k,
            "d_expert": c.size("moe_intermediate_size"),
            "n_shared_experts": c.size(_key(c, "n_shared_experts"), least=0), "router": router}


def read(c: Keys) -> dict:
    if c.flag("mla_use_nope", null=True, fallback=None) is False:
        raise c.error("mla_use_nope", "transformers' KimiLinearAttention never rotates its "
                                      "keys (no RoPE): only true is modelled")
    if c.size("moe_layer_freq", fallback=1) != 1:
        raise c.error("moe_layer_freq", "transformers' KimiLinear reads no moe_layer_freq (every "
                                        "sparse layer is MoE): only 1 is modelled")
    n = c.size("num_hidden_layers")
    mla = {key: c.size(key, null=key == "q_lora_rank") for key in _MLA}
    out = {"vocab_size": c.size("vocab_size"), "d_model": c.size("hidden_size"), "n_layers": n,
           "max_seq_len": c.size(_key(c, "max_position_embeddings")),
           "tie_embeddings": c.flag("tie_word_embeddings"),
           "norm": {"kind": "rmsnorm", "eps": c.number("rms_norm_eps"), "position": "pre"},
           "position": {"kind": "none"}, "mixer": _mixer(c),
           "attention": {"kind": "mla", "n_heads": c.size("num_attention_heads"),
                         "bias": c.flag("attention_bias"), **mla}}
    dense = _dense_layers(c, n)
    mlp = {"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": _act(c)}
    out["ffn"] = mlp if len(dense) == n else _moe(c)
    attends = [i for i, t in enumerate(_layer_types(c, n)) if t == "full_attention"]
    layers = []
    if len(attends) == n:  # no KDA layer: a plain MLA stack
        del out["mixer"]
    elif attends:
        layers.append({"select": sliding_select(attends, n), "mixer": "attention"})
    if dense and len(dense) < n:
        layers.append({"select": _select(dense), "ffn": mlp})
    return {**out, "layers": layers} if layers else out


def write(s: ModelSpec) -> dict:
    """KimiLinearConfig's keys for `s` (the names it saves); what the class cannot build comes
    back different from the read-back (the exporter names the key)."""
    for layer in s.plan:
        if layer.mixer is None or layer.ffn is None:
            missing = "mixer" if layer.mixer is None else "FFN"
            raise SpecError(f"layer {layer.index} has no {missing}: every Kimi Linear layer has "
                            "a mixer and an FFN", key="layers")
    if s.position.kind != "none":
        raise SpecError("Kimi Linear's MLA has no RoPE: position.kind must be none",
                        key="position.kind")
    a, moe = s.attention, next((layer.ffn for layer in s.plan if layer.is_moe), None)
    dense = [layer for layer in s.plan if not layer.is_moe]
    out = {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
           "model_max_length": s.max_seq_len, "tie_word_embeddings": s.tie_embeddings,
           "rms_norm_eps": s.norm.eps, "num_attention_heads": a.n_heads,
           "num_key_value_heads": a.n_heads, "attention_bias": a.bias,
           **{key: getattr(a, key) for key in _MLA},
           "hidden_act": HF_ACT[(moe or s.plan[0].ffn).activation],
           "layer_types": [_TYPES[layer.state is None] for layer in s.plan],
           "mlp_layer_types": ["sparse" if layer.is_moe else "dense" for layer in s.plan],
           # KimiLinearConfig's token ids (163584 ..) would lie outside a smaller vocabulary
           "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    if dense:
        out["intermediate_size"] = dense[0].ffn.d_ff
    if s.mixer is not None:
        out.update({key: getattr(s.mixer, field) for key, field in MIXER_KEYS.items()})
    if moe is not None:
        out.update(moe_keys(moe))
    return out


def moe_keys(moe) -> dict:
    """The MoE's config.json keys, Kimi Linear's names (Ling's bailing_hybrid writes the same)."""
    r = moe.routing
    return {"num_experts": moe.n_experts, "num_experts_per_token": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "num_shared_experts": moe.shared_experts,
            "moe_renormalize": r.normalize, "routed_scaling_factor": r.scaling_factor,
            "num_expert_group": r.n_group, "topk_group": r.topk_group}


def _claims(s: ModelSpec) -> bool:
    return s.mixer is not None and s.mixer.kind == "kimi_delta" and s.mixer.gates == "low_rank"


_ATTN = "model.layers.{i}.self_attn"
_KDA = ("q_proj", "k_proj", "v_proj", "conv1d", "forget_gate.f_a_proj", "forget_gate.f_b_proj",
        "b_proj", "g_a_proj", "g_b_proj", "o_norm", "o_proj")
# KDA layers: the same `self_attn` prefix as MLA's (q_proj and o_proj are named alike: the
# mapping takes the rule whose target the layer has); the published checkpoint's conv split in
# three (transformers' conversion_mapping concatenates them) is read as aliases
KIMI_LINEAR_ROWS = (
    *[(f"{_ATTN}.{name}.weight", f"layers.{{i}}.mixer.{name}.weight") for name in _KDA],
    *[(f"{_ATTN}.forget_gate.{name}", f"layers.{{i}}.mixer.forget_gate.{name}")
      for name in ("dt_bias", "A_log")],
    *[(f"{_ATTN}.{x}_conv1d.weight", "layers.{i}.mixer.conv1d.weight",
       {"alias": True, "part": (j, 3)}) for j, x in enumerate("qkv")],
)

_MOE, _MLP = "model.layers.{i}.block_sparse_moe", "model.layers.{i}.mlp"
# the published layout, which save_pretrained writes back: every FFN under block_sparse_moe,
# one tensor per expert (w1 gate, w3 up, w2 down), the forget gate's tensors beside the KDA's
PER_EXPERT = ((f"{_MOE}.experts.{{j}}.w1.weight", GATE_UP, 0, 2),
              (f"{_MOE}.experts.{{j}}.w3.weight", GATE_UP, 1, 2),
              (f"{_MOE}.experts.{{j}}.w2.weight", DOWN, 0, 1))
RENAMED = (
    *[(f"{_MOE}.{name}", f"{_MLP}.{name}")
      for name in ("gate.weight", "gate.e_score_correction_bias",
                   *[f"{part}{proj}.weight" for part in ("", "shared_experts.")
                     for proj in ("gate_proj", "up_proj", "down_proj")])],
    *[(f"{_ATTN}.{name}", f"{_ATTN}.forget_gate.{name}")
      for name in ("f_a_proj.weight", "f_b_proj.weight", "dt_bias", "A_log")],
)

KIMI_LINEAR = DEEPSEEK_V3.but(
    "kimi_linear", "KimiLinearForCausalLM", read=read, write=write, exports=_claims,
    mixers=("kimi_delta",), attentions=("mla",), ffns=("moe", "swiglu"),
    weights=DEEPSEEK_V3.weights + rules(*KIMI_LINEAR_ROWS),
    per_expert=PER_EXPERT, renamed_tensors=RENAMED,
    spec_keys=DEEPSEEK_V3.key_table(**{
        "max_seq_len": "model_max_length", "ffn.n_experts": "num_experts",
        "ffn.top_k": "num_experts_per_token", "ffn.n_shared_experts": "num_shared_experts",
        "ffn.router.normalize": "moe_renormalize", "ffn.router.n_group": "num_expert_group",
        "layers": "layer_types", "position.kind": "mla_use_nope",
        **{f"mixer.{field}": key for key, field in MIXER_KEYS.items()}}),
    key_fields=DEEPSEEK_V3.field_table(
        model_max_length="max_seq_len", num_experts_per_token="top_k",
        linear_num_heads="n_heads", linear_head_dim="head_dim",
        linear_conv_kernel_dim="conv_kernel"),
    names=("kimi linear",), doc="DeepSeek-V3's MLA (no RoPE) and MoE + Kimi Delta Attention")
FAMILIES = (KIMI_LINEAR,)
