"""The spec's components: norm and FFN (attention is in `attention`, the MoE router in
`router`, position (RoPE and its scaling) in `position`).

Frozen dataclasses whose field names are the YAML keys (DESIGN.md section 2). Only facts are
stored; anything derived (group size, MLA q/k head dim) is a property. Each class checks its own
consistency in `validate`. The whole model and its per-layer plan are in `schema`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.errors import SpecError
from archscope.spec.checks import absent_unless, one_spelling, positive, require
# the router is its own module; its names stay importable from here, beside the FFN's
from archscope.spec.router import RouterMethod, RouterScoring, RouterSpec, RouterWeights  # noqa: F401
# the position's specs live in spec/position.py; named here too, beside the other components
from archscope.spec.position import (PositionKind, PositionSpec, ScalingKind,  # noqa: F401
                                     ScalingSpec)

NormKind = Literal["layernorm", "rmsnorm"]
FFNKind = Literal["mlp", "swiglu", "geglu", "relu2", "moe"]
# quick_gelu: x * sigmoid(1.702 x) (transformers' ACT2FN name; gpt-oss's experts' gate)
Activation = Literal["gelu_tanh", "gelu", "silu", "relu", "relu2", "quick_gelu", "xielu"]
# each expert of a moe (routed and shared): a SwiGLU, or an ungated up_proj, down_proj MLP
ExpertKind = Literal["swiglu", "mlp", "relu2"]
# pre: norm each sublayer's input (Llama); post: norm each residual sum (the 2017 Transformer);
# output: norm each sublayer's output before the residual add (OLMo 2), keeping the final norm;
# sandwich: both, four norms per block, x + post(sublayer(pre(x))) (Gemma 2/3), keeping the final;
# parallel: one norm of each layer's input feeds attention and the FFN side by side, whose
# outputs are both added to the residual, x + attn(n(x)) + mlp(n(x)) (GPT-J, Cohere, Phi-2);
# normed_residual: pre's norms, but the residual carried on is the normed input, n(x) +
# attn(n(x)) (MiniMax-01, its config's postnorm: true), keeping the final norm
NormPosition = Literal["pre", "post", "output", "sandwich", "parallel", "normed_residual"]
# Where each sublayer's norms sit, by norm.position, under the module names transformers uses
# for that layout (so checkpoints map by name). A block is
#   x = attn_sum(x + r * attn_out(self_attn(attn_in(x))))
#   x = ffn_sum(x + r * ffn_out(mlp(ffn_in(x))))
# and the slots a layout leaves empty are identities. Torch-free here, so the builder
# (nn/model.py) and the spec-derived module tables (estimate/structure.py) read the same names.
NORM_SLOTS = {
    "pre": {"attn_in": "input_layernorm", "ffn_in": "post_attention_layernorm"},  # Llama
    "post": {"attn_sum": "input_layernorm", "ffn_sum": "post_attention_layernorm"},  # 2017
    "output": {"attn_out": "post_attention_layernorm",  # OLMo 2: norm the sublayer's output
               "ffn_out": "post_feedforward_layernorm"},
    "sandwich": {"attn_in": "input_layernorm", "attn_out": "post_attention_layernorm",  # Gemma
                 "ffn_in": "pre_feedforward_layernorm", "ffn_out": "post_feedforward_layernorm"},
    # the FFN reads attention's normed input (nn/model.py's parallel block): one norm a layer
    "parallel": {"attn_in": "input_layernorm"},
    "normed_residual": {"attn_in": "input_layernorm", "ffn_in": "post_attention_layernorm"},
}
# A sublayer's slots in the order the block registers their norms (the module order).
SUBLAYER_SLOTS = {"attn": ("attn_in", "attn_out", "attn_sum"),
                  "ffn": ("ffn_in", "ffn_out", "ffn_sum")}


@dataclass(frozen=True)
class NormSpec:
    kind: NormKind
    eps: float
    position: NormPosition = "pre"
    bias: bool | None = None  # LayerNorm's additive bias; defaults to true for layernorm
    # true: every norm of the model (QK-norm included) scales by (1 + weight), its weight
    # initialised to zero: Gemma's RMSNorm, Nemotron's LayerNorm1P (whose bias is added as
    # usual); null or false: by weight
    unit_offset: bool | None = None
    # false: the model's layer and final norms have no learned scale and no bias (OLMo's
    # non-parametric LayerNorm, nanochat's RMSNorm); null or true: they have a weight
    weight: bool | None = None
    # true: one more norm of this kind right after the token embedding (after its multiplier
    # and any learned positions), before the first layer: nanochat's (its weightless final
    # norm, applied twice), BLOOM's word_embeddings_layernorm. null or false: none
    embedding: bool | None = None

    def __post_init__(self) -> None:
        one_spelling(self, "unit_offset")
        one_spelling(self, "embedding")
        if self.weight is True:
            object.__setattr__(self, "weight", None)  # one spelling: null is the default

    def validate(self) -> None:
        require(self.eps > 0, "eps", f"must be positive, got {self.eps}")
        if self.kind == "rmsnorm":
            require(not self.bias, "bias", "rmsnorm has no bias")
        if self.weight is False:
            require(not self.bias, "bias", "a norm without a weight has no bias either "
                                           "(torch's elementwise_affine=False)")
            require(not self.unit_offset, "unit_offset", "scales (1 + weight): it needs a weight")

    @property
    def per_layer(self) -> int:
        """Norms in one decoder layer (the embedding norm, if any, is the model's)."""
        return len(NORM_SLOTS[self.position])

    @property
    def has_weight(self) -> bool:
        return self.weight is not False

    @property
    def has_bias(self) -> bool:
        return self.kind == "layernorm" and self.bias is not False and self.has_weight


# Kinds whose activation is part of their definition: the spec's `activation` defaults to it
# and may only repeat it. GeGLU's gate is GELU with the tanh approximation (transformers' Gemma:
# gelu_pytorch_tanh); Nemotron-H's MLP squares a ReLU (mlp_hidden_act: relu2).
KIND_ACTIVATION: dict[str, str] = {"geglu": "gelu_tanh", "relu2": "relu2"}
DEFAULT_ACTIVATION = "silu"  # every other kind's, when the spec does not say
# activations that make a two-matrix MLP another kind (one spelling: mlp with relu2 is kind
# relu2); a gated unit may use them (BitNet's ReLU² GLU: swiglu with relu2)
OWN_ACTIVATION = {"relu2": "relu2"}
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
    # the shared experts' total hidden width when it is not n_shared_experts * d_expert
    # (Granite 4.0-H's shared_intermediate_size); they run as one gated MLP of that width
    d_shared: int | None = None
    # a sigmoid gate, Linear(d, 1), scaling the shared experts' output per token (Qwen3-Next's
    # shared_expert_gate). null or false: none.
    shared_gate: bool | None = None
    router: RouterSpec | None = None
    # gated kinds (swiglu, geglu): gate_proj and up_proj as one Linear, `gate_up_proj` d ->
    # 2*d_ff, gate rows first (Phi-3/Phi-4). Same parameters and FLOPs; one tensor in the
    # checkpoint and the breakdown. null or false: gate_proj and up_proj.
    fused_gate_up: bool | None = None
    # gated kinds and moe's experts: gpt-oss's clamped unit (HF swiglu_limit). gate is clamped
    # above at `limit`, up to [-limit, limit], and the product is act(gate) * (up + 1): the +1
    # comes with the clamp in gpt-oss. null: act(gate) * up, unclamped.
    limit: float | None = None
    # gated kinds: an RMSNorm over act(gate) * up (d_ff wide, the model's norm eps) before
    # down_proj, `ffn_sub_norm` (BitNet b1.58's). d_ff parameters, no matmul. null or false: none.
    sub_norm: bool | None = None
    expert: ExpertKind | None = None  # moe: each expert's kind (null: swiglu; relu2: Nemotron-H)
    d_latent: int | None = None  # moe: routed experts' width in/out, via fc1/fc2_latent_proj

    MOE_KEYS = ("n_experts", "top_k", "d_expert", "n_shared_experts", "d_shared", "shared_gate",
                "router", "expert", "d_latent")

    def __post_init__(self) -> None:
        if self.expert == "swiglu":  # the default: one spelling
            object.__setattr__(self, "expert", None)
        if self.activation is None:  # frozen: fill the default in place, once
            default = KIND_ACTIVATION.get(self.unit_kind, DEFAULT_ACTIVATION)
            object.__setattr__(self, "activation", default)
        one_spelling(self, "fused_gate_up")
        one_spelling(self, "shared_gate")
        one_spelling(self, "sub_norm")
        if self.d_shared is not None and self.d_expert is not None \
                and self.d_shared == (self.n_shared_experts or 0) * self.d_expert:
            object.__setattr__(self, "d_shared", None)  # the default width: one spelling

    def validate(self) -> None:
        positive(self, "d_ff", "n_experts", "top_k", "d_expert", "limit", "d_shared", "d_latent")
        require(self.limit is None or self.unit_kind in GATED_KINDS, "limit",
                f"clamps a gated unit's gate and up (kinds {', '.join(GATED_KINDS)}, moe's "
                f"swiglu experts); kind '{self.unit_kind}' has no gate")
        own, named = KIND_ACTIVATION.get(self.unit_kind), (
            "expert" if self.kind == "moe" else "kind")
        if own is not None:
            require(self.activation == own, "activation",
                    f"{named} '{self.unit_kind}' is defined by its {own} activation, got "
                    f"'{self.activation}': set activation to {own} or leave it out")
        elif self.activation in OWN_ACTIVATION and self.kind == "mlp":  # one spelling
            kind = OWN_ACTIVATION[self.activation]
            raise SpecError(f"{self.activation} is the activation of kind '{kind}' only; use "
                            f"{named}: {kind} (here {named} is '{self.unit_kind}')",
                            key="activation")
        # xIELU (Apertus) has learned alpha_p and alpha_n per MLP: a two-matrix MLP's only
        require(self.activation != "xielu" or self.kind == "mlp", "activation",
                f"xielu (learned alpha_p, alpha_n per MLP) is read for kind 'mlp' only, here "
                f"kind is '{self.kind}'")
        if self.n_shared_experts is not None:
            require(self.n_shared_experts >= 0, "n_shared_experts", "must be 0 or more")
        for name in ("d_shared", "shared_gate"):
            require(getattr(self, name) is None or self.shared_experts > 0, name,
                    "describes the shared experts: set n_shared_experts too")
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
            for name in ("fused_gate_up", "sub_norm"):
                require(getattr(self, name) is None, name, "only applies to the gated kinds "
                        f"({', '.join(GATED_KINDS)}); here kind is '{self.kind}'")

    @property
    def unit_kind(self) -> str:
        """The dense kind one unit is: the FFN's own kind, or each expert's in a moe."""
        return (self.expert or "swiglu") if self.kind == "moe" else self.kind

    @property
    def shared_experts(self) -> int:
        return self.n_shared_experts or 0

    @property
    def shared_width(self) -> int:
        """The hidden width of the one MLP (of `expert`'s kind) the shared experts run as."""
        if not self.shared_experts:
            return 0
        return self.d_shared or self.shared_experts * self.d_expert

    @property
    def routing(self) -> RouterSpec:
        return self.router or RouterSpec()


@dataclass(frozen=True)
class Multipliers:
    """Granite's scale factors (HF: embedding_multiplier, attention_multiplier,
    residual_multiplier, logits_scaling) and Falcon-H1's µP ones, each around one sublayer
    (attention_in/out_multiplier, ssm_in/out_multiplier, mlp_multipliers)."""

    embedding: float = 1.0  # token embeddings are multiplied by it
    attention: float | None = None  # softmax scale; null means 1/sqrt(q/k head dim)
    residual: float = 1.0  # each sublayer's output is multiplied by it before the residual add
    # the residual stream is multiplied by it before each sublayer's output is added
    # (MiniMax-01's *_alpha_factor, DeepNorm's alpha): x = skip * x + residual * sublayer(x)
    skip: float = 1.0
    logits: float = 1.0  # logits are divided by it (HF's logits_scaling)
    # the normed input of attention / of the state mixer is multiplied by `*_in`, its output by
    # `*_out` (before `residual`); a gated FFN's gate pre-activation by ffn_gate, its output by
    # ffn_out
    attention_in: float = 1.0
    attention_out: float = 1.0
    mixer_in: float = 1.0
    mixer_out: float = 1.0
    ffn_gate: float = 1.0
    ffn_out: float = 1.0

    def validate(self) -> None:
        positive(self, "embedding", "attention", "residual", "logits", "skip", "attention_in",
                 "attention_out", "mixer_in", "mixer_out", "ffn_gate", "ffn_out")

    def shown(self) -> dict:
        """The factors a page prints: Granite's four (attention when set), the others (the
        DeepNorm skip, the µP ones) only where they are not 1."""
        granite = ("embedding", "attention", "residual", "logits")
        return {k: v for k, v in vars(self).items()
                if v is not None and (k in granite or v != 1)}


@dataclass(frozen=True)
class HeadSpec:
    """The LM head beyond its matrix: a bias (Phi-2's lm_head), a soft cap on the logits,
    cap * tanh(logits / cap) (Gemma 2's final_logit_softcapping)."""

    bias: bool = False
    softcap: float | None = None

    def validate(self) -> None:
        positive(self, "softcap")
