"""The quantities a claim can name: name -> function(spec, **conditions) -> value, with a unit.

Every value is computed by the estimators (archscope.estimate) or read off the spec; nothing is
copied from a document. Numbers come in a base unit (`dimension`: params, bytes, FLOPs,
elements, count, ratio, percent, number); categorical answers are a `Category` whose `parts`
are compared (see `claims.py`). Conditions are keyword arguments; one without a default is
required (a byte count needs its dtype, a cache its seq_len).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

from archscope.errors import InputError
from archscope.spec.fields import did_you_mean
from archscope.spec.schema import AttentionSpec, ModelSpec


@dataclass(frozen=True)
class Category:
    """A categorical answer: `text` for people, `parts` (lower-case tokens) for comparing."""

    text: str
    parts: frozenset[str]

    @classmethod
    def of(cls, text: str, *parts: str) -> "Category":
        return cls(text, frozenset(p.lower() for p in (parts or (text,))))


@dataclass(frozen=True)
class Quantity:
    name: str
    fn: Callable
    dimension: str  # params, bytes, FLOPs, elements, count, ratio, percent, number, category, bool
    doc: str

    @property
    def conditions(self) -> dict[str, object]:
        """Accepted conditions -> default (inspect.Parameter.empty when required)."""
        params = list(inspect.signature(self.fn).parameters.values())[1:]
        # Leading-underscore parameters bind loop variables of registered lambdas.
        return {p.name: p.default for p in params if not p.name.startswith("_")}


QUANTITIES: dict[str, Quantity] = {}


def quantity(name: str, dimension: str, doc: str = ""):
    def register(fn):
        QUANTITIES[name] = Quantity(name, fn, dimension, doc or inspect.getdoc(fn) or "")
        return fn
    return register


def get_quantity(name: str) -> Quantity:
    if name not in QUANTITIES:
        raise InputError(f"unknown quantity {name!r}{did_you_mean(name, QUANTITIES)}; valid "
                         f"quantities: {', '.join(sorted(QUANTITIES))}")
    return QUANTITIES[name]


def _uniform(spec: ModelSpec, what: str, per_layer: Callable, layer: int | None):
    """`per_layer(plan_entry)` for `layer`, or the one value every layer shares."""
    if layer is not None:
        if not 0 <= layer < spec.n_layers:
            raise InputError(f"layer {layer} is outside 0..{spec.n_layers - 1}")
        return per_layer(spec.plan[layer])
    values = {per_layer(entry) for entry in spec.plan}
    if len(values) != 1:
        raise InputError(f"{spec.name}: {what} differs between layers; give the condition "
                         f"`layer: N`")
    return values.pop()


def _attn(spec: ModelSpec, layer: int | None = None) -> AttentionSpec:
    return _uniform(spec, "attention", lambda e: e.attention, layer)


def _gqa_only(attn: AttentionSpec, what: str) -> None:
    if attn.kind == "mla":
        raise InputError(f"{what} is not defined for MLA: use qk_head_dim, v_head_dim or "
                         "kv_lora_rank")


# --- shape --------------------------------------------------------------------------------

for _name, _doc in (("vocab_size", "Tokens in the vocabulary."),
                   ("d_model", "Hidden size (embedding dim)."),
                   ("n_layers", "Decoder layers."),
                   ("max_seq_len", "Context length (max_position_embeddings).")):
    quantity(_name, "count", _doc)(lambda spec, _n=_name: getattr(spec, _n))


@quantity("n_heads", "count")
def n_heads(spec, layer=None):
    """Query heads."""
    return _attn(spec, layer).n_heads


@quantity("n_kv_heads", "count")
def n_kv_heads(spec, layer=None):
    """Key/value heads (MLA: every head has its own decompressed K/V, so n_heads)."""
    return _attn(spec, layer).kv_heads


@quantity("head_dim", "count")
def head_dim(spec, layer=None):
    """Per-head dimension of a GQA/MHA/MQA layer."""
    attn = _attn(spec, layer)
    _gqa_only(attn, "head_dim")
    return attn.head_dim


@quantity("group_size", "ratio")
def group_size(spec, layer=None):
    """Query heads per KV head ("4:1"); 1 for MHA and MLA."""
    return _attn(spec, layer).group_size


@quantity("q_width", "count")
def q_width(spec, layer=None):
    """q_proj output width: n_heads x q/k head dim."""
    attn = _attn(spec, layer)
    return attn.n_heads * attn.qk_head_dim


@quantity("kv_width", "count")
def kv_width(spec, layer=None):
    """k_proj (or v_proj) output width: n_kv_heads x head_dim."""
    attn = _attn(spec, layer)
    _gqa_only(attn, "kv_width")
    return attn.n_kv_heads * attn.head_dim


for _name in ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
              "v_head_dim", "qk_head_dim"):
    quantity(_name, "count", f"MLA: {_name} (qk_head_dim also for GQA: head_dim).")(
        lambda spec, layer=None, _n=_name: getattr(_attn(spec, layer), _n))


@quantity("sliding_window", "count")
def sliding_window(spec, layer=None):
    """Keys a query reads in a sliding-window layer (0: no window)."""
    return _attn(spec, layer).window or 0


def _ffn(spec, layer):
    return _uniform(spec, "the FFN", lambda e: e.ffn, layer)


@quantity("d_ff", "count")
def d_ff(spec, layer=None):
    """Intermediate size of a dense FFN (MoE: the dense layer's, with `layer`; else d_expert)."""
    ffn = _ffn(spec, layer)
    return ffn.d_expert if ffn.kind == "moe" else ffn.d_ff


@quantity("expansion_ratio", "ratio")
def expansion_ratio(spec, layer=None):
    """d_ff / d_model (MoE layers: one expert's d_expert / d_model)."""
    return d_ff(spec, layer) / spec.d_model


for _name in ("n_experts", "top_k", "d_expert", "n_shared_experts"):
    quantity(_name, "count", f"MoE: {_name} (0 for a dense FFN).")(
        lambda spec, layer=None, _n=_name: getattr(_ffn(spec, layer), _n) or 0)


# --- positions ----------------------------------------------------------------------------

def _rope(spec):
    if spec.position.kind != "rope":
        raise InputError(f"{spec.name} has no RoPE (position.kind {spec.position.kind})")
    return spec.position


def _scaling(spec):
    scaling = _rope(spec).scaling
    if scaling is None:
        raise InputError(f"{spec.name} has no RoPE scaling")
    return scaling


@quantity("rope_theta", "number")
def rope_theta(spec):
    """RoPE base."""
    return _rope(spec).theta


@quantity("rope_scaling_factor", "number")
def rope_scaling_factor(spec):
    """RoPE scaling factor."""
    return _scaling(spec).factor


@quantity("rope_original_max_seq_len", "count")
def rope_original_max_seq_len(spec):
    """The context the RoPE scaling starts from."""
    return _scaling(spec).original_max_seq_len


@quantity("rope_low_freq_factor", "number")
def rope_low_freq_factor(spec):
    """Llama 3 scaling: low_freq_factor."""
    return _scaling(spec).low_freq_factor


@quantity("rope_high_freq_factor", "number")
def rope_high_freq_factor(spec):
    """Llama 3 scaling: high_freq_factor."""
    return _scaling(spec).high_freq_factor


@quantity("rope_low_freq_wavelen", "number")
def rope_low_freq_wavelen(spec):
    """Llama 3 scaling: wavelengths above original_max_seq_len / low_freq_factor are scaled."""
    s = _scaling(spec)
    return s.original_max_seq_len / s.low_freq_factor


@quantity("rope_high_freq_wavelen", "number")
def rope_high_freq_wavelen(spec):
    """Llama 3 scaling: wavelengths below original_max_seq_len / high_freq_factor are kept."""
    s = _scaling(spec)
    return s.original_max_seq_len / s.high_freq_factor


@quantity("rope_context_extension", "ratio")
def rope_context_extension(spec):
    """max_seq_len / the scaling's original_max_seq_len (how far the scaling stretches)."""
    return spec.max_seq_len / _scaling(spec).original_max_seq_len


def _rope_dim(spec):
    attn = spec.attention
    return attn.qk_rope_head_dim if attn.kind == "mla" else attn.head_dim


@quantity("rope_pairs", "count")
def rope_pairs(spec):
    """Rotated 2-D pairs per head: the rotary dims / 2."""
    _rope(spec)
    return _rope_dim(spec) // 2


@quantity("rope_inv_freq", "number")
def rope_inv_freq(spec, index):
    """theta_i = theta^(-2i/d) for pair i, before any scaling (RoFormer's formula)."""
    d = _rope_dim(spec)
    if not 0 <= index < d // 2:
        raise InputError(f"rope pair index {index} is outside 0..{d // 2 - 1}")
    return _rope(spec).theta ** (-2 * index / d)


# --- categories ---------------------------------------------------------------------------

def _bool(value: bool) -> Category:
    return Category.of("yes" if value else "no", "true" if value else "false")


@quantity("tie_embeddings", "bool")
def tie_embeddings(spec):
    """lm_head shares the embedding matrix."""
    return _bool(spec.tie_embeddings)


@quantity("norm_kind", "category")
def norm_kind(spec):
    """RMSNorm or LayerNorm."""
    return Category.of({"rmsnorm": "RMSNorm", "layernorm": "LayerNorm"}[spec.norm.kind],
                       spec.norm.kind)


@quantity("norm_position", "category")
def norm_position(spec):
    """pre (x + f(norm(x))) or post (norm(x + f(x)))."""
    return Category.of(spec.norm.position)


@quantity("norm_bias", "bool")
def norm_bias(spec):
    """The norms have an additive bias (beta)."""
    return _bool(spec.norm.has_bias)


@quantity("norm", "category")
def norm(spec):
    """Kind and position together, as in "LayerNorm (Post)"."""
    kind = norm_kind(spec)
    return Category(f"{kind.text} ({spec.norm.position})", kind.parts | {spec.norm.position})


@quantity("norm_eps", "number")
def norm_eps(spec):
    """The norms' epsilon."""
    return spec.norm.eps


@quantity("attention_bias", "bool")
def attention_bias(spec):
    """q/k/v or o_proj biases."""
    return _bool(any(e.attention.bias or e.attention.has_out_bias for e in spec.plan))


@quantity("ffn_bias", "bool")
def ffn_bias(spec):
    """FFN biases."""
    return _bool(any(e.ffn.bias for e in spec.plan))


@quantity("activation", "category")
def activation(spec):
    """The FFN activation; gelu_tanh also answers to "gelu"."""
    acts = dict.fromkeys(e.ffn.activation for e in spec.plan)
    parts = set(acts) | {"gelu" for a in acts if a.startswith("gelu")}
    return Category("+".join(acts), frozenset(parts))


def _variants(spec) -> list[str]:
    return list(dict.fromkeys(e.attention.variant for e in spec.plan))


def _windowed(spec) -> bool:
    return any(e.attention.window for e in spec.plan)


@quantity("attention_variant", "category")
def attention_variant(spec):
    """MHA, MQA, GQA or MLA (several joined by + when layers differ)."""
    v = _variants(spec)
    return Category.of("+".join(v), *v)


@quantity("attention_type", "category")
def attention_type(spec):
    """The variant, plus SWA when any layer has a sliding window (the documents' "GQA+SWA")."""
    parts = _variants(spec) + (["SWA"] if _windowed(spec) else [])
    return Category.of("+".join(parts), *parts)


@quantity("heads_q_kv", "category")
def heads_q_kv(spec):
    """Query / KV heads as the documents write them ("32/8")."""
    attn = _attn(spec)
    text = f"{attn.n_heads}/{attn.kv_heads}"
    return Category.of(text)


@quantity("position_scheme", "category")
def position_scheme(spec):
    """Positional encoding with its scaling, plus SWA when windowed: the documents'
    "Pos Encoding" column ("RoPE+YaRN", "RoPE+SWA", "Learned")."""
    p = spec.position
    parts = [{"rope": "RoPE", "learned": "learned", "none": "none"}[p.kind]]
    if p.kind == "rope" and p.scaling:
        parts.append({"yarn": "YaRN", "llama3": "llama3", "linear": "linear"}[p.scaling.kind])
    if _windowed(spec):
        parts.append("SWA")
    return Category.of("+".join(parts), *parts)


@quantity("ffn_type", "category")
def ffn_type(spec):
    """SwiGLU, MLP+activation ("GELU" FFN), or SwiGLU+MoE."""
    parts: list[str] = []
    for e in spec.plan:
        f = e.ffn
        parts += {"mlp": ["MLP", f.activation], "swiglu": ["SwiGLU"],
                  "moe": ["SwiGLU", "MoE"]}[f.kind]
    parts = list(dict.fromkeys(parts))
    cat = Category.of("+".join(parts), *parts)
    if any(p.startswith("gelu") for p in cat.parts):
        cat = Category(cat.text, cat.parts | {"gelu"})
    return cat


# Sizes (parameters, KV cache, memory, FLOPs) live beside this file; importing registers them.
from archscope.report import quantities_sizes  # noqa: E402,F401
