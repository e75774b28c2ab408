"""A model's layers: the overrides a spec writes under `layers`, and the per-layer plan they
produce (ModelSpec.plan), which the builder and the estimators both read."""

from __future__ import annotations

from dataclasses import dataclass

from archscope.errors import SpecError, quote
from archscope.spec.attention import AttentionSpec
from archscope.spec.checks import require
from archscope.spec.components import FFNSpec, PositionSpec
from archscope.spec.mixers import NONE, StateMixerSpec


@dataclass(frozen=True)
class LayerOverride:
    """Per-layer changes. `select` picks layers: a list of indices or a slice like "1::2".

    A component override with `kind` replaces the component; without `kind` it patches fields.
    `mixer` picks the layers' mixer: `attention`, the model's state mixer kind, `hybrid` (both,
    side by side: Falcon-H1) or `none` (an MLP-only layer); `ffn: none` leaves the FFN out
    (Nemotron-H's mixer-only layers).
    """

    select: str | tuple[int, ...]
    mixer: str | None = None
    attention: dict | None = None
    ffn: dict | str | None = None
    # a patch of the model's `position` for these layers (Gemma 3: RoPE theta 10k on the
    # sliding layers, 1M and linear scaling on the global ones); same kind as the model's
    position: dict | None = None
    note: str | None = None  # what the spec cannot express (e.g. an unpublished band width)

    def validate(self) -> None:
        require(any(v is not None for v in (self.mixer, self.attention, self.ffn, self.position,
                                            self.note)),
                "select", "an override needs mixer, attention, ffn, position or note")
        require(not isinstance(self.ffn, str) or self.ffn == NONE, "ffn",
                f"a mapping patching the FFN, or 'none' for no FFN; got {quote(self.ffn)}")

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
            if bounds[0] is None:  # '' or ' ': no index at all
                raise SpecError(f"expected layer indices or a slice like '1::2', got "
                                f"{quote(self.select)}", key="select")
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
class LayerPlan:
    """What one decoder layer is: the builder and the estimators both read this.

    Its mixer is `attention` or `state` (a state mixer), both (a hybrid layer: Falcon-H1's,
    the two on the same input, summed) or neither (an MLP-only layer); `ffn` is None in a
    mixer-only layer (Nemotron-H). A layer has at least one of the two.
    """

    index: int
    attention: AttentionSpec | None
    ffn: FFNSpec | None
    position: PositionSpec  # the model's, unless `layers` patches it (Gemma 3's RoPE per type)
    note: str | None = None
    state: StateMixerSpec | None = None

    @property
    def mixer(self) -> AttentionSpec | StateMixerSpec | None:
        return self.attention or self.state

    @property
    def window(self) -> int | None:
        return self.attention.window if self.attention else None

    @property
    def layer_type(self) -> str:
        """transformers' `layer_types` name for this layer (config.json reads and writes it);
        'mlp' or 'moe' for a layer without a mixer (Nemotron-H's words)."""
        if self.state is not None:
            return "linear_attention" if self.attention is None else "hybrid"
        if self.attention is None:
            return "moe" if self.is_moe else "mlp"
        if self.attention.chunk:
            return "chunked_attention"
        return "sliding_attention" if self.attention.window else "full_attention"

    @property
    def is_moe(self) -> bool:
        return self.ffn is not None and self.ffn.kind == "moe"
