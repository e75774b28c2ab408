"""Components by `kind`: the builder asks each kind's entry (archscope.kinds) for its module and
never branches on names. An unknown kind is an error that lists the valid ones."""

from __future__ import annotations

from torch import nn

from archscope.kinds import attention_kind, ffn_kind, mixer_kind
from archscope.spec.schema import AttentionSpec, FFNSpec, LayerPlan, ModelSpec


def attention_module(spec: ModelSpec, attn: AttentionSpec) -> nn.Module:
    return attention_kind(attn.kind).factory()(spec, attn)


def mixer_module(spec: ModelSpec, layer: LayerPlan) -> nn.Module:
    """The layer's mixer: its attention, or its state mixer (the layer must have one); a hybrid
    layer's state mixer beside its attention is `state_module`."""
    if layer.attention is not None:
        return attention_module(spec, layer.attention)
    return state_module(spec, layer)


def state_module(spec: ModelSpec, layer: LayerPlan) -> nn.Module:
    kind = mixer_kind(layer.state.kind)  # a per_layer kind (lightning's decay) takes the index
    return kind.factory()(spec, layer.state, *((layer.index,) if kind.per_layer else ()))


def ffn_module(spec: ModelSpec, ffn: FFNSpec) -> nn.Module:
    return ffn_kind(ffn.kind).factory()(spec, ffn)
