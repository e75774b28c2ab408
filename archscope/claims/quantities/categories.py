"""Categorical quantities for claims: norms, activations, attention and position schemes,
FFN type, tied embeddings. Each answers a `Category` whose parts a stated claim is compared to.
"""

from __future__ import annotations

from archscope.kinds import ffn_kind
from archscope.claims.quantities.registry import Category, attn_of, quantity


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
    return _bool(any(e.attention.bias or e.attention.has_out_bias for e in spec.plan
                      if e.attention))


@quantity("ffn_bias", "bool")
def ffn_bias(spec):
    """FFN biases."""
    return _bool(any(e.ffn.bias for e in spec.plan if e.ffn))


@quantity("activation", "category")
def activation(spec):
    """The FFN activation; gelu_tanh also answers to "gelu"."""
    acts = dict.fromkeys(e.ffn.activation for e in spec.plan if e.ffn)
    parts = set(acts) | {"gelu" for a in acts if a.startswith("gelu")}
    return Category("+".join(acts), frozenset(parts))


def _variants(spec) -> list[str]:
    return list(dict.fromkeys(e.attention.variant for e in spec.plan if e.attention))


def _windowed(spec) -> bool:
    return any(e.window for e in spec.plan)


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
    attn = attn_of(spec)
    text = f"{attn.n_heads}/{attn.kv_heads}"
    return Category.of(text)


@quantity("position_scheme", "category")
def position_scheme(spec):
    """Positional encoding with its scaling, plus SWA when windowed: the documents'
    "Pos Encoding" column ("RoPE+YaRN", "RoPE+SWA", "Learned")."""
    p = spec.position
    parts = [{"rope": "RoPE", "learned": "learned", "none": "none"}[p.kind]]
    if p.kind == "rope" and p.scaling:
        parts.append({"yarn": "YaRN", "llama3": "llama3", "linear": "linear",
                      "longrope": "LongRoPE"}[p.scaling.kind])
    if _windowed(spec):
        parts.append("SWA")
    return Category.of("+".join(parts), *parts)


@quantity("ffn_type", "category")
def ffn_type(spec):
    """SwiGLU, MLP+activation ("GELU" FFN), or SwiGLU+MoE."""
    parts: list[str] = []
    for e in spec.plan:
        if e.ffn is not None:
            parts += ffn_kind(e.ffn.kind).claim_names(e.ffn)
    parts = list(dict.fromkeys(parts))
    cat = Category.of("+".join(parts), *parts)
    if any(p.startswith("gelu") for p in cat.parts):
        cat = Category(cat.text, cat.parts | {"gelu"})
    return cat
