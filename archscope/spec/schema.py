"""The model spec: frozen dataclasses whose field names are the YAML keys (DESIGN.md section 2).

Only facts are stored; anything derived (group size, MLA q/k head dim, expansion ratio, the
per-layer plan) is a property. Each class checks its own consistency in `validate`, raising
SpecError with the key at fault; `fields.from_mapping` adds the dotted prefix and file name.

This module holds the whole model (ModelSpec), its per-layer overrides and plan, and Granite's
multipliers; the components (norm, position, router, FFN) are in `components`, attention in
`attention`; all are re-exported here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

from archscope.errors import SpecError, quote
from archscope.spec.checks import positive, require
from archscope.spec.attention import AttentionKind, AttentionSpec, QKNorm
from archscope.spec.components import (Activation, FFNKind, FFNSpec, NormKind, NormPosition,
                                       NormSpec, PositionKind, PositionSpec, RouterMethod,
                                       RouterScoring, RouterSpec, RouterWeights, ScalingKind,
                                       ScalingSpec)
from archscope.spec.limits import LAYER_PICKS_MAX
from archscope.spec.limits import WHERE as LIMITS

__all__ = ["ModelSpec", "LayerPlan", "LayerOverride", "Multipliers",
           "NormSpec", "ScalingSpec", "PositionSpec", "AttentionSpec", "RouterSpec", "FFNSpec",
           "NormKind", "NormPosition", "QKNorm", "PositionKind", "ScalingKind", "AttentionKind",
           "FFNKind", "Activation", "RouterMethod", "RouterScoring", "RouterWeights"]


@dataclass(frozen=True)
class LayerOverride:
    """Per-layer changes. `select` picks layers: a list of indices or a slice like "1::2".

    A component override with `kind` replaces the component; without `kind` it patches fields.
    """

    select: str | tuple[int, ...]
    attention: dict | None = None
    ffn: dict | None = None
    # a patch of the model's `position` for these layers (Gemma 3: RoPE theta 10k on the
    # sliding layers, 1M and linear scaling on the global ones); same kind as the model's
    position: dict | None = None
    note: str | None = None  # what the spec cannot express (e.g. an unpublished band width)

    def validate(self) -> None:
        require(any(v is not None for v in (self.attention, self.ffn, self.position, self.note)),
                "select", "an override needs attention, ffn, position or note")

    def indices(self, n_layers: int) -> list[int]:
        if isinstance(self.select, tuple):
            return self._checked(list(self.select), n_layers)
        parts = self.select.split(":")
        require(len(parts) <= 3, "select", "expected a slice like '0:1' or '1::2'")
        try:
            bounds = [int(p) if p.strip() else None for p in parts]
        except ValueError:
            raise SpecError(f"expected layer indices or a slice like '1::2', got "
                            f"{quote(self.select)}", key="select") from None
        if len(bounds) == 1:
            return self._checked(bounds, n_layers)
        require(len(bounds) < 3 or bounds[2] != 0, "select", "a slice step cannot be 0")
        return self._checked(list(range(n_layers))[slice(*bounds)], n_layers)

    def _checked(self, indices: list[int], n_layers: int) -> list[int]:
        for i in indices:
            require(0 <= i < n_layers, "select", f"layer {i} is outside 0..{n_layers - 1}")
        shown = quote(list(self.select) if isinstance(self.select, tuple) else self.select)
        require(bool(indices), "select", f"{shown} selects no layer (layers are 0..{n_layers - 1})")
        return indices


@dataclass(frozen=True)
class Multipliers:
    """Granite's scale factors (HF: embedding_multiplier, attention_multiplier,
    residual_multiplier, logits_scaling)."""

    embedding: float = 1.0  # token embeddings are multiplied by it
    attention: float | None = None  # softmax scale; null means 1/sqrt(q/k head dim)
    residual: float = 1.0  # each sublayer's output is multiplied by it before the residual add
    logits: float = 1.0  # logits are divided by it (HF's logits_scaling)

    def validate(self) -> None:
        positive(self, "embedding", "attention", "residual", "logits")


@dataclass(frozen=True)
class LayerPlan:
    """What one decoder layer is: the builder and the estimators both read this."""

    index: int
    attention: AttentionSpec
    ffn: FFNSpec
    position: PositionSpec  # the model's, unless `layers` patches it (Gemma 3's RoPE per type)
    note: str | None = None

    @property
    def window(self) -> int | None:
        return self.attention.window

    @property
    def layer_type(self) -> str:
        """transformers' `layer_types` name for this layer (config.json reads and writes it)."""
        if self.attention.chunk:
            return "chunked_attention"
        return "sliding_attention" if self.attention.window else "full_attention"

    @property
    def is_moe(self) -> bool:
        return self.ffn.kind == "moe"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    source: str
    vocab_size: int
    d_model: int
    n_layers: int
    max_seq_len: int
    norm: NormSpec
    position: PositionSpec
    attention: AttentionSpec
    ffn: FFNSpec
    tie_embeddings: bool = False
    layers: tuple[LayerOverride, ...] = ()
    multipliers: Multipliers | None = None
    # multi-token-prediction modules the checkpoint ships (HF num_nextn_predict_layers;
    # DeepSeek-V3, GLM-4.5): each one decoder layer like the last + eh_proj + three norms,
    # sharing the embedding and lm_head. Neither transformers' model nor archscope's runs them,
    # so they are counted apart (params.mtp), never in the total.
    mtp_layers: int = 0
    extends: str | None = None  # kept for display; already applied by the loader

    def validate(self) -> None:
        positive(self, "vocab_size", "d_model", "n_layers", "max_seq_len")
        require(self.mtp_layers >= 0, "mtp_layers", f"must be 0 or more, got {self.mtp_layers}")
        picks = 0  # the plan's work: bounded before it is built
        for k, override in enumerate(self.layers):
            try:
                picks += len(override.indices(self.n_layers))
            except SpecError as err:
                raise SpecError(err.detail, key=f"layers[{k}].select") from None
            require(picks <= LAYER_PICKS_MAX, "layers", f"the overrides pick more than "
                    f"{LAYER_PICKS_MAX:,} layers in all, beyond the limit ({LIMITS})")
        for layer in self.plan:
            w = layer.attention.window
            if w is not None and w > self.max_seq_len:
                key = "attention.window" if layer.attention.window == self.attention.window \
                    else "layers"
                raise SpecError(f"window ({w}) is larger than the context max_seq_len "
                                f"({self.max_seq_len})", key=key)
            if layer.attention.kind == "mla" and self.position.kind != "rope":
                raise SpecError("MLA's decoupled key needs position.kind 'rope'", key="position.kind")
            if layer.attention.rotary_fraction != self.attention.rotary_fraction:
                raise SpecError(f"layer {layer.index} sets rotary_fraction "
                                f"{layer.attention.rotary_fraction}, the model "
                                f"{self.attention.rotary_fraction}: one RoPE table serves every "
                                "layer, so it is set model-wide only", key="layers")
            if layer.attention.rotary_fraction and self.position.kind != "rope":
                raise SpecError(f"rotary_fraction rotates part of each head, but position.kind "
                                f"is {self.position.kind!r}: leave it out",
                                key="attention.rotary_fraction")
            if layer.attention.rotary_fraction and layer.position.interleaved:
                raise SpecError("rotary_fraction (half-split pairs within the rotated dims, "
                                "GLM-4.5) with position.interleaved (adjacent pairs, Llama 4): "
                                "no model does both and archscope builds neither combination",
                                key="attention.rotary_fraction")
            if layer.position.kind != self.position.kind:
                raise SpecError(f"layer {layer.index}'s position kind {layer.position.kind!r} "
                                f"differs from the model's {self.position.kind!r}: a layer may "
                                "change RoPE's theta and scaling only (a NoPE layer is "
                                "attention.rope: false)", key="layers")
            if not layer.attention.rope and self.position.kind != "rope":
                key = "attention.rope" if not self.attention.rope else "layers"
                raise SpecError(f"rope: false (layer {layer.index}) turns RoPE off on a layer, "
                                f"but position.kind is {self.position.kind!r}: leave it out",
                                key=key)

    @cached_property
    def plan(self) -> tuple[LayerPlan, ...]:
        """The per-layer plan: the spec's attention and ffn with `layers` overrides applied."""
        from archscope.spec.fields import from_mapping, to_mapping

        attn = [None] * self.n_layers
        ffn = [None] * self.n_layers
        pos = [None] * self.n_layers
        notes: list[str | None] = [None] * self.n_layers
        for k, override in enumerate(self.layers):
            key = f"layers[{k}]"
            try:
                indices = override.indices(self.n_layers)
            except SpecError as err:
                raise SpecError(err.detail, key=f"{key}.select") from None
            for i in indices:
                if override.attention is not None:
                    attn[i] = _patch(attn[i] or to_mapping(self.attention), override.attention)
                if override.ffn is not None:
                    ffn[i] = _patch(ffn[i] or to_mapping(self.ffn), override.ffn)
                if override.position is not None:
                    pos[i] = _patch(pos[i] or to_mapping(self.position), override.position)
                if override.note is not None:
                    notes[i] = override.note
        cache: dict = {}

        def build(cls, patched, base, key):
            if patched is None:
                return base
            # keys by repr: a hostile override may mix str with int/None keys (from_mapping
            # then names the unknown key), which do not sort together
            ident = (cls, repr(sorted(patched.items(), key=lambda item: repr(item[0]))))
            if ident not in cache:
                cache[ident] = from_mapping(cls, patched, key)
            return cache[ident]

        return tuple(
            LayerPlan(i, build(AttentionSpec, attn[i], self.attention, "layers.attention"),
                      build(FFNSpec, ffn[i], self.ffn, "layers.ffn"),
                      build(PositionSpec, pos[i], self.position, "layers.position"), notes[i])
            for i in range(self.n_layers))

    # Derived quantities: properties, never stored.
    @property
    def moe(self) -> bool:
        return any(layer.is_moe for layer in self.plan)

    @property
    def mults(self) -> Multipliers:
        return self.multipliers or Multipliers()

    def replace(self, **changes) -> "ModelSpec":
        """A what-if: the same spec with top-level fields changed, validated again."""
        from archscope.spec.fields import from_mapping, to_mapping

        return from_mapping(ModelSpec, to_mapping(dataclasses.replace(self, **changes)))


def _patch(base: dict, override: dict) -> dict:
    if "kind" in override and override["kind"] != base.get("kind"):
        return dict(override)
    return {**base, **override}
