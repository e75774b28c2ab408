"""A spec as the network it builds: every key that shapes it, per layer, with defaults resolved.

Two specs can spell the same network differently (an omitted default, a window set at the top
level or in `layers`); comparing their resolved forms compares networks. Used where a spec is
checked against another: HF export (does the chosen class build the same model?) and checkpoint
loading (does the folder's config.json agree with the preset given?).
"""

from __future__ import annotations

from archscope.spec.fields import to_mapping
from archscope.spec.schema import ModelSpec

_NOT_NETWORK = ("name", "source", "extends", "weight_format", "active_convention", "layers",
                "attention", "ffn")
# (kind, activation) -> the kind naming the same network: a gated MLP with GELU-tanh is GeGLU
# (an HF Llama-type config with hidden_act gelu_pytorch_tanh reads back as that swiglu).
_SAME_NETWORK = {("swiglu", "gelu_tanh"): "geglu"}


def resolved(spec: ModelSpec) -> dict[tuple[str, int | None], object]:
    """{(dotted key, layer index or None for model-wide keys): value}."""
    top = {k: v for k, v in to_mapping(spec).items() if k not in _NOT_NETWORK}
    top["norm"]["bias"] = spec.norm.has_bias
    m = spec.mults
    # the softmax scale a layer's attention resolves to (none when no layer attends: the
    # top-level attention then builds nothing, a pure Mamba stack's)
    attends = any(layer.attention is not None for layer, _ in spec.distinct_layers)
    top["multipliers"] = {**to_mapping(m), "attention": m.attention or (
        spec.attention.qk_head_dim ** -0.5 if attends else None)}
    if spec.shared is not None:  # shared blocks run the model's attention and FFN themselves
        top["shared_attention"], top["shared_ffn"] = to_mapping(spec.attention), \
            to_mapping(spec.ffn)
    out = {(key, None): value for key, value in _flat(top).items()}
    for layer in spec.plan:
        a, f = layer.attention, layer.ffn
        # a hybrid's layer lacks a part (None) or has the state mixer (model-wide: its kind)
        parts = {"attention": a and {**to_mapping(a), "n_kv_heads": a.kv_heads,
                                     "out_bias": a.has_out_bias}, "ffn": f and to_mapping(f),
                 "position": to_mapping(layer.position), "mixer": layer.mixer and layer.mixer.kind,
                 "state": layer.state and layer.state.kind}  # a hybrid layer: attention too
        if f is not None:
            parts["ffn"]["kind"] = _SAME_NETWORK.get((f.kind, f.activation), f.kind)
        if f is not None and f.kind == "moe":
            router = to_mapping(f.routing)
            if router["method"] == "greedy":  # the groups mean nothing then
                router = {k: v for k, v in router.items() if k not in ("n_group", "topk_group")}
            parts["ffn"].update(n_shared_experts=f.shared_experts, router=router)
        out.update({(key, layer.index): value for key, value in _flat(parts).items()})
    return out


def differences(ours: ModelSpec, theirs: ModelSpec):
    """(key, layer, our value, their value) for every resolved key on which the two differ."""
    a, b = resolved(ours), resolved(theirs)
    for key, layer in dict.fromkeys([*a, *b]):
        if a.get((key, layer)) != b.get((key, layer)):
            yield key, layer, a.get((key, layer)), b.get((key, layer))


def _flat(mapping: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out
