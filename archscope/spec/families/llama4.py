"""Llama 4's config.json <-> spec: `llama4_text` (Llama4ForCausalLM) read and written, and the
multimodal `llama4` (Llama4ForConditionalGeneration) read through its `text_config`.

Llama 4 = Llama + RoPE on adjacent pairs (position.interleaved) + per layer, as transformers'
Llama4TextConfig decides it:
- `no_rope_layers` (1 = RoPE, 0 = NoPE; absent or empty: every `no_rope_layer_interval`-th
  layer is NoPE). RoPE layers get the weightless L2 QK-norm after RoPE when `use_qk_norm`
  (qk_norm l2); NoPE layers get the query temperature when `attn_temperature_tuning`
  (temperature_floor = floor_scale, temperature_scale = attn_scale);
- `layer_types` (absent: chunked_attention on the RoPE layers, full_attention on the others):
  chunked layers attend within `attention_chunk_size` (attention.chunk);
- `moe_layers` (absent: every `interleave_moe_layer_step`-th layer, the last of each step):
  Llama4TextMoe, i.e. `num_local_experts` experts of `intermediate_size`, top
  `num_experts_per_tok` by logit, each weighted by the sigmoid of its logit on its INPUT
  (router.weights input, no renormalisation), plus one always-on shared expert of
  `intermediate_size`; the other layers a SwiGLU of `intermediate_size_mlp`.
The layers are grouped into `layers` overrides by what they are; the variant most layers share
is the base, so a uniform model has no overrides.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from archscope.spec.families.base import frozen, rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import (_act, _base, _check_types, _heads, _select,
                                            read_text_config)
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec

_TYPES = ("full_attention", "chunked_attention")  # the two masks Llama4TextModel builds


def _uses_rope(c: Keys, n: int) -> list[int]:
    uses = c.switches("no_rope_layers", n) if c.raw.get("no_rope_layers") != [] else None
    if uses is None:  # Llama4TextConfig's rule, also for an empty list (it tests truthiness)
        interval = c.size("no_rope_layer_interval")
        uses = [int((i + 1) % interval != 0) for i in range(n)]
    return uses


def _layer_types(c: Keys, uses: list[int], n: int) -> list[str]:
    types = c.get("layer_types", None)
    if types is None:  # Llama4TextConfig's rule: chunked where RoPE is on
        return ["chunked_attention" if u else "full_attention" for u in uses]
    _check_types(c, types, n, _TYPES, "the masks transformers' Llama 4 builds")
    return types


def _tuning(c: Keys) -> bool:
    """attn_temperature_tuning: a bool; an integer is read as its truth value, as transformers
    4.51 (which wrote Llama 4's published files, with the value 4) read it. transformers 5
    types the key bool and refuses that file; archscope reads it as published."""
    value = c.get("attn_temperature_tuning")
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    raise c.error("attn_temperature_tuning", f"expected true/false, {what(value)}")


def _moe_layers(c: Keys, n: int) -> set[int]:
    if c.raw.get("moe_layers") is not None:  # a list, even empty, overrides the step
        return c.indices("moe_layers", n)
    step = c.size("interleave_moe_layer_step")
    return set(range(step - 1, n, step))


def llama4_text(c: Keys) -> dict:
    base = _base(c)
    n = base["n_layers"]
    heads, kv, head_dim = _heads(c, base["d_model"])
    base["position"]["interleaved"] = True  # Llama 4 rotates as a complex product of pairs
    uses, l2 = _uses_rope(c, n), c.flag("use_qk_norm")
    types = _layer_types(c, uses, n)
    chunk = c.size("attention_chunk_size", null=True)
    if chunk is None and "chunked_attention" in types:
        raise c.error("attention_chunk_size", "null, but layer_types has chunked_attention "
                                              f"layers (layer {types.index('chunked_attention')})")
    tuning = _tuning(c)
    floor, scale = c.size("floor_scale"), c.number("attn_scale")  # checked even when unused
    attn = [{"chunk": chunk if t == "chunked_attention" else None,
             **({"qk_norm": "l2"} if u and l2 else {}), **({} if u else {"rope": False}),
             **({"temperature_floor": floor, "temperature_scale": scale}
                if tuning and not u else {})} for u, t in zip(uses, types)]
    act, k, experts = _act(c), c.size("num_experts_per_tok"), c.size("num_local_experts")
    if k > experts:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed num_local_experts "
                                             f"({experts})")
    d_expert, d_mlp, moe = c.size("intermediate_size"), c.size("intermediate_size_mlp"), \
        _moe_layers(c, n)
    moe_ffn = {"kind": "moe", "activation": act, "n_experts": experts, "top_k": k,
               "d_expert": d_expert, "n_shared_experts": 1,
               "router": {"scoring": "sigmoid", "normalize": False, "weights": "input"}}
    dense = {"kind": "swiglu", "d_ff": d_mlp, "activation": act}
    ffn = [moe_ffn if i in moe else dense for i in range(n)]
    common = {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim,
              "bias": c.flag("attention_bias")}
    return {**base, **_grouped(common, attn, ffn)}


def _grouped(common: dict, attn: list[dict], ffn: list[dict]) -> dict:
    """The spec's attention, ffn and `layers` from per-layer variants: the most frequent
    variant of each is the base, every other variant one override (of what it adds, on a base
    that has only `common` when the attention variants differ, since a null is no patch)."""
    keys = [repr(sorted((k, v) for k, v in a.items() if v is not None)) for a in attn]
    uniform = len(set(keys)) == 1
    top_attn = {**common, **({k: v for k, v in attn[0].items() if v is not None}
                             if uniform else {})}
    ffn_keys = [repr(f) for f in ffn]
    top_ffn = ffn[ffn_keys.index(Counter(ffn_keys).most_common(1)[0][0])]
    overrides = []
    if not uniform:
        for key in dict.fromkeys(keys):
            picked = [i for i, k in enumerate(keys) if k == key]
            patch = {k: v for k, v in attn[picked[0]].items() if v is not None}
            if patch:
                overrides.append({"select": _select(picked), "attention": patch})
    for key in dict.fromkeys(ffn_keys):
        picked = [i for i, k in enumerate(ffn_keys) if k == key]
        if ffn[picked[0]] != top_ffn:
            overrides.append({"select": _select(picked), "ffn": ffn[picked[0]]})
    out = {"attention": top_attn, "ffn": top_ffn}
    return {**out, "layers": overrides} if overrides else out


def llama4(c: Keys) -> dict:
    """The multimodal wrapper: the language model is its text_config's llama4_text."""
    inner = Keys(c.mapping("text_config"), "llama4_text", c.where, LLAMA4_TEXT.key_fields)
    out = read_text_config(c, inner, llama4_text)
    top = c.raw.get("tie_word_embeddings")
    if top is not None and top != out["tie_embeddings"]:
        raise c.error("tie_word_embeddings", f"{what(top)}, but text_config's (which builds "
                                             f"the language model) is {out['tie_embeddings']}")
    return out


def llama4_structure(s: ModelSpec) -> bool:
    """Whether `s` has what only transformers' Llama 4 class builds (with GQA attention)."""
    if any(layer.attention.kind != "gqa" for layer in s.plan):
        return False
    return bool(s.position.interleaved) or any(
        layer.attention.chunk or layer.attention.qk_norm == "l2"
        or layer.attention.temperature_floor
        or (layer.is_moe and layer.ffn.routing.weights == "input") for layer in s.plan)


def to_llama4_text(s: ModelSpec) -> dict:
    """Llama4TextConfig's keys for `s`: the first layer of each kind gives the shared values;
    what one config cannot hold, the exporter's read-back names."""
    plan, a = s.plan, s.attention
    moe = next((layer.ffn for layer in plan if layer.is_moe), None)
    dense = next((layer.ffn for layer in plan if not layer.is_moe), None)
    chunk = next((layer.attention.chunk for layer in plan if layer.attention.chunk), None)
    tuned = next((layer.attention for layer in plan if layer.attention.temperature_floor), None)
    out = {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim, "attention_bias": a.bias,
           "hidden_act": HF_ACT[(moe or dense).activation],
           "no_rope_layers": [int(layer.attention.rope) for layer in plan],
           "layer_types": [layer.layer_type for layer in plan],
           "attention_chunk_size": chunk,
           "use_qk_norm": any(layer.attention.qk_norm == "l2" for layer in plan),
           "attn_temperature_tuning": tuned is not None,
           "moe_layers": [layer.index for layer in plan if layer.is_moe],
           "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    if tuned is not None:
        out.update(floor_scale=tuned.temperature_floor, attn_scale=tuned.temperature_scale)
    if moe is not None:
        out.update(num_local_experts=moe.n_experts, num_experts_per_tok=moe.top_k,
                   intermediate_size=moe.d_expert)
    if dense is not None:
        out["intermediate_size_mlp"] = dense.d_ff
    return out



# Llama's attention and norms + `feed_forward` for the FFN: dense layers' gate/up/down_proj, or
# Llama4TextMoe's router, shared_expert and experts, whose gate_up_proj [E, d, 2*d_expert] (gate
# columns first) and down_proj [E, d_expert, d] are ours transposed
_FF = "model.layers.{i}.feed_forward"
WEIGHTS = tuple(r for r in LLAMA.weights if ".mlp." not in r.hf) + rules(
    *[(f"{_FF}.{proj}.{{p}}", f"layers.{{i}}.mlp.{proj}.{{p}}")
      for proj in ("gate_proj", "up_proj", "down_proj")],
    (f"{_FF}.router.weight", "layers.{i}.mlp.gate.weight"),
    *[(f"{_FF}.experts.{proj}", f"layers.{{i}}.mlp.experts.{proj}", {"layout": "transposed"})
      for proj in ("gate_up_proj", "down_proj")],
    *[(f"{_FF}.shared_expert.{proj}.{{p}}", f"layers.{{i}}.mlp.shared_experts.{proj}.{{p}}")
      for proj in ("gate_proj", "up_proj", "down_proj")],
)
LLAMA4_TEXT = LLAMA.but(
    "llama4_text", "Llama4ForCausalLM", read=llama4_text, write=to_llama4_text,
    # adjacent-pair RoPE, chunks, L2 QK-norm, temperature, input-weighted experts
    exports=llama4_structure, ffns=("moe", "swiglu"), weights=WEIGHTS,
    spec_keys=LLAMA.key_table(**{
        "ffn.d_ff": "intermediate_size_mlp", "attention.chunk": "attention_chunk_size",
        "attention.rope": "no_rope_layers", "attention.qk_norm": "use_qk_norm",
        "attention.temperature_floor": "floor_scale",
        "attention.temperature_scale": "attn_scale", "layers": "layer_types"}),
    names=("llama",), doc="Llama + chunked and NoPE layers + interleaved MoE")
# The multimodal wrapper (Llama4ForConditionalGeneration): the same text model under
# `language_model.`; its vision model and projector are skipped while loading (per
# transformers 5.23's modeling_llama4.py).
LLAMA4 = LLAMA4_TEXT.but(
    "llama4", "Llama4ForConditionalGeneration", read=llama4,
    weights=tuple(dataclasses.replace(r, hf="language_model." + r.hf) for r in WEIGHTS),
    skipped_prefixes=("vision_model.", "multi_modal_projector."),
    spec_keys=frozen({k: f"text_config.{v}" for k, v in LLAMA4_TEXT.spec_keys.items()}),
    names=("llama",), doc="Llama 4's text model inside the multimodal wrapper")
FAMILIES = (LLAMA4_TEXT, LLAMA4)
