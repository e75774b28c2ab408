"""HF config.json -> spec mapping, for eight transformers model types, each read as its
difference from Llama (the other direction is `hf_export`; `hf` re-exports both).

The JSON is read as data (no code, no network); a key the file lacks takes transformers' class
default, looked up only then, so a complete config.json loads without importing torch. What HF's
schema cannot hold (name, source, notes, a different spelling) comes from one extra key.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from archscope.errors import SpecError

EXTRA_KEY = "archscope"
_ACT = {"silu": "silu", "swish": "silu", "gelu": "gelu", "relu": "relu",  # HF name -> ours
        "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh"}
RENAMED = {"original_max_position_embeddings": "original_max_seq_len"}  # other RoPE keys match
_FIXED = {"gpt2": {"scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
                   "add_cross_attention": False}}  # other values: networks the spec cannot hold
_HF = object()  # no fallback given: use transformers' class default


class _Config:
    """A config.json's keys; a missing one takes transformers' class default for the type."""

    def __init__(self, raw: dict, model_type: str, where: str):
        self.raw, self.model_type, self.where, self._defaults = raw, model_type, where, None

    def get(self, key: str, fallback: Any = _HF) -> Any:
        if key in self.raw or fallback is not _HF:
            return self.raw.get(key, fallback)
        if self._defaults is None:  # only now: transformers imports torch, which takes seconds
            from transformers import CONFIG_MAPPING

            cls = CONFIG_MAPPING[self.model_type]
            self._defaults = {f.name: f.default for f in dataclasses.fields(cls)
                              if f.default is not dataclasses.MISSING}
            self._defaults["rope_theta"] = cls.default_theta
        return self._defaults.get(key)

    def __getitem__(self, key: str) -> Any:
        if (value := self.get(key)) is None:
            raise SpecError("required (transformers has no default)", where=self.where, key=key)
        return value

    def int(self, key: str, least: int = 1, fallback: Any = _HF) -> int:
        value = self.get(key, fallback) if fallback is not _HF else self[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise SpecError(f"expected an integer >= {least}, got {value!r}", where=self.where,
                            key=key)
        return value

    def act(self, key: str) -> str:
        if (name := self[key]) not in _ACT:
            raise SpecError(f"unsupported activation {name!r}; expected one of {', '.join(_ACT)}",
                            where=self.where, key=key)
        return _ACT[name]


def _rope(c: _Config) -> dict:
    """RoPE from `rope_parameters` (transformers 5) or `rope_theta` + `rope_scaling` (older)."""
    legacy, current = c.raw.get("rope_scaling") or {}, c.get("rope_parameters", None) or {}
    for key, value in (("rope_scaling", legacy), ("rope_parameters", current)):
        if not isinstance(value, dict):
            raise SpecError(f"expected a mapping, got {value!r}", where=c.where, key=key)
    params = {**legacy, **current}
    kind = params.get("rope_type", params.get("type", "default"))
    theta = params["rope_theta"] if "rope_theta" in params else c["rope_theta"]
    if kind == "default":
        return {"kind": "rope", "theta": theta}
    if kind not in ("llama3", "yarn", "linear"):
        raise SpecError(f"unsupported RoPE type {kind!r}; expected default, linear, llama3 "
                        "or yarn", where=c.where, key="rope_parameters.rope_type")
    scaling = {RENAMED.get(k, k): v for k, v in params.items()  # from_mapping refuses unknowns
               if k not in ("rope_type", "type", "rope_theta") and v is not None}
    return {"kind": "rope", "theta": theta, "scaling": {"kind": kind, **scaling}}


def _select(indices: list[int]) -> str | list[int]:
    """A `layers` selector: a slice string for a contiguous run, else the list."""
    if indices == list(range(indices[0], indices[-1] + 1)):
        return f"{indices[0]}:{indices[-1] + 1}"
    return indices


def _patch(mapping: dict, **sections: dict) -> dict:
    """Change some sections; a section with a new `kind` replaces the old one."""
    out = dict(mapping)
    for name, new in sections.items():
        old = out[name]
        out[name] = new if new.get("kind", old["kind"]) != old["kind"] else {**old, **new}
    return out


def _base(c: _Config) -> dict:  # shape, norm and positions: shared by every RoPE family here
    return {"vocab_size": c["vocab_size"], "d_model": c["hidden_size"],
            "n_layers": c["num_hidden_layers"], "max_seq_len": c["max_position_embeddings"],
            "tie_embeddings": c["tie_word_embeddings"],
            "norm": {"kind": "rmsnorm", "eps": c["rms_norm_eps"], "position": "pre"},
            "position": _rope(c)}


def _llama(c: _Config) -> dict:
    heads = c.int("num_attention_heads")
    return {**_base(c),
            "attention": {"kind": "gqa", "n_heads": heads,
                          "n_kv_heads": c.get("num_key_value_heads") or heads,
                          "head_dim": c.raw.get("head_dim") or c.int("hidden_size") // heads,
                          "bias": c.get("attention_bias", False)},
            "ffn": {"kind": "swiglu", "d_ff": c["intermediate_size"],
                    "activation": c.act("hidden_act"), "bias": c.get("mlp_bias", False)}}


def _mistral(c: _Config) -> dict:  # Llama + a sliding window, no bias switches
    return _patch(_llama(c), attention={"bias": False, "window": c.get("sliding_window")},
                  ffn={"bias": False})


def _moe(c: _Config) -> dict:  # Mixtral-style experts: softmax, top-k, renormalised
    return {"kind": "moe", "activation": c.act("hidden_act"), "n_experts": c["num_local_experts"],
            "top_k": c["num_experts_per_tok"], "d_expert": c["intermediate_size"],
            "router": {"normalize": True}}


def _mixtral(c: _Config) -> dict:  # Mistral + MoE
    return _patch(_mistral(c), ffn=_moe(c))


def _granite(c: _Config) -> dict:  # Llama + multipliers
    return {**_llama(c), "multipliers": {
        "embedding": c["embedding_multiplier"], "attention": c["attention_multiplier"],
        "residual": c["residual_multiplier"], "logits": c["logits_scaling"]}}


def _granitemoe(c: _Config) -> dict:  # Granite + MoE (no shared experts)
    return _patch(_granite(c), ffn=_moe(c))


def _qwen2(c: _Config) -> dict:  # Llama + q/k/v bias (o_proj none) + a window on some layers
    out = _patch(_llama(c), attention={"bias": True, "out_bias": False}, ffn={"bias": False})
    n = c.int("num_hidden_layers")
    window = c.get("sliding_window") if c.get("use_sliding_window") else None
    types = c.get("layer_types", None) or [  # transformers' rule when layer_types is absent
        "sliding_attention" if window is not None and i >= c.int("max_window_layers", 0)
        else "full_attention" for i in range(n)]
    if len(types) != n or not set(types) <= {"sliding_attention", "full_attention"}:
        raise SpecError(f"expected {n} entries, each full_attention or sliding_attention",
                        where=c.where, key="layer_types")
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention" and window is not None]
    if len(sliding) == n:
        return _patch(out, attention={"window": window})
    if sliding:
        out["layers"] = [{"select": _select(sliding), "attention": {"window": window}}]
    return out


def _deepseek_moe(c: _Config) -> dict:  # routed experts + always-on shared experts
    router = {"method": c.get("topk_method") or "greedy",
              "normalize": bool(c.get("norm_topk_prob")),
              "scaling_factor": c["routed_scaling_factor"]}
    if router["method"] != "greedy":  # greedy ignores the groups
        router.update(n_group=c.get("n_group"), topk_group=c.get("topk_group"))
    return {"kind": "moe", "activation": c.act("hidden_act"), "bias": c.get("mlp_bias", False),
            "n_experts": c["n_routed_experts"], "top_k": c["num_experts_per_tok"],
            "d_expert": c["moe_intermediate_size"], "n_shared_experts": c["n_shared_experts"],
            "router": router}


def _deepseek_v2(c: _Config) -> dict:  # Llama's skeleton + MLA + MoE after some dense layers
    mla = {key: c.get(key) for key in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                       "qk_rope_head_dim", "v_head_dim")}
    out = {**_base(c), "attention": {"kind": "mla", "n_heads": c["num_attention_heads"],
                                     "bias": c.get("attention_bias", False), **mla}}
    # DeepSeek's rule: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0
    k, freq = c.int("first_k_dense_replace", 0), c.int("moe_layer_freq", fallback=1)
    n = c.int("num_hidden_layers")
    dense = [i for i in range(n) if not (i >= k and i % freq == 0)]
    mlp = {"kind": "swiglu", "d_ff": c["intermediate_size"], "activation": c.act("hidden_act"),
           **({"bias": True} if c.get("mlp_bias", False) else {})} if dense else None
    if len(dense) == n:
        return {**out, "ffn": mlp}
    out["ffn"] = _deepseek_moe(c)
    if dense:
        out["layers"] = [{"select": _select(dense), "ffn": mlp}]
    return out


def _gpt2(c: _Config) -> dict:
    heads, width = c.int("n_head"), c.int("n_embd")
    return {"vocab_size": c["vocab_size"], "d_model": width, "n_layers": c["n_layer"],
            "max_seq_len": c["n_positions"], "tie_embeddings": c["tie_word_embeddings"],
            "norm": {"kind": "layernorm", "eps": c["layer_norm_epsilon"], "position": "pre"},
            "position": {"kind": "learned"},
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": heads,
                          "head_dim": width // heads, "bias": True},
            "ffn": {"kind": "mlp", "d_ff": c.get("n_inner") or 4 * width,
                    "activation": c.act("activation_function"), "bias": True}}


READERS = {  # model_type: reader (hf_export.WRITERS has the same keys)
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "granite": _granite,
    "granitemoe": _granitemoe,
    "deepseek_v2": _deepseek_v2,
    "gpt2": _gpt2,
}


def mapping_from_hf_config(path: str | Path) -> dict:
    """The raw spec mapping (preset keys) for an HF config.json, or a folder holding one."""
    file = Path(path) / "config.json" if Path(path).is_dir() else Path(path)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"cannot read: {err}", where=str(file)) from None
    except json.JSONDecodeError as err:
        raise SpecError(f"not valid JSON: {err}", where=str(file)) from None
    if not isinstance(raw, dict):
        raise SpecError(f"expected a JSON object, got {type(raw).__name__}", where=str(file))
    name = Path(str(raw.get("_name_or_path") or "")).name or file.resolve().parent.name
    return mapping_from_raw(raw, str(file), name, f"config.json at {file}")


def mapping_from_raw(raw: dict, where: str, name: str, source: str) -> dict:
    """The spec mapping for a parsed config.json; `where` names it in errors."""
    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in READERS:
        raise SpecError(f"unsupported model type {model_type!r}; archscope reads "
                        f"{', '.join(READERS)}", where=where, key="model_type")
    for key, value in _FIXED.get(model_type, {}).items():
        if raw.get(key, value) != value:
            raise SpecError(f"archscope only models {json.dumps(value)}", where=where, key=key)
    if not isinstance(extras := raw.get(EXTRA_KEY, {}), dict):
        raise SpecError("expected a mapping", where=where, key=EXTRA_KEY)
    body = READERS[model_type](_Config(raw, model_type, where))
    return _merge({"name": name, "source": source, **_drop_none(body)}, extras)


def _merge(base: dict, patch: dict) -> dict:
    out = dict(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        elif value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    return [_drop_none(v) for v in value] if isinstance(value, list) else value
