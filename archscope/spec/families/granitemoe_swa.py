"""GraniteMoeSWA (transformers' `granitemoe_swa`, IBM's granite-swash): GraniteMoeShared + an
attention sink per query head on every layer (`self_attn.sinks`, an extra softmax logit: the
spec's attention.sinks) + a sliding window on the layers `layer_types` marks (absent: every
layer but each fourth, i % 4 == 0, slides) + a RoPE base per layer (`layer_rope_theta`, 0: the
layer does not rotate, NoPE; absent: rope_parameters' theta everywhere). The softmax scale is
attention_multiplier, as in Granite."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.granitemoeshared import GRANITEMOESHARED
from archscope.spec.families.granitemoeshared import read as read_shared
from archscope.spec.families.granitemoeshared import write as write_shared
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _check_types, _patch, _select
from archscope.spec.schema import ModelSpec


def _thetas(c: Keys, n: int, theta: float) -> list[float]:
    value = c.raw.get("layer_rope_theta")
    if value is None:
        return [theta] * n
    if not isinstance(value, list) or len(value) != n:
        raise c.error("layer_rope_theta", f"expected a list of {n} RoPE bases "
                                          f"(num_hidden_layers; 0: no RoPE), {what(value)}")
    return [c.number(f"layer_rope_theta[{i}]", value=t, positive=False) if t != 0 else 0
            for i, t in enumerate(value)]


def _negative(c: Keys, thetas: list[float]) -> None:
    for i, t in enumerate(thetas):
        if t < 0:
            raise c.error(f"layer_rope_theta[{i}]", f"must be 0 (no RoPE) or positive, {what(t)}")


def read(c: Keys) -> dict:
    out = _patch(read_shared(c), attention={"sinks": True})
    n = out["n_layers"]
    window = c.size("sliding_window", null=True)
    types = c.get("layer_types", None)
    if types is None:  # GraniteMoeSWAConfig's rule
        types = ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(n)]
    _check_types(c, types, n)
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    if sliding and window is None:
        raise c.error("sliding_window", f"is null, but layer_types marks layer {sliding[0]} "
                                        "sliding_attention")
    thetas = _thetas(c, n, out["position"]["theta"])
    _negative(c, thetas)
    layers = []
    if len(sliding) == n:
        out = _patch(out, attention={"window": window})
    elif sliding:
        layers.append({"select": _select(sliding), "attention": {"window": window}})
    nope = [i for i, t in enumerate(thetas) if t == 0]
    if nope:
        layers.append({"select": _select(nope), "attention": {"rope": False}})
    for theta in dict.fromkeys(t for t in thetas if t and t != out["position"]["theta"]):
        layers.append({"select": _select([i for i, t in enumerate(thetas) if t == theta]),
                       "position": {"theta": theta}})
    return {**out, "layers": layers} if layers else out


def write(s: ModelSpec) -> dict:
    """GraniteMoeShared's keys + the windowed layers (layer_types, one sliding_window) and the
    RoPE base of each layer (0 where it does not rotate); sinks are the class's, on every
    layer (the read-back names a spec without them)."""
    windows = {layer.window for layer in s.plan if layer.window}
    if len(windows) > 1:
        raise SpecError(f"transformers' GraniteMoeSWA has one sliding_window; the layers use "
                        f"{sorted(windows)}", key="layers")
    return {**write_shared(s), "sliding_window": next(iter(windows), None),
            "layer_types": [layer.layer_type for layer in s.plan],
            "layer_rope_theta": [layer.position.theta if layer.attention.rope else 0
                                 for layer in s.plan]}


GRANITEMOE_SWA = GRANITEMOESHARED.but(
    "granitemoe_swa", "GraniteMoeSWAForCausalLM", read=read, write=write,
    exports=lambda s: s.multipliers is not None and any(
        layer.attention and layer.attention.sinks for layer in s.plan),
    ffns=("moe",),
    weights=GRANITEMOESHARED.weights + rules(("model.layers.{i}.self_attn.sinks",
                                              "layers.{i}.self_attn.sinks")),
    spec_keys=GRANITEMOESHARED.key_table(**{"attention.sinks": "layer_types",
                                            "attention.rope": "layer_rope_theta",
                                            "layers": "layer_types"}),
    key_fields=GRANITEMOESHARED.key_fields, names=("granite",),
    doc="GraniteMoeShared + attention sinks + sliding layers + a RoPE base per layer")
FAMILIES = (GRANITEMOE_SWA,)
