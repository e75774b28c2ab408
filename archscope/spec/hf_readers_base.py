"""What the config.json readers share: activation and RoPE keys, the shape, norm and position
keys most families start from, heads, windows and multipliers (each family's reader is in its
own module: archscope/spec/families/)."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.hf_keys import Defaulted, Keys, what

_ACT = {"silu": "silu", "swish": "silu", "gelu": "gelu", "relu": "relu",  # HF name -> ours
        "quick_gelu": "quick_gelu",
        "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh"}
RENAMED = {"original_max_position_embeddings": "original_max_seq_len"}  # other RoPE keys match
_ROPE_TYPES = ("default", "linear", "llama3", "yarn")
_ROPE_SIZES = ("original_max_position_embeddings",)
_ROPE_POSITIVE = ("factor", "low_freq_factor", "high_freq_factor")
_ROPE_NUMBERS = ("beta_fast", "beta_slow", "mscale", "mscale_all_dim")
_ROPE_FLAGS = ("truncate",)  # yarn: round the correction range (gpt-oss: false)
_LAYER_TYPES = ("full_attention", "sliding_attention")


def _act(c: Keys, key: str = "hidden_act") -> str:
    return _ACT[c.text(key, _ACT, noun="activation")]


def _rope(c: Keys, read_elsewhere: tuple[str, ...] = ()) -> dict:
    """RoPE from `rope_parameters` (transformers 5) or `rope_theta` + `rope_scaling` (older).
    `read_elsewhere`: keys of those sections the family's reader reads itself (GLM's
    partial_rotary_factor, which transformers 5 saves there)."""
    legacy, current = c.mapping("rope_scaling"), c.mapping("rope_parameters")
    origin = {**{k: "rope_scaling" for k in legacy}, **{k: "rope_parameters" for k in current}}
    params = {**legacy, **current}

    def at(k: str) -> str:
        return f"{origin[k]}.{k}"

    type_key = next((k for k in ("rope_type", "type") if k in params), None)
    kind = "default" if type_key is None else params[type_key]
    if not isinstance(kind, str) or kind not in _ROPE_TYPES:
        raise c.error(at(type_key), f"unsupported RoPE type: expected one of "
                                    f"{', '.join(_ROPE_TYPES)}, {what(kind)}")
    if "rope_theta" in params:
        theta = c.number(at("rope_theta"), value=params["rope_theta"])
    else:
        theta = c.number("rope_theta")
    if kind == "default":
        return {"kind": "rope", "theta": theta}
    scaling = {"kind": kind}
    for k, v in params.items():
        if k in ("rope_type", "type", "rope_theta", *read_elsewhere) or v is None:
            continue
        if k in _ROPE_SIZES:
            c.size(at(k), value=v)
        elif k in _ROPE_POSITIVE or k in _ROPE_NUMBERS:
            c.number(at(k), value=v, positive=k in _ROPE_POSITIVE)
        elif k in _ROPE_FLAGS:
            if not isinstance(v, bool):
                raise c.error(at(k), f"expected true/false, {what(v)}")
        else:
            raise c.error(at(k), "archscope does not read this RoPE key; it reads rope_type, "
                                 f"rope_theta, {', '.join(_ROPE_SIZES + _ROPE_POSITIVE)}, "
                                 f"{', '.join(_ROPE_NUMBERS + _ROPE_FLAGS)}")
        scaling[RENAMED.get(k, k)] = v
    return {"kind": "rope", "theta": theta, "scaling": scaling}


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


def _base(c: Keys, read_elsewhere: tuple[str, ...] = ()) -> dict:
    # shape, norm and positions: shared by every RoPE family here
    return {"vocab_size": c.size("vocab_size"), "d_model": c.size("hidden_size"),
            "n_layers": c.size("num_hidden_layers"),
            "max_seq_len": c.size("max_position_embeddings"),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "rmsnorm", "eps": c.number("rms_norm_eps"), "position": "pre"},
            "position": _rope(c, read_elsewhere)}


def _divides(c: Keys, width_key: str, heads_key: str, width: int, heads: int,
             refused_by: str) -> None:
    """Refuse, as transformers' class `refused_by` does, heads that do not divide the width."""
    if width % heads:
        raise c.error(heads_key, f"{width_key} ({width}) is not a multiple of {heads_key} "
                                 f"({heads}); transformers' {refused_by} refuses it")


def _heads(c: Keys, width: int, refused_by: str | None = None) -> tuple[int, int, int]:
    """(query heads, key/value heads, head_dim) of a GQA family; `refused_by`: the config class
    that refuses heads not dividing the width even when head_dim is given (LlamaConfig)."""
    heads = c.size("num_attention_heads")
    kv = c.size("num_key_value_heads", null=True) or heads  # null: one per query head
    if heads % kv:
        raise c.error("num_key_value_heads", f"num_attention_heads ({heads}) must be a multiple "
                                             f"of num_key_value_heads ({kv})")
    if refused_by is not None:
        _divides(c, "hidden_size", "num_attention_heads", width, heads, refused_by)
    head_dim = c.size("head_dim", null=True, fallback=None)  # absent or null: derived
    if head_dim is None:  # hidden_size // heads, as each class derives it (a remainder is legal)
        if width < heads:
            raise c.error("num_attention_heads", f"hidden_size ({width}) is smaller than "
                                                 f"num_attention_heads ({heads}): head_dim, "
                                                 "which the file leaves out, would be 0")
        head_dim = width // heads
    return heads, kv, head_dim


def _multipliers(c: Keys) -> dict:
    return {"embedding": c.number("embedding_multiplier"),
            "attention": c.number("attention_multiplier"),
            "residual": c.number("residual_multiplier"), "logits": c.number("logits_scaling")}


def _check_types(c: Keys, types, n: int, allowed=_LAYER_TYPES,
                 why: str = "archscope reads no other") -> None:
    """`layer_types`: n strings, each one of `allowed` (full_attention or sliding_attention
    unless a family names its own)."""
    if not isinstance(types, list):
        raise c.error("layer_types", f"expected a list of {n} strings (num_hidden_layers), "
                                     f"each {' or '.join(allowed)}, {what(types)}")
    if len(types) != n:
        entries = "1 entry" if len(types) == 1 else f"{len(types)} entries"
        raise c.error("layer_types", f"has {entries}, but num_hidden_layers is {n}")
    for i, t in enumerate(types):
        if not isinstance(t, str) or t not in allowed:
            raise c.error(f"layer_types[{i}]", f"expected {' or '.join(allowed)} ({why}), "
                                               f"{what(t)}")


def _windows(c: Keys, out: dict) -> dict:
    """Qwen2/Qwen3's sliding window on the layers `layer_types` (or max_window_layers) marks."""
    n = out["n_layers"]
    # read (and so checked, as transformers checks them) whether or not they are used
    window, first = c.size("sliding_window", null=True), c.size("max_window_layers", least=0)
    window = window if c.flag("use_sliding_window") else None
    types = c.get("layer_types", None)
    if types is None:  # transformers' rule when layer_types is absent
        types = ["sliding_attention" if window is not None and i >= first else "full_attention"
                 for i in range(n)]
    _check_types(c, types, n)
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention" and window is not None]
    if len(sliding) == n:
        return _patch(out, attention={"window": window})
    if sliding:
        out["layers"] = [{"select": _select(sliding), "attention": {"window": window}}]
    return out


def _moe(c: Keys, experts: str = "num_local_experts") -> dict:  # softmax, top-k, renormalised
    n, k = c.size(experts), c.size("num_experts_per_tok")
    if k > n:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed {experts} ({n})")
    return {"kind": "moe", "activation": _act(c), "n_experts": n, "top_k": k,
            "d_expert": c.size("intermediate_size"), "router": {"normalize": True}}


def mtp_layers(c: Keys) -> int:
    """num_nextn_predict_layers (transformers 5 also reads it as num_mtp_layers): the MTP
    modules the checkpoint ships, which the model class does not build."""
    return c.size(c.alias("num_nextn_predict_layers", "num_mtp_layers"), least=0)


PARTIAL = "partial_rotary_factor"


def class_default(c: Keys, key: str, value):
    """A key a config class defaults in its __post_init__ (no dataclass field, so the class
    default lookup cannot see it): noted as defaulted here, and returned."""
    c.defaulted.setdefault(key, Defaulted(key, value, c.where))
    return value


def rotary_fraction(c: Keys, default: float) -> float:
    """partial_rotary_factor from rope_parameters (where transformers 5 saves it), the older
    rope_scaling, or the top level; else the family class's `default` (GLM-4.5 0.5,
    Qwen3-Next 0.25)."""
    for section in ("rope_parameters", "rope_scaling"):
        params = c.mapping(section)
        if params.get(PARTIAL) is not None:
            return c.number(f"{section}.{PARTIAL}", value=params[PARTIAL])
    if c.raw.get(PARTIAL) is not None:
        return c.number(PARTIAL)
    return class_default(c, PARTIAL, default)


def two_matrix_ffn(c: Keys, d_ff: int, bias: bool, key: str = "hidden_act") -> dict:
    """A non-gated MLP, up_proj (fc1, c_fc) then down_proj, from activation `key`: kind relu2
    for transformers' relu2 (the squared ReLU defines that kind), else kind mlp."""
    act = c.text(key, ("relu2", *_ACT), noun="activation")
    if act == "relu2":
        return {"kind": "relu2", "d_ff": d_ff, "bias": bias}
    return {"kind": "mlp", "d_ff": d_ff, "activation": _ACT[act], "bias": bias}


def read_text_config(c: Keys, sub: Keys, read) -> dict:
    """A multimodal wrapper's text model: `read(sub)`, `sub` being `c`'s text_config, with its
    errors and the keys it took from transformers' defaults named as the file nests them
    (text_config.<key>)."""
    try:
        out = read(sub)
    except SpecError as err:
        raise SpecError(err.detail, where=err.where, key=f"text_config.{err.key}") from None
    for key, note in sub.defaulted.items():
        c.defaulted.setdefault(f"text_config.{key}",
                               Defaulted(f"text_config.{key}", note.value, note.where))
    return out


def check_one_tie(c: Keys, out: dict) -> None:
    """A wrapper that saves tie_word_embeddings beside its text model's: the two must agree."""
    if "tie_word_embeddings" in c.raw and c.flag("tie_word_embeddings") != out["tie_embeddings"]:
        raise c.error("tie_word_embeddings", "disagrees with text_config.tie_word_embeddings "
                                             f"({str(out['tie_embeddings']).lower()}): which "
                                             "one ties the text model is ambiguous")
