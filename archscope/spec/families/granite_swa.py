"""Granite SWA (transformers' `granite_swa`, GraniteSWAForCausalLM): Granite (multipliers) + a
sliding window on the layers `layer_types` marks (GraniteSWAConfig's default: every fourth
layer from the first is full, the others slide) + a learned sink logit per query head on every
layer (attention.sinks; transformers applies it as sigmoid(logsumexp(scores) - sink) on the
output, the same as one more softmax logit) + a RoPE theta per layer (layer_rope_theta; 0: the
layer does not rotate, NoPE; absent: rope_parameters' theta on every layer)."""

from __future__ import annotations

from archscope.spec.families._dense import layer_windows, typed_windows
from archscope.spec.families.base import rules
from archscope.spec.families.granite import GRANITE
from archscope.spec.families.granite import read as read_granite
from archscope.spec.families.granite import write as write_granite
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _patch, _select
from archscope.spec.schema import ModelSpec

_THETAS = "layer_rope_theta"


def _first_of_four_full(n: int, window: int | None) -> list[str]:  # GraniteSWAConfig's rule
    return ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(n)]


def _thetas(c: Keys, n: int, theta: float) -> list[float]:
    """Each layer's RoPE theta (0: NoPE): the first n entries of layer_rope_theta, as the
    model reads them, else the model's theta on every layer."""
    value = c.raw.get(_THETAS)
    if value is None:
        return [theta] * n
    if not isinstance(value, list) or len(value) < n:
        raise c.error(_THETAS, f"expected a list of at least {n} numbers (num_hidden_layers "
                               f"is {n}), {what(value)}")
    for i, t in enumerate(value[:n]):
        c.number(f"{_THETAS}[{i}]", value=t, positive=False)
        if t < 0:
            raise c.error(f"{_THETAS}[{i}]", f"a RoPE theta is positive (or 0: NoPE), {what(t)}")
    return list(value[:n])


def read(c: Keys) -> dict:
    out = layer_windows(c, _patch(read_granite(c), attention={"sinks": True}),
                        _first_of_four_full, "GraniteSWA")
    n, theta = out["n_layers"], out["position"]["theta"]
    thetas = _thetas(c, n, theta)
    nope = [i for i, t in enumerate(thetas) if t == 0]
    if len(nope) == n:
        out = _patch(out, attention={"rope": False})
    elif nope:
        out["layers"] = [*out.get("layers", []), {"select": _select(nope),
                                                  "attention": {"rope": False}}]
    for t in dict.fromkeys(t for t in thetas if t and t != theta):
        out["layers"] = [*out.get("layers", []),
                         {"select": _select([i for i, x in enumerate(thetas) if x == t]),
                          "position": {"theta": t}}]
    return out


def write(s: ModelSpec) -> dict:
    """GraniteSWAConfig's keys: Granite's, the windows' layer_types and each layer's theta (the
    rest of a layer's RoPE is the model's: the read-back names a spec that differs)."""
    return {**write_granite(s), **typed_windows(s),
            _THETAS: [layer.position.theta if layer.attention.rope else 0 for layer in s.plan]}


GRANITE_SWA = GRANITE.but(
    "granite_swa", "GraniteSWAForCausalLM", read=read, write=write,
    exports=lambda s: s.moe is False and any(layer.attention is not None and layer.attention.sinks
                                             for layer in s.plan),
    weights=GRANITE.weights + rules(("model.layers.{i}.self_attn.sinks",
                                     "layers.{i}.self_attn.sinks")),
    spec_keys=GRANITE.key_table(**{"attention.rope": _THETAS}), names=("granite",),
    doc="Granite + windows + attention sinks + a RoPE theta per layer")
FAMILIES = (GRANITE_SWA,)
