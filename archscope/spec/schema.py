"""The model spec: frozen dataclasses whose field names are the YAML keys (DESIGN.md section 2).

Only facts are stored; anything derived (group size, MLA q/k head dim, expansion ratio, the
per-layer plan) is a property. Each class checks its own consistency in `validate`, raising
SpecError with the key at fault; `fields.from_mapping` adds the dotted prefix and file name.

This module holds the whole model (ModelSpec); the per-layer overrides and plan are in
`layers`, the components (norm, FFN, multipliers, LM head; position and router re-exported) in
`components`, attention in `attention`, the state mixers in `mamba2` and `gated_deltanet`;
all are re-exported here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

from archscope.errors import SpecError, quote
from archscope.spec.checks import positive, require
from archscope.spec.attention import (AttentionKind, AttentionSpec, IndexerSpec, QKNorm,
                                      check_shared_indexers)
from archscope.spec.components import (Activation, FFNKind, FFNSpec, HeadSpec, Multipliers,
                                       NormKind, NormPosition, NormSpec, PositionKind,
                                       PositionSpec, RouterMethod, RouterScoring, RouterSpec,
                                       RouterWeights, ScalingKind, ScalingSpec)
from archscope.spec.gated_deltanet import GatedDeltaNetSpec
from archscope.spec.layers import LayerOverride, LayerPlan
from archscope.spec.limits import LAYER_PICKS_MAX
from archscope.spec.limits import WHERE as LIMITS
from archscope.spec.mamba2 import Mamba2Spec
from archscope.spec.mixers import ATTENTION, HYBRID, NONE, STATE_KINDS, StateMixerSpec
from archscope.spec.shared_blocks import SharedBlockSpec
from archscope.spec.weight_formats import ActiveConvention, check_format

__all__ = ["ModelSpec", "LayerPlan", "LayerOverride", "Multipliers", "HeadSpec",
           "NormSpec", "ScalingSpec", "PositionSpec", "AttentionSpec", "IndexerSpec", "RouterSpec",
           "FFNSpec", "NormKind", "NormPosition", "QKNorm", "PositionKind", "ScalingKind", "AttentionKind",
           "FFNKind", "Activation", "RouterMethod", "RouterScoring", "RouterWeights",
           "Mamba2Spec", "GatedDeltaNetSpec", "StateMixerSpec"]


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
    # the state mixer (Mamba-2, Gated DeltaNet) of a hybrid: every layer's mixer unless a
    # `layers` override says `mixer: attention` (or `none`); null: every layer attends
    mixer: StateMixerSpec | None = None
    tie_embeddings: bool = False
    layers: tuple[LayerOverride, ...] = ()
    multipliers: Multipliers | None = None
    head: HeadSpec | None = None  # the LM head's bias and logit soft cap (null: neither)
    # multi-token-prediction modules the checkpoint ships (HF num_nextn_predict_layers;
    # DeepSeek-V3, GLM-4.5): each one decoder layer like the last + eh_proj + three norms,
    # sharing the embedding and lm_head. Neither transformers' model nor archscope's runs them,
    # so they are counted apart (params.mtp), never in the total.
    mtp_layers: int = 0
    # the model's attention and FFN as blocks stored once and run at several layers (Zamba 2's
    # shared transformer; spec/shared_blocks.py); null: none
    shared: SharedBlockSpec | None = None
    # the released checkpoint's weight format (spec/weight_formats.py; a config.json's
    # quantization_config): what show and fit price the weights in unless told otherwise;
    # null: none stated, priced in bf16. Not part of the network.
    weight_format: str | None = None
    # how the model card counts its active parameters (estimate/params.py names each); null:
    # the card states none, or none of these matches it
    active_convention: ActiveConvention | None = None
    extends: str | None = None  # kept for display; already applied by the loader

    def validate(self) -> None:
        positive(self, "vocab_size", "d_model", "n_layers", "max_seq_len")
        check_format(self.weight_format)
        require(self.mtp_layers >= 0, "mtp_layers", f"must be 0 or more, got {self.mtp_layers}")
        picks = 0  # the plan's work: bounded before it is built
        for k, override in enumerate(self.layers):
            try:
                picks += len(override.indices(self.n_layers))
            except SpecError as err:
                raise SpecError(err.detail, key=f"layers[{k}].select") from None
            require(picks <= LAYER_PICKS_MAX, "layers", f"the overrides pick more than "
                    f"{LAYER_PICKS_MAX:,} layers in all, beyond the limit ({LIMITS})")
        checked: set[int] = set()  # the plan shares attention specs: each checked once, at
        # its first layer (the check reads the spec, not the index); without overrides every
        # layer holds the model's own parts, so the first layer is all there is to check
        for layer in (self.plan if self.layers else self.plan[:1]):
            if layer.position.kind != self.position.kind:
                raise SpecError(f"layer {layer.index}'s position kind {layer.position.kind!r} "
                                f"differs from the model's {self.position.kind!r}: a layer may "
                                "change RoPE's theta and scaling only (a NoPE layer is "
                                "attention.rope: false)", key="layers")
            if layer.attention is not None and id(layer.attention) not in checked:
                checked.add(id(layer.attention))
                self._check_attention_layer(layer)
        if self.mixer is not None and not self.hybrid:
            raise SpecError(f"the state mixer {self.mixer.kind!r} is no layer's mixer (every "
                            "layer says mixer: attention or none): leave `mixer` out",
                            key="mixer")
        check_shared_indexers(self.plan if self.layers else self.plan[:1], self.attention)
        if self.mults.ffn_gate != 1:
            plain = next((layer for layer, _ in self.distinct_layers if layer.ffn is not None
                          and layer.ffn.kind not in ("swiglu", "geglu")), None)
            require(plain is None, "multipliers.ffn_gate", "scales a gated FFN's gate; layer "
                    f"{plain.index if plain else 0}'s FFN is {plain.ffn.kind if plain else ''!r}")
        if self.shared is not None:
            self.shared.check(self)
        if self.norm.position == "parallel":
            lone = next((layer for layer in self.plan if layer.attention is None
                         or layer.ffn is None), None)
            require(lone is None, "norm.position", "a parallel block runs attention and the "
                    f"FFN side by side; layer {lone.index if lone else 0} lacks one of them")

    def _check_attention_layer(self, layer: LayerPlan) -> None:
        w = layer.attention.window
        if w is not None and w > self.max_seq_len:
            key = "attention.window" if layer.attention.window == self.attention.window \
                else "layers"
            raise SpecError(f"window ({w}) is larger than the context max_seq_len "
                            f"({self.max_seq_len})", key=key)
        a = layer.attention
        if a.rope and self.position.kind == "rope" and a.kind == "gqa" and a.rotary_dim % 2:
            key = "attention.head_dim" if a.head_dim == self.attention.head_dim else "layers"
            raise SpecError(f"RoPE rotates pairs of dims, so head_dim must be even, got "
                            f"{a.head_dim}", key=key)  # torch's rotation fails at run time
        if layer.attention.kind == "mla" and self.position.kind not in (
                ("rope",) if layer.attention.indexer is not None else ("rope", "none")):
            raise SpecError("MLA's decoupled key is rotated (position.kind 'rope') or passes "
                            "unrotated (position.kind 'none', Kimi Linear's)", key="position.kind")
        if layer.attention.rotary_fraction != self.attention.rotary_fraction:
            raise SpecError(f"layer {layer.index} sets rotary_fraction "
                            f"{layer.attention.rotary_fraction}, the model "
                            f"{self.attention.rotary_fraction}: one RoPE table serves every "
                            "layer, so it is set model-wide only", key="layers")
        layer.position.check_pairs(layer.attention.rotary_dim // 2)  # longrope's factors
        if layer.attention.rotary_fraction and self.position.kind != "rope":
            raise SpecError(f"rotary_fraction rotates part of each head, but position.kind "
                            f"is {self.position.kind!r}: leave it out",
                            key="attention.rotary_fraction")
        if not layer.attention.rope and self.position.kind != "rope":
            key = "attention.rope" if not self.attention.rope else "layers"
            raise SpecError(f"rope: false (layer {layer.index}) turns RoPE off on a layer, "
                            f"but position.kind is {self.position.kind!r}: leave it out",
                            key=key)

    @cached_property
    def plan(self) -> tuple[LayerPlan, ...]:
        """The per-layer plan: the spec's attention and ffn with `layers` overrides applied."""
        from archscope.spec.fields import from_mapping, to_mapping

        n = self.n_layers
        if not self.layers:  # every layer holds the model's own parts (a sweep's variants)
            if self.mixer is None:
                return tuple(LayerPlan(i, self.attention, self.ffn, self.position)
                             for i in range(n))
            return tuple(LayerPlan(i, None, self.ffn, self.position, state=self.mixer)
                         for i in range(n))
        # per layer, the overrides (by index in `layers`) that patch its attention, ffn and
        # position, in order: layers patched alike share one chain, built once below
        attn: list[tuple[int, ...]] = [()] * n
        ffn: list[tuple[int, ...]] = [()] * n
        pos: list[tuple[int, ...]] = [()] * n
        notes: list[str | None] = [None] * n
        default = self.mixer.kind if self.mixer is not None else ATTENTION
        mixers = [default] * n
        no_ffn = [False] * n
        patched_attention: dict[int, str] = {}  # layer -> the override that patched it
        for k, override in enumerate(self.layers):
            key = f"layers[{k}]"
            try:
                indices = override.indices(n)
            except SpecError as err:
                raise SpecError(err.detail, key=f"{key}.select") from None
            if override.mixer is not None:
                self._check_mixer_word(override.mixer, f"{key}.mixer")
            for i in indices:
                if override.mixer is not None:
                    mixers[i] = override.mixer
                if override.attention is not None:
                    attn[i] += (k,)
                    patched_attention[i] = key
                if override.ffn == NONE:
                    no_ffn[i] = True
                elif override.ffn is not None:
                    no_ffn[i] = False
                    ffn[i] += (k,)
                if override.position is not None:
                    pos[i] += (k,)
                if override.note is not None:
                    notes[i] = override.note
        for i, key in patched_attention.items():
            require(mixers[i] in (ATTENTION, HYBRID), key + ".attention",
                    f"patches the attention of layer {i}, whose mixer is {mixers[i]!r}")
        for i in range(n):  # an if, not require: no message built per layer
            if mixers[i] == NONE and no_ffn[i]:
                raise SpecError(f"layer {i} has neither a mixer nor an FFN", key="layers")
        by_chain: dict = {}
        by_value: dict = {}

        def build(cls, base, part: str, chain: tuple[int, ...]):
            """`base` with the overrides in `chain` patched over it, in order; equal patched
            mappings give one object."""
            if (part, chain) not in by_chain:
                patched = to_mapping(base)
                for k in chain:
                    patched = _patch(patched, getattr(self.layers[k], part))
                # keys by repr: a hostile override may mix str with int/None keys
                # (from_mapping then names the unknown key), which do not sort together
                ident = (cls, repr(sorted(patched.items(), key=lambda item: repr(item[0]))))
                if ident not in by_value:
                    by_value[ident] = from_mapping(cls, patched, f"layers.{part}")
                by_chain[part, chain] = by_value[ident]
            return by_chain[part, chain]

        plan = []
        for i, mixer, a, f, p, without_ffn, note in zip(range(n), mixers, attn, ffn, pos, no_ffn,
                                                         notes):
            attention = layer_ffn = state = None  # an unpatched part: the model's own object
            if mixer in (ATTENTION, HYBRID):
                attention = build(AttentionSpec, self.attention, "attention", a) if a \
                    else self.attention
            if mixer not in (ATTENTION, NONE):  # the state kind, or hybrid: both
                state = self.mixer
            if not without_ffn:
                layer_ffn = build(FFNSpec, self.ffn, "ffn", f) if f else self.ffn
            position = build(PositionSpec, self.position, "position", p) if p else self.position
            plan.append(LayerPlan(i, attention, layer_ffn, position, note, state))
        return tuple(plan)

    @cached_property
    def distinct_layers(self) -> tuple[tuple[LayerPlan, int], ...]:
        """The plan's layers that differ in their parts (mixer and FFN), each with how many
        layers are like it, in plan order: sums over layers become sums over these. Cached:
        every estimate asks, and comparing frozen parts layer by layer is not free."""
        if not self.layers:  # no overrides: every layer holds the model's own parts
            return ((self.plan[0], self.n_layers),)
        by_object: dict = {}  # the plan shares one object per distinct part: group by identity
        for layer in self.plan:
            ident = (id(layer.attention), id(layer.state), id(layer.ffn))
            if ident in by_object:
                by_object[ident][1] += 1
            else:
                by_object[ident] = [layer, 1]
        counts: dict = {}  # then merge equal parts built apart (hashing only these few)
        for layer, n in by_object.values():
            key = (layer.attention, layer.state, layer.ffn)
            if key in counts:
                counts[key][1] += n
            else:
                counts[key] = [layer, n]
        return tuple((layer, n) for layer, n in counts.values())

    def _check_mixer_word(self, word: str, key: str) -> None:
        allowed = [ATTENTION, NONE] + ([self.mixer.kind, HYBRID] if self.mixer is not None
                                       else [])
        if word not in allowed:
            hint = ("" if self.mixer is not None or word not in STATE_KINDS else
                    f" (a {word} layer needs the model's `mixer:` spec)")
            raise SpecError(f"expected one of {', '.join(allowed)}, got {quote(word)}{hint}",
                            key=key)

    # Derived quantities: properties, never stored (the two the estimators ask on every call
    # are cached with the plan they read).
    @cached_property
    def hybrid(self) -> bool:
        """Some layer's mixer is a state mixer."""
        return any(layer.state is not None for layer, _ in self.distinct_layers)

    @cached_property
    def moe(self) -> bool:
        return any(layer.is_moe for layer, _ in self.distinct_layers)

    @property
    def mults(self) -> Multipliers:
        return self.multipliers or Multipliers()

    @property
    def lm_head(self) -> HeadSpec:
        return self.head or HeadSpec()

    def replace(self, **changes) -> "ModelSpec":
        """A what-if: the same spec with top-level fields changed, validated again."""
        from archscope.spec.fields import from_mapping, to_mapping

        return from_mapping(ModelSpec, to_mapping(dataclasses.replace(self, **changes)))


def _patch(base: dict, override: dict) -> dict:
    if "kind" in override and override["kind"] != base.get("kind"):
        return dict(override)
    return {**base, **override}
