"""The spec's components: norm, position (RoPE and its scaling), attention, router and FFN.

Frozen dataclasses whose field names are the YAML keys (DESIGN.md section 2). Only facts are
stored; anything derived (group size, MLA q/k head dim) is a property. Each class checks its own
consistency in `validate`. The whole model and its per-layer plan are in `schema`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.errors import SpecError
from archscope.spec.checks import absent_unless, positive, require

NormKind = Literal["layernorm", "rmsnorm"]
PositionKind = Literal["learned", "rope", "none"]
ScalingKind = Literal["llama3", "yarn", "linear"]
AttentionKind = Literal["gqa", "mla"]
FFNKind = Literal["mlp", "swiglu", "geglu", "relu2", "moe"]
Activation = Literal["gelu_tanh", "gelu", "silu", "relu", "relu2"]
RouterMethod = Literal["greedy", "group_limited_greedy", "noaux_tc"]
RouterScoring = Literal["softmax", "sigmoid"]
# pre: norm each sublayer's input (Llama); post: norm each residual sum (the 2017 Transformer);
# output: norm each sublayer's output before the residual add (OLMo 2), keeping the final norm
NormPosition = Literal["pre", "post", "output"]
# RMSNorm of q and k after their projections, before RoPE: over each head's head_dim (Qwen3),
# or over the whole projected width, all heads at once (OLMo 2)
QKNorm = Literal["head", "full"]


def _one_spelling(obj, name: str) -> None:
    """A fusion switch set to false is the same network as one left out: store it as null, so
    one network has one spelling (and a round trip through config.json compares equal)."""
    if getattr(obj, name) is False:
        object.__setattr__(obj, name, None)


@dataclass(frozen=True)
class NormSpec:
    kind: NormKind
    eps: float
    position: NormPosition = "pre"
    bias: bool | None = None  # LayerNorm's additive bias; defaults to true for layernorm

    def validate(self) -> None:
        require(self.eps > 0, "eps", f"must be positive, got {self.eps}")
        if self.kind == "rmsnorm":
            require(not self.bias, "bias", "rmsnorm has no bias")

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
        positive(self, "factor", "original_max_seq_len", "low_freq_factor", "high_freq_factor")
        if self.kind == "llama3":
            for name in ("original_max_seq_len", "low_freq_factor", "high_freq_factor"):
                require(getattr(self, name) is not None, name, "required for llama3 scaling")
            require(self.high_freq_factor > self.low_freq_factor, "high_freq_factor",
                    "must be larger than low_freq_factor")
        if self.kind == "yarn":
            require(self.original_max_seq_len is not None, "original_max_seq_len",
                    "required for yarn scaling")
        if self.kind != "yarn":
            for name in ("beta_fast", "beta_slow", "mscale", "mscale_all_dim"):
                absent_unless(self, "kind", "yarn", name)
        if self.kind != "llama3":
            absent_unless(self, "kind", "llama3", "low_freq_factor", "high_freq_factor")


@dataclass(frozen=True)
class PositionSpec:
    kind: PositionKind
    theta: float | None = None
    scaling: ScalingSpec | None = None

    def validate(self) -> None:
        if self.kind == "rope":
            require(self.theta is not None, "theta", "required when kind is 'rope'")
            positive(self, "theta")
        else:
            absent_unless(self, "kind", "rope", "theta", "scaling")


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
    qk_norm: QKNorm | None = None  # gqa: RMSNorm q and k (see QKNorm), eps = norm.eps
    # gqa: q, k and v as one Linear, `qkv_proj` d -> (n_heads + 2*n_kv_heads)*head_dim, rows q
    # then k then v (Phi-3/Phi-4). The same parameters and FLOPs as three; the checkpoint and
    # the per-component breakdown hold one tensor. null or false: q_proj, k_proj, v_proj.
    fused_qkv: bool | None = None
    # false: this layer's q and k are not rotated (NoPE; SmolLM3's every fourth layer, set per
    # layer through `layers` overrides). Only meaningful with position.kind 'rope'; MLA's
    # decoupled key needs RoPE, so MLA refuses it.
    rope: bool = True
    # MLA
    q_lora_rank: int | None = None  # null: plain query projection (DeepSeek-V2-Lite)
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None

    MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")

    def __post_init__(self) -> None:
        _one_spelling(self, "fused_qkv")

    def validate(self) -> None:
        positive(self, "n_heads", "n_kv_heads", "head_dim", "window", *self.MLA_KEYS)
        if self.kind == "gqa":
            require(self.n_kv_heads is not None, "n_kv_heads", "required when kind is 'gqa'")
            require(self.head_dim is not None, "head_dim",
                    "required when kind is 'gqa' (often d_model / n_heads, but not always)")
            require(self.n_heads % self.n_kv_heads == 0, "n_kv_heads",
                    f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
            absent_unless(self, "kind", "mla", *self.MLA_KEYS)
        else:
            absent_unless(self, "kind", "gqa", "qk_norm", "fused_qkv")
            require(self.rope, "rope", "MLA's decoupled key (qk_rope_head_dim) needs RoPE: "
                                       "rope: false applies to gqa attention only")
            for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
                require(getattr(self, name) is not None, name, "required when kind is 'mla'")
            require(self.n_kv_heads in (None, self.n_heads), "n_kv_heads",
                    "MLA gives every query head its own keys and values: omit it or set it to n_heads")
            require(self.head_dim is None, "head_dim",
                    "not used by MLA (q/k use qk_nope_head_dim + qk_rope_head_dim, v uses v_head_dim)")
            require(self.qk_rope_head_dim % 2 == 0, "qk_rope_head_dim", "must be even for RoPE")

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

    def tokens_held(self, seq_len: int) -> int:
        """Tokens this layer attends to and caches at context seq_len: the window caps them.
        The one home of the cap: the estimators and the builder's caches both call it."""
        return min(seq_len, self.window) if self.window else seq_len

    @property
    def rotary_dim(self) -> int:
        """Dims RoPE rotates per head: MLA's decoupled qk_rope_head_dim, else the whole head."""
        return self.qk_rope_head_dim or self.head_dim

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
    """How a MoE layer picks experts: softmax or sigmoid scores, then top-k (optionally
    group-limited; DeepSeek-V3's noaux_tc adds a per-expert bias used for selection only)."""

    method: RouterMethod = "greedy"
    n_group: int | None = None  # group-limited methods: experts split into n_group groups
    topk_group: int | None = None  # ... of which the best topk_group groups are eligible
    normalize: bool = True  # renormalise the chosen top-k weights to sum to 1
    scaling_factor: float = 1.0  # DeepSeek's routed_scaling_factor
    scoring: RouterScoring = "softmax"  # DeepSeek's scoring_func
    correction_bias: bool = False  # DeepSeek-V3's e_score_correction_bias (choice only; a buffer)

    def validate(self) -> None:
        positive(self, "n_group", "topk_group", "scaling_factor")
        require(self.method != "noaux_tc" or self.correction_bias, "correction_bias",
                "noaux_tc chooses experts by the scores plus a correction bias: set "
                "correction_bias: true")
        if self.method in ("group_limited_greedy", "noaux_tc"):
            require(self.n_group is not None and self.topk_group is not None, "method",
                    f"{self.method} needs n_group and topk_group")
            require(self.topk_group <= self.n_group, "topk_group",
                    f"topk_group ({self.topk_group}) cannot exceed n_group ({self.n_group})")


# Kinds whose activation is part of their definition: the spec's `activation` defaults to it
# and may only repeat it. GeGLU's gate is GELU with the tanh approximation (transformers' Gemma:
# gelu_pytorch_tanh); Nemotron-H's MLP squares a ReLU (mlp_hidden_act: relu2).
KIND_ACTIVATION: dict[str, str] = {"geglu": "gelu_tanh", "relu2": "relu2"}
DEFAULT_ACTIVATION = "silu"  # every other kind's, when the spec does not say
OWN_ACTIVATION = {"relu2": "relu2"}  # activations only their kind has: activation -> kind
GATED_KINDS = ("swiglu", "geglu")  # one dense gate_proj and up_proj: what fused_gate_up fuses


@dataclass(frozen=True)
class FFNSpec:
    kind: FFNKind
    d_ff: int | None = None  # hidden size of every kind but moe
    activation: Activation | None = None  # null: the kind's own (KIND_ACTIVATION), else silu
    bias: bool = False
    # MoE
    n_experts: int | None = None
    top_k: int | None = None
    d_expert: int | None = None  # each routed expert's hidden size
    n_shared_experts: int | None = None  # always-on experts of size d_expert each
    router: RouterSpec | None = None
    # gated kinds (swiglu, geglu): gate_proj and up_proj as one Linear, `gate_up_proj` d ->
    # 2*d_ff, gate rows first (Phi-3/Phi-4). Same parameters and FLOPs; one tensor in the
    # checkpoint and the breakdown. null or false: gate_proj and up_proj.
    fused_gate_up: bool | None = None

    MOE_KEYS = ("n_experts", "top_k", "d_expert", "n_shared_experts", "router")

    def __post_init__(self) -> None:
        if self.activation is None:  # frozen: fill the default in place, once
            default = KIND_ACTIVATION.get(self.kind, DEFAULT_ACTIVATION)
            object.__setattr__(self, "activation", default)
        _one_spelling(self, "fused_gate_up")

    def validate(self) -> None:
        positive(self, "d_ff", "n_experts", "top_k", "d_expert")
        own = KIND_ACTIVATION.get(self.kind)
        if own is not None:
            require(self.activation == own, "activation",
                    f"kind '{self.kind}' is defined by its {own} activation, got "
                    f"'{self.activation}': set activation to {own} or leave it out")
        elif self.activation in OWN_ACTIVATION:  # one spelling per network
            kind = OWN_ACTIVATION[self.activation]
            raise SpecError(f"{self.activation} is the activation of kind '{kind}' only; use "
                            f"kind: {kind} (here kind is '{self.kind}')", key="activation")
        if self.n_shared_experts is not None:
            require(self.n_shared_experts >= 0, "n_shared_experts", "must be 0 or more")
        if self.kind == "moe":
            for name in ("n_experts", "top_k", "d_expert"):
                require(getattr(self, name) is not None, name, "required when kind is 'moe'")
            require(self.top_k <= self.n_experts, "top_k",
                    f"top_k ({self.top_k}) cannot exceed n_experts ({self.n_experts})")
            require(self.d_ff is None, "d_ff",
                    "not used by a moe layer (d_expert sizes its experts; a dense layer sets its "
                    "own d_ff under `layers`)")
            r = self.router
            if r is not None and r.method in ("group_limited_greedy", "noaux_tc"):
                require(self.n_experts % r.n_group == 0, "router.n_group",
                        f"n_experts ({self.n_experts}) must divide into n_group ({r.n_group}) groups")
                require(self.top_k <= r.topk_group * (self.n_experts // r.n_group), "top_k",
                        "exceeds the experts in the eligible groups")
                # noaux_tc scores a group by the sum of its best two experts
                require(r.method != "noaux_tc" or self.n_experts // r.n_group >= 2,
                        "router.n_group", "noaux_tc needs at least 2 experts per group")
        else:
            require(self.d_ff is not None, "d_ff", f"required when kind is '{self.kind}'")
            absent_unless(self, "kind", "moe", *self.MOE_KEYS)
        if self.kind not in GATED_KINDS:
            require(self.fused_gate_up is None, "fused_gate_up",
                    f"only applies to the gated kinds ({', '.join(GATED_KINDS)}); here kind is "
                    f"'{self.kind}'")

    @property
    def shared_experts(self) -> int:
        return self.n_shared_experts or 0

    @property
    def routing(self) -> RouterSpec:
        return self.router or RouterSpec()
