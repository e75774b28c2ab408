"""Gemma 3 config.json <-> spec, both directions in one place (transformers' gemma3_text, and
the multimodal `gemma3` wrapper, whose text model is read from its `text_config`).

Gemma 3 = Qwen3's per-head QK-norm + four norms per block (norm.position sandwich) whose
RMSNorms scale by (1 + weight) (norm.unit_offset), a GeGLU MLP (hidden_activation
gelu_pytorch_tanh), embeddings scaled by sqrt(hidden_size) (multipliers.embedding), a softmax
scale of query_pre_attn_scalar**-0.5 (multipliers.attention), and two layer types: sliding
layers (window `sliding_window`) and global ones, each with its own RoPE
(transformers 5: rope_parameters.{sliding_attention, full_attention}; older files: rope_theta
and rope_scaling for the global layers, rope_local_base_freq for the sliding ones). In the
spec the layer types are `layers` overrides: a window on the sliding layers, and the position
of the layers whose RoPE differs from the model's (the model's is the sliding one, unless only
the sliding one is scaled). Soft-capping (Gemma 2's attn_logit_softcapping and
final_logit_softcapping) is refused: archscope does not model it.
"""

from __future__ import annotations

import dataclasses

from archscope.errors import SpecError
from archscope.spec.families.base import frozen, renamed, rules
from archscope.spec.families.qwen3 import QWEN3
from archscope.spec.hf_keys import Defaulted, Keys, what
from archscope.spec.hf_readers_base import (_act, _check_types, _rope, _select, check_one_tie,
                                            read_text_config)
from archscope.spec.hf_writers_base import rope_parameters
from archscope.spec.schema import ModelSpec

_TYPES = ("full_attention", "sliding_attention")
_THETA = {"full_attention": ("rope_theta", "global"),  # legacy key, default_theta's entry
          "sliding_attention": ("rope_local_base_freq", "local")}
_PATTERN = 6  # Gemma3TextConfig's sliding_window_pattern when a file has neither it nor layer_types
_HF_ACT = {"gelu_tanh": "gelu_pytorch_tanh", "silu": "silu", "gelu": "gelu", "relu": "relu"}


def _rekeyed(err: SpecError, old: str, new: str) -> SpecError:
    key = err.key or ""
    key = new + key[len(old):] if key == old or key.startswith(old + ".") else key
    return SpecError(err.detail, where=err.where, key=key)


def _rope_of_type(c: Keys, layer_type: str) -> dict:
    """One layer type's RoPE, as transformers' Gemma3TextConfig assembles it: its entry of
    rope_parameters; the legacy rope_scaling on top of the global one; the theta from the entry,
    else the legacy key, else the class's default_theta."""
    params = c.mapping("rope_parameters")
    for key in params:
        if key not in _TYPES:
            raise c.error(f"rope_parameters.{key}", "Gemma 3 keeps one RoPE per layer type: "
                                                   f"expected the keys {' and '.join(_TYPES)}")
    entry = params.get(layer_type) or {}
    if not isinstance(entry, dict):
        raise c.error(f"rope_parameters.{layer_type}", f"expected a mapping, {what(entry)}")
    if layer_type == "full_attention" and c.mapping("rope_scaling"):
        _rope(Keys({"rope_scaling": c.raw["rope_scaling"], "rope_theta": 1.0}, c.model_type,
                   c.where))  # checked under its own name first
        entry = {**entry, **c.raw["rope_scaling"]}
    legacy, default = _THETA[layer_type]
    if "rope_theta" not in entry:
        if legacy in c.raw:
            entry = {**entry, "rope_theta": c.number(legacy)}
        else:
            theta = c._class_defaults()["rope_theta"][default]  # transformers' default_theta
            c.defaulted.setdefault(legacy, Defaulted(legacy, theta, c.where))
            entry = {**entry, "rope_theta": theta}
    sub = Keys({"rope_parameters": entry}, c.model_type, c.where)
    try:
        return _rope(sub)
    except SpecError as err:
        raise _rekeyed(err, "rope_parameters", f"rope_parameters.{layer_type}") from None


def _layer_types(c: Keys, n: int) -> list[str]:
    types = c.get("layer_types", None)
    if types is None:  # Gemma3TextConfig's rule: layer i is global when (i + 1) % pattern == 0
        if "sliding_window_pattern" not in c.raw:
            c.defaulted.setdefault("sliding_window_pattern",
                                   Defaulted("sliding_window_pattern", _PATTERN, c.where))
        pattern = c.size("sliding_window_pattern", fallback=_PATTERN)
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    _check_types(c, types, n)
    return types


def _refuse_unmodelled(c: Keys) -> None:
    for key in ("attn_logit_softcapping", "final_logit_softcapping"):
        if c.raw.get(key) is not None:
            raise c.error(key, f"archscope does not model soft-capping (Gemma 2's tanh cap on "
                               f"the attention or final logits), {what(c.raw[key])}: only null "
                               "is read")
    if c.flag("use_bidirectional_attention", null=True):
        raise c.error("use_bidirectional_attention", "archscope models causal decoders only")


def gemma_shape(c: Keys) -> tuple:
    """(hidden_size, layers, heads, KV heads, activation, sliding_window) of a Gemma 2/3
    config.json, its heads checked as its config class and attention check them."""
    width, n = c.size("hidden_size"), c.size("num_hidden_layers")
    heads, kv = c.size("num_attention_heads"), c.size("num_key_value_heads")
    if width % heads or heads % kv:  # the config class refuses the first, the attention the other
        key = "num_attention_heads" if width % heads else "num_key_value_heads"
        raise c.error(key, f"hidden_size ({width}) must be a multiple of num_attention_heads "
                           f"({heads}), and that of num_key_value_heads ({kv})")
    return width, n, heads, kv, _act(c, "hidden_activation"), c.size("sliding_window", null=True)


def sliding_layers(c: Keys, types: list, window: int | None) -> list[int]:
    """The layers `types` marks sliding_attention, which need a window."""
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    if sliding and window is None:
        raise c.error("sliding_window", f"is null, but layer_types marks layer {sliding[0]} "
                                        "sliding_attention")
    return sliding


def read_gemma3_text(c: Keys) -> dict:
    """The spec mapping of a gemma3_text config.json."""
    _refuse_unmodelled(c)
    width, n, heads, kv, act, window = gemma_shape(c)
    types = _layer_types(c, n)
    sliding = sliding_layers(c, types, window)
    rope = {t: _rope_of_type(c, t) for t in _TYPES}
    # the model's position: the sliding layers' (most layers), unless only it is scaled (a
    # layer can patch a scaling in, not out: the importer drops nulls)
    base = ("full_attention" if "scaling" in rope["sliding_attention"]
            and "scaling" not in rope["full_attention"] else "sliding_attention")
    other = _TYPES[0] if base == _TYPES[1] else _TYPES[1]
    out = {"vocab_size": c.size("vocab_size"), "d_model": width, "n_layers": n,
           "max_seq_len": c.size("max_position_embeddings"),
           "tie_embeddings": c.flag("tie_word_embeddings"),
           "norm": {"kind": "rmsnorm", "eps": c.number("rms_norm_eps"), "position": "sandwich",
                    "unit_offset": True},
           "position": rope[base if len(set(types)) > 1 else types[0]],
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                         "head_dim": c.size("head_dim"), "bias": c.flag("attention_bias"),
                         "qk_norm": "head"},
           "ffn": {"kind": "geglu" if act == "gelu_tanh" else "swiglu",
                   "d_ff": c.size("intermediate_size"), "activation": act},
           # transformers: hidden_size**0.5 and query_pre_attn_scalar**-0.5, as Python floats
           "multipliers": {"embedding": width ** 0.5,
                           "attention": c.size("query_pre_attn_scalar") ** -0.5}}
    layers = []
    if sliding and len(sliding) < n:
        layers.append({"select": _select(sliding), "attention": {"window": window}})
    elif sliding:
        out["attention"]["window"] = window
    patched = [i for i, t in enumerate(types) if t == other]
    if patched and len(patched) < n and rope[other] != rope[base]:
        layers.append({"select": _select(patched),
                       "position": {k: v for k, v in rope[other].items() if k != "kind"}})
    return {**out, "layers": layers} if layers else out


def read_gemma3(c: Keys) -> dict:
    """A multimodal gemma3 config.json: its text_config, keys it omits filled in with
    Gemma3TextConfig's defaults (as transformers does); the vision tower is not modelled."""
    sub = Keys(c.mapping("text_config"), "gemma3_text", c.where, GEMMA3_TEXT.key_fields)
    out = read_text_config(c, sub, read_gemma3_text)
    check_one_tie(c, out)
    return out


def _attention_scalar(s: ModelSpec) -> int:
    """query_pre_attn_scalar: an integer (Gemma3TextConfig's type) whose **-0.5 is the spec's
    softmax scale, bit for bit."""
    scale = s.mults.attention or s.attention.qk_head_dim ** -0.5
    scalar = round(scale ** -2)
    if scalar < 1 or scalar ** -0.5 != scale:
        raise SpecError(f"Gemma 3's softmax scale is query_pre_attn_scalar**-0.5 with an "
                        f"integer query_pre_attn_scalar; {scale!r} is not one such scale",
                        key="multipliers.attention")
    return scalar


def write_gemma3_text(s: ModelSpec) -> dict:
    """Gemma3TextConfig's keys for `s`; what the class cannot build is named by the exporter's
    read-back, except what this writer must refuse first."""
    if s.mults.embedding != s.d_model ** 0.5:
        raise SpecError(f"Gemma 3 scales embeddings by sqrt(hidden_size) = {s.d_model ** 0.5!r} "
                        f"exactly, not {s.mults.embedding!r}", key="multipliers.embedding")
    if s.ffn.kind not in ("geglu", "swiglu"):
        raise SpecError(f"Gemma 3's MLP is gated (geglu or swiglu), not {s.ffn.kind!r}",
                        key="ffn.kind")
    rope = {}
    for t in _TYPES:
        positions = list(dict.fromkeys(layer.position for layer in s.plan if layer.layer_type == t))
        if len(positions) > 1:
            raise SpecError(f"transformers' Gemma 3 has one RoPE per layer type; the "
                            f"{t} layers have {len(positions)}", key="layers")
        rope[t] = rope_parameters(positions[0] if positions else s.position)
    windows = [layer.window for layer in s.plan if layer.window]
    a = s.attention
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model,
            "num_hidden_layers": s.n_layers, "max_position_embeddings": s.max_seq_len,
            "tie_word_embeddings": s.tie_embeddings, "rms_norm_eps": s.norm.eps,
            "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias, "intermediate_size": s.ffn.d_ff,
            "hidden_activation": _HF_ACT.get(s.ffn.activation, s.ffn.activation),
            "query_pre_attn_scalar": _attention_scalar(s), "rope_parameters": rope,
            "sliding_window": windows[0] if windows else None,
            "layer_types": [layer.layer_type for layer in s.plan],
            "attn_logit_softcapping": None, "final_logit_softcapping": None,
            "use_bidirectional_attention": False}


def _claims(s: ModelSpec) -> bool:
    """Only Gemma 3's class has these: four norms per block, (1 + weight) norms, a RoPE that
    differs between layers."""
    return (s.norm.position == "sandwich" or s.norm.unit_offset
            or any(layer.position != s.position for layer in s.plan))


# Qwen3's names + the sandwich's two FFN norms (input_layernorm and post_attention_layernorm
# around attention, pre_/post_feedforward_layernorm around the MLP)
WEIGHTS = QWEN3.weights + rules(*[(f"model.layers.{{i}}.{name}.weight",
                                   f"layers.{{i}}.{name}.weight")
                                  for name in ("pre_feedforward_layernorm",
                                               "post_feedforward_layernorm")])
GEMMA3_TEXT = QWEN3.but(
    "gemma3_text", "Gemma3ForCausalLM", read=read_gemma3_text, write=write_gemma3_text,
    exports=_claims, weights=WEIGHTS,
    spec_keys=QWEN3.key_table(**{"ffn.activation": "hidden_activation",
                                 "multipliers.attention": "query_pre_attn_scalar"}),
    names=("gemma",), doc="Qwen3 + sandwich norms + GeGLU + sliding and global layers")
# The multimodal wrapper (Gemma3ForConditionalGeneration) holds the same text model under
# model.language_model (transformers 5) or language_model.model (checkpoints saved by 4.x); its
# vision tower and projector have no counterpart here and are skipped while loading.
_TEXT = tuple(r for r in WEIGHTS if r.hf.startswith("model."))
GEMMA3 = GEMMA3_TEXT.but(
    "gemma3", "Gemma3ForConditionalGeneration", read=read_gemma3,
    weights=renamed(_TEXT, "model.", "model.language_model.")
    + tuple(dataclasses.replace(r, alias=True)
            for r in renamed(_TEXT, "model.", "language_model.model."))
    + rules(("lm_head.weight", "lm_head.weight"),
            ("language_model.lm_head.weight", "lm_head.weight", {"alias": True})),
    # per transformers 5.23's modeling_gemma3.py (4.x checkpoints without the `model.`)
    skipped_prefixes=("model.vision_tower.", "model.multi_modal_projector.", "vision_tower.",
                      "multi_modal_projector."),
    spec_keys=frozen({k: f"text_config.{v}" for k, v in GEMMA3_TEXT.spec_keys.items()}),
    names=("gemma",), doc="Gemma 3's text model inside the multimodal wrapper")
FAMILIES = (GEMMA3_TEXT, GEMMA3)
