"""The model spec: frozen dataclasses whose field names are the YAML keys (DESIGN.md section 2).

Only facts are stored; anything derived (group size, MLA q/k head dim, expansion ratio, the
per-layer plan) is a property. Each class checks its own consistency in `validate`, raising
SpecError with the key at fault; `fields.from_mapping` adds the dotted prefix and file name.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from archscope.errors import SpecError

NormKind = Literal["layernorm", "rmsnorm"]
PositionKind = Literal["learned", "rope", "none"]
ScalingKind = Literal["llama3", "yarn", "linear"]
AttentionKind = Literal["gqa", "mla"]
FFNKind = Literal["mlp", "swiglu", "moe"]
Activation = Literal["gelu_tanh", "gelu", "silu", "relu"]
RouterMethod = Literal["greedy", "group_limited_greedy"]


def _require(cond: bool, key: str, message: str) -> None:
    if not cond:
        raise SpecError(message, key=key)


def _positive(obj, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if value is not None:
            _require(value > 0, name, f"must be positive, got {value}")


def _absent_unless(obj, kind_field: str, kind: str, *names: str) -> None:
    """Keys that only mean something for one kind are errors elsewhere, not silently ignored."""
    for name in names:
        if getattr(obj, name) is not None:
            raise SpecError(
                f"only applies when {kind_field} is '{kind}' (here it is "
                f"'{getattr(obj, kind_field)}')", key=name)


@dataclass(frozen=True)
class NormSpec:
    kind: NormKind
    eps: float
    position: Literal["pre", "post"] = "pre"
    bias: bool | None = None  # LayerNorm's additive bias; defaults to true for layernorm

    def validate(self) -> None:
        _require(self.eps > 0, "eps", f"must be positive, got {self.eps}")
        if self.kind == "rmsnorm":
            _require(not self.bias, "bias", "rmsnorm has no bias")

    @property
    def has_bias(self) -> bool:
        return self.kind == "layernorm" and self.bias is not False


@dataclass(frozen=True)
class ScalingSpec:
    """RoPE frequency scaling. Field names follow HF's `rope_scaling` / `rope_parameters`."""

    kind: ScalingKind
    factor: float
    original_max_seq_len: int | None = None  # HF original_max_position_embeddings
    low_freq_factor: float | None = None  # llama3
    high_freq_factor: float | None = None  # llama3
    beta_fast: float | None = None  # yarn
    beta_slow: float | None = None  # yarn
    mscale: float | None = None  # yarn (DeepSeek)
    mscale_all_dim: float | None = None  # yarn (DeepSeek)

    def validate(self) -> None:
        _positive(self, "factor", "original_max_seq_len", "low_freq_factor", "high_freq_factor")
        if self.kind == "llama3":
            for name in ("original_max_seq_len", "low_freq_factor", "high_freq_factor"):
                _require(getattr(self, name) is not None, name, "required for llama3 scaling")
            _require(self.high_freq_factor > self.low_freq_factor, "high_freq_factor",
                     "must be larger than low_freq_factor")
        if self.kind == "yarn":
            _require(self.original_max_seq_len is not None, "original_max_seq_len",
                     "required for yarn scaling")
        if self.kind != "yarn":
            for name in ("beta_fast", "beta_slow", "mscale", "mscale_all_dim"):
                _absent_unless(self, "kind", "yarn", name)
        if self.kind != "llama3":
            _absent_unless(self, "kind", "llama3", "low_freq_factor", "high_freq_factor")


@dataclass(frozen=True)
class PositionSpec:
    kind: PositionKind
    theta: float | None = None
    scaling: ScalingSpec | None = None

    def validate(self) -> None:
        if self.kind == "rope":
            _require(self.theta is not None, "theta", "required when kind is 'rope'")
            _positive(self, "theta")
        else:
            _absent_unless(self, "kind", "rope", "theta", "scaling")


@dataclass(frozen=True)
class AttentionSpec:
    """GQA covers MHA (n_kv_heads == n_heads) and MQA (n_kv_heads == 1); MLA is DeepSeek's."""

    kind: AttentionKind
    n_heads: int
    n_kv_heads: int | None = None  # gqa: required; mla: every head has its own K/V
    head_dim: int | None = None  # gqa: required (it need not be d_model / n_heads)
    bias: bool = False  # q/k/v projection biases
    out_bias: bool | None = None  # o_proj bias; defaults to `bias`
    window: int | None = None  # sliding window (keys per query, itself included)
    # MLA
    q_lora_rank: int | None = None  # null: plain query projection (DeepSeek-V2-Lite)
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None

    MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")

    def validate(self) -> None:
        _positive(self, "n_heads", "n_kv_heads", "head_dim", "window", *self.MLA_KEYS)
        if self.kind == "gqa":
            _require(self.n_kv_heads is not None, "n_kv_heads", "required when kind is 'gqa'")
            _require(self.head_dim is not None, "head_dim",
                     "required when kind is 'gqa' (often d_model / n_heads, but not always)")
            _require(self.n_heads % self.n_kv_heads == 0, "n_kv_heads",
                     f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
            _absent_unless(self, "kind", "mla", *self.MLA_KEYS)
        else:
            for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
                _require(getattr(self, name) is not None, name, "required when kind is 'mla'")
            _require(self.n_kv_heads in (None, self.n_heads), "n_kv_heads",
                     "MLA gives every query head its own keys and values: omit it or set it to n_heads")
            _require(self.head_dim is None, "head_dim",
                     "not used by MLA (q/k use qk_nope_head_dim + qk_rope_head_dim, v uses v_head_dim)")
            _require(self.qk_rope_head_dim % 2 == 0, "qk_rope_head_dim", "must be even for RoPE")

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.kind == "mla" else self.n_kv_heads

    @property
    def group_size(self) -> int:
        """Query heads per key/value head (1 for MHA and MLA)."""
        return self.n_heads // self.kv_heads

    @property
    def qk_head_dim(self) -> int:
        if self.kind == "mla":
            return self.qk_nope_head_dim + self.qk_rope_head_dim
        return self.head_dim

    @property
    def value_head_dim(self) -> int:
        return self.v_head_dim if self.kind == "mla" else self.head_dim

    @property
    def has_out_bias(self) -> bool:
        return self.bias if self.out_bias is None else self.out_bias

    @property
    def variant(self) -> str:
        """MHA, MQA, GQA or MLA: the name people use."""
        if self.kind == "mla":
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"


@dataclass(frozen=True)
class RouterSpec:
    """How a MoE layer picks experts: softmax scores, then top-k (optionally group-limited)."""

    method: RouterMethod = "greedy"
    n_group: int | None = None  # group_limited_greedy: experts split into n_group groups
    topk_group: int | None = None  # ... of which the best topk_group groups are eligible
    normalize: bool = True  # renormalise the chosen top-k weights to sum to 1
    scaling_factor: float = 1.0  # DeepSeek's routed_scaling_factor

    def validate(self) -> None:
        _positive(self, "n_group", "topk_group", "scaling_factor")
        if self.method == "group_limited_greedy":
            _require(self.n_group is not None and self.topk_group is not None, "method",
                     "group_limited_greedy needs n_group and topk_group")
            _require(self.topk_group <= self.n_group, "topk_group",
                     f"topk_group ({self.topk_group}) cannot exceed n_group ({self.n_group})")


@dataclass(frozen=True)
class FFNSpec:
    kind: FFNKind
    d_ff: int | None = None  # mlp/swiglu hidden size
    activation: Activation = "silu"
    bias: bool = False
    # MoE
    n_experts: int | None = None
    top_k: int | None = None
    d_expert: int | None = None  # each routed expert's hidden size
    n_shared_experts: int | None = None  # always-on experts of size d_expert each
    router: RouterSpec | None = None

    MOE_KEYS = ("n_experts", "top_k", "d_expert", "n_shared_experts", "router")

    def validate(self) -> None:
        _positive(self, "d_ff", "n_experts", "top_k", "d_expert")
        if self.n_shared_experts is not None:
            _require(self.n_shared_experts >= 0, "n_shared_experts", "must be 0 or more")
        if self.kind == "moe":
            for name in ("n_experts", "top_k", "d_expert"):
                _require(getattr(self, name) is not None, name, "required when kind is 'moe'")
            _require(self.top_k <= self.n_experts, "top_k",
                     f"top_k ({self.top_k}) cannot exceed n_experts ({self.n_experts})")
            _require(self.d_ff is None, "d_ff",
                     "not used by a moe layer (d_expert sizes its experts; a dense layer sets its "
                     "own d_ff under `layers`)")
            r = self.router
            if r is not None and r.method == "group_limited_greedy":
                _require(self.n_experts % r.n_group == 0, "router.n_group",
                         f"n_experts ({self.n_experts}) must divide into n_group ({r.n_group}) groups")
                _require(self.top_k <= r.topk_group * (self.n_experts // r.n_group), "top_k",
                         "exceeds the experts in the eligible groups")
        else:
            _require(self.d_ff is not None, "d_ff", f"required when kind is '{self.kind}'")
            _absent_unless(self, "kind", "moe", *self.MOE_KEYS)

    @property
    def shared_experts(self) -> int:
        return self.n_shared_experts or 0

    @property
    def routing(self) -> RouterSpec:
        return self.router or RouterSpec()


@dataclass(frozen=True)
class LayerOverride:
    """Per-layer changes. `select` picks layers: a list of indices or a slice like "1::2".

    A component override with `kind` replaces the component; without `kind` it patches fields.
    """

    select: str | tuple[int, ...]
    attention: dict | None = None
    ffn: dict | None = None
    note: str | None = None  # what the spec cannot express (e.g. an unpublished band width)

    def validate(self) -> None:
        _require(self.attention is not None or self.ffn is not None or self.note is not None,
                 "select", "an override needs attention, ffn or note")

    def indices(self, n_layers: int) -> list[int]:
        if isinstance(self.select, tuple):
            return self._checked(list(self.select), n_layers)
        parts = self.select.split(":")
        _require(len(parts) <= 3, "select", "expected a slice like '0:1' or '1::2'")
        try:
            bounds = [int(p) if p.strip() else None for p in parts]
        except ValueError:
            raise SpecError(f"expected layer indices or a slice like '1::2', got {self.select!r}",
                            key="select") from None
        if len(bounds) == 1:
            return self._checked(bounds, n_layers)
        _require(len(bounds) < 3 or bounds[2] != 0, "select", "a slice step cannot be 0")
        return list(range(n_layers))[slice(*bounds)]

    @staticmethod
    def _checked(indices: list[int], n_layers: int) -> list[int]:
        for i in indices:
            _require(0 <= i < n_layers, "select", f"layer {i} is outside 0..{n_layers - 1}")
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
        _positive(self, "embedding", "attention", "residual", "logits")


@dataclass(frozen=True)
class LayerPlan:
    """What one decoder layer is: the builder and the estimators both read this."""

    index: int
    attention: AttentionSpec
    ffn: FFNSpec
    note: str | None = None

    @property
    def window(self) -> int | None:
        return self.attention.window

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
    extends: str | None = None  # kept for display; already applied by the loader

    def validate(self) -> None:
        _positive(self, "vocab_size", "d_model", "n_layers", "max_seq_len")
        for layer in self.plan:
            w = layer.attention.window
            if w is not None and w > self.max_seq_len:
                key = "attention.window" if layer.attention.window == self.attention.window \
                    else "layers"
                raise SpecError(f"window ({w}) is larger than the context max_seq_len "
                                f"({self.max_seq_len})", key=key)
            if layer.attention.kind == "mla" and self.position.kind != "rope":
                raise SpecError("MLA's decoupled key needs position.kind 'rope'", key="position.kind")

    @cached_property
    def plan(self) -> tuple[LayerPlan, ...]:
        """The per-layer plan: the spec's attention and ffn with `layers` overrides applied."""
        from archscope.spec.fields import from_mapping, to_mapping

        attn = [None] * self.n_layers
        ffn = [None] * self.n_layers
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
                if override.note is not None:
                    notes[i] = override.note
        cache: dict = {}

        def build(cls, patched, base, key):
            if patched is None:
                return base
            ident = (cls, repr(sorted(patched.items())))
            if ident not in cache:
                cache[ident] = from_mapping(cls, patched, key)
            return cache[ident]

        return tuple(
            LayerPlan(i, build(AttentionSpec, attn[i], self.attention, "layers.attention"),
                      build(FFNSpec, ffn[i], self.ffn, "layers.ffn"), notes[i])
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
