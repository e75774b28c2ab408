"""The spec's attention component: GQA (with MHA and MQA as its extremes) and DeepSeek's MLA,
with what a layer may add (window or chunk, QK-norm, NoPE, temperature tuning, fused
projections, MLA's sparse-attention indexer).

A frozen dataclass whose field names are the YAML keys (DESIGN.md section 2); it checks its
own consistency in `validate`. The per-layer plan that varies it layer by layer is in `schema`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.spec.checks import absent_unless, one_spelling, positive, require
# the indexer is its own module; check_shared_indexers stays importable from here
from archscope.spec.indexer import IndexerSpec, check_shared_indexers  # noqa: F401

AttentionKind = Literal["gqa", "mla"]
# A norm of q and k after their projections, before RoPE: over each head's head_dim with one
# weight all heads share (Qwen3; Phi-2's qk_layernorm), over each head with a weight of its own
# (per_head: Cohere's use_qk_norm, n_heads x head_dim and n_kv_heads x head_dim), or over the
# whole projected width, all heads at once (OLMo 2); l2: Llama 4's weightless
# x / sqrt(mean(x^2) + eps) over each head, AFTER RoPE (and so on RoPE layers only). A norm
# with a weight moves after RoPE with qk_norm_after_rope (Hunyuan's query_layernorm)
QKNorm = Literal["head", "per_head", "full", "l2"]
QK_NORMS_WITH_WEIGHTS = ("head", "per_head", "full")
QKNormKind = Literal["rmsnorm", "layernorm"]


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
    # chunked attention (Llama 4's attention_chunk_size): a query at position p sees the keys
    # of its own chunk only, positions floor(p/chunk)*chunk .. p; the cache holds `chunk`
    chunk: int | None = None
    qk_norm: QKNorm | None = None  # gqa: norm q and k (see QKNorm), eps = norm.eps
    # gqa: what the QK-norm (head, per_head, full) is: rmsnorm (null: Qwen3, OLMo 2, Gemma) or
    # layernorm, which subtracts the mean (Cohere, Phi-2); either scales by (1 + weight) when
    # norm.unit_offset
    qk_norm_kind: QKNormKind | None = None
    # gqa: a layernorm QK-norm adds a learned bias too (Phi-2's nn.LayerNorm). null or false:
    # none (Cohere's)
    qk_norm_bias: bool | None = None
    # gqa: the weighted QK-norm (head, per_head, full) follows RoPE instead of preceding it
    # (Hunyuan's query_layernorm and key_layernorm). The same parameters, cache and FLOPs;
    # another function of q and k. null or false: before RoPE.
    qk_norm_after_rope: bool | None = None
    # gqa: q, k and v as one Linear, `qkv_proj` d -> (n_heads + 2*n_kv_heads)*head_dim, rows q
    # then k then v (Phi-3/Phi-4). The same parameters and FLOPs as three; the checkpoint and
    # the per-component breakdown hold one tensor. null or false: q_proj, k_proj, v_proj.
    fused_qkv: bool | None = None
    # false: this layer's q and k are not rotated (NoPE; SmolLM3's every fourth layer, set per
    # layer through `layers` overrides). Only meaningful with position.kind 'rope'; MLA's
    # decoupled key needs RoPE, so MLA refuses it.
    rope: bool = True
    # gqa: the fraction of each q/k head RoPE rotates (HF partial_rotary_factor; GLM-4.5: 0.5):
    # the first int(head_dim * fraction) dims are rotated (half-split pairs within them), the
    # rest pass through. null (or 1.0, stored as null: one spelling) rotates the whole head.
    # No parameter, cache element or matmul FLOP depends on it.
    rotary_fraction: float | None = None
    # gqa: a learned logit per query head that joins the softmax's denominator and is then
    # dropped (gpt-oss's attention sinks; n_heads parameters a layer, no cache, no matmul).
    # null or false: none.
    sinks: bool | None = None
    # Attention temperature tuning, after RoPE: q at position p is multiplied by
    # log1p(floor((p + temperature_offset) / temperature_floor)) * temperature_scale + 1.
    # Llama 4's (floor_scale, attn_scale; its reader sets them on NoPE layers) counts from
    # p + 1 (temperature_offset null, the one spelling of 1); Ministral 3's (beta, original
    # context, every layer; Mistral 4's on MLA) from p (temperature_offset 0). floor and
    # scale: both or neither.
    # Elementwise: no parameter, cache element or matmul FLOP.
    temperature_floor: int | None = None
    temperature_scale: float | None = None
    temperature_offset: int | None = None
    # gqa: a sigmoid gate per query channel on the attention output, before o_proj (Qwen3-Next's
    # gated attention): q_proj is twice as wide, each head's query rows followed by its gate
    # rows. No cache element; d x n_heads*head_dim more parameters. null or false: none.
    output_gate: bool | None = None
    # gqa: a cap on the attention logits, cap * tanh(scores / cap) after the softmax scale and
    # before the mask (Gemma 2's attn_logit_softcapping). Elementwise: no parameter, cache
    # element or matmul FLOP. null: none.
    softcap: float | None = None
    # gqa: q, k and v clamped to [-clip_qkv, clip_qkv] after their projections (OLMo's and
    # DBRX's clip_qkv). Elementwise. null: none.
    clip_qkv: float | None = None
    # gqa: an RMSNorm over the attention output (n_heads*head_dim wide, the model's norm eps)
    # before o_proj, `attn_sub_norm` (BitNet b1.58's). n_heads*head_dim parameters, no matmul,
    # no cache element. null or false: none.
    sub_norm: bool | None = None
    # MLA
    q_lora_rank: int | None = None  # null: plain query projection (DeepSeek-V2-Lite)
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    # mla: DeepSeek Sparse Attention's indexer (see IndexerSpec); null: dense attention
    indexer: IndexerSpec | None = None
    # MLA: the decoupled RoPE dims rotate in half-split pairs (rotate_half, MiniCPM3's) instead
    # of adjacent pairs (null or false: DeepSeek's). No count depends on it.
    rope_half_split: bool | None = None
    # MLA: a sigmoid gate per head on its output before o_proj, from g_proj d -> n_heads (Ling
    # 3's BailingHybridAttention). null or false: none.
    head_gate: bool | None = None

    MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")

    def __post_init__(self) -> None:
        one_spelling(self, "fused_qkv")
        if self.rotary_fraction == 1 and not isinstance(self.rotary_fraction, bool):
            object.__setattr__(self, "rotary_fraction", None)  # the whole head: one spelling
        one_spelling(self, "sinks")
        one_spelling(self, "output_gate")
        one_spelling(self, "qk_norm_bias")
        one_spelling(self, "qk_norm_after_rope")
        if self.qk_norm_kind == "rmsnorm":
            object.__setattr__(self, "qk_norm_kind", None)  # the default: one spelling
        one_spelling(self, "sub_norm")
        one_spelling(self, "rope_half_split")
        one_spelling(self, "head_gate")
        if self.temperature_offset == 1 and not isinstance(self.temperature_offset, bool):
            object.__setattr__(self, "temperature_offset", None)  # Llama 4's: one spelling

    def validate(self) -> None:
        positive(self, "n_heads", "n_kv_heads", "head_dim", "window", "chunk",
                 "temperature_floor", "temperature_scale", "softcap", "clip_qkv",
                 *self.MLA_KEYS)
        require(self.window is None or self.chunk is None, "chunk",
                "a layer attends within a sliding window or within chunks, not both")
        require((self.temperature_floor is None) == (self.temperature_scale is None),
                "temperature_scale" if self.temperature_scale is None else "temperature_floor",
                "temperature_floor and temperature_scale go together (both or neither)")
        require(self.temperature_offset is None or self.temperature_floor is not None,
                "temperature_offset", "describes temperature tuning: set temperature_floor "
                                      "and temperature_scale")
        require(self.temperature_offset is None or (
            isinstance(self.temperature_offset, int) and not isinstance(
                self.temperature_offset, bool) and self.temperature_offset >= 0),
            "temperature_offset", f"expected an integer >= 0, got {self.temperature_offset!r}")
        require(self.qk_norm != "l2" or self.rope, "qk_norm",
                "l2 normalises q and k after RoPE, on RoPE layers only (Llama 4): leave it "
                "out on a rope: false layer")
        if self.qk_norm not in QK_NORMS_WITH_WEIGHTS:
            require(self.qk_norm_kind is None, "qk_norm_kind",
                    f"describes a QK-norm with a weight (qk_norm {', '.join(QK_NORMS_WITH_WEIGHTS)}"
                    f"), here qk_norm is {self.qk_norm or 'null'}")
        require(not self.qk_norm_after_rope or self.qk_norm in QK_NORMS_WITH_WEIGHTS,
                "qk_norm_after_rope", "moves a QK-norm with a weight (qk_norm "
                f"{', '.join(QK_NORMS_WITH_WEIGHTS)}) after RoPE, here qk_norm is "
                f"{self.qk_norm or 'null'} (l2 always follows RoPE)")
        require(not self.qk_norm_bias or self.qk_norm_kind == "layernorm", "qk_norm_bias",
                "only a layernorm QK-norm has a bias: set qk_norm_kind: layernorm")
        if self.kind == "gqa":
            require(self.n_kv_heads is not None, "n_kv_heads", "required when kind is 'gqa'")
            require(self.head_dim is not None, "head_dim",
                    "required when kind is 'gqa' (often d_model / n_heads, but not always)")
            require(self.n_heads % self.n_kv_heads == 0, "n_kv_heads",
                    f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
            absent_unless(self, "kind", "mla", *self.MLA_KEYS, "indexer", "rope_half_split",
                          "head_gate")
            self._check_rotary_fraction()
        else:
            absent_unless(self, "kind", "gqa", "qk_norm", "qk_norm_kind", "qk_norm_after_rope",
                          "fused_qkv", "rotary_fraction", "sinks", "chunk", "output_gate",
                          "softcap", "clip_qkv", "sub_norm")
            require(self.rope, "rope", "MLA's decoupled key (qk_rope_head_dim) needs RoPE: "
                                       "rope: false applies to gqa attention only")
            for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
                require(getattr(self, name) is not None, name, "required when kind is 'mla'")
            require(self.n_kv_heads in (None, self.n_heads), "n_kv_heads",
                    "MLA gives every query head its own keys and values: omit it or set it to n_heads")
            require(self.head_dim is None, "head_dim",
                    "not used by MLA (q/k use qk_nope_head_dim + qk_rope_head_dim, v uses v_head_dim)")
            require(self.qk_rope_head_dim % 2 == 0, "qk_rope_head_dim", "must be even for RoPE")
            self._check_indexer()

    def _check_indexer(self) -> None:
        ix = self.indexer
        if ix is None:
            return
        require(self.q_lora_rank is not None, "indexer",
                "the indexer's queries come from the query latent (wq_b reads q_a_layernorm's "
                "output): it needs q_lora_rank")
        require(self.window is None, "indexer",
                "an indexed layer selects among every cached key: leave the window out")
        require(ix.head_dim is None or ix.head_dim >= self.qk_rope_head_dim, "indexer.head_dim",
                f"the indexer rotates the first qk_rope_head_dim ({self.qk_rope_head_dim}) dims "
                f"of its keys, so head_dim must be at least that, got {ix.head_dim}")

    def _check_rotary_fraction(self) -> None:
        f = self.rotary_fraction
        if f is None:
            return
        require(0 < f <= 1, "rotary_fraction", f"must be in (0, 1], got {f}")
        dims = int(self.head_dim * f)  # transformers' rule: int(head_dim * partial_rotary_factor)
        require(dims > 0 and dims % 2 == 0, "rotary_fraction",
                f"head_dim ({self.head_dim}) x rotary_fraction ({f}) gives {dims} rotated dims; "
                "RoPE rotates pairs, so it must be a positive even number")

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
    def span(self) -> int | None:
        """The window or the chunk: what caps the tokens a layer holds (null: none)."""
        return self.window or self.chunk

    def tokens_held(self, seq_len: int) -> int:
        """Tokens this layer caches at context seq_len (the peak, during a step): the window or
        the chunk caps them. The one home of the cap: the estimators and the builder's caches
        both call it."""
        return min(seq_len, self.span) if self.span else seq_len

    def keys_read(self, seq_len: int) -> int:
        """Keys the query at position seq_len - 1 attends to (itself included): a window's last
        min(seq_len, window), the current chunk's (seq_len - 1) % chunk + 1, else all; an
        indexed layer (DSA) at most its indexer's topk of them. The one home of the rule:
        decode FLOPs read it, prefill's causal pairs sum it."""
        if self.chunk:
            return (seq_len - 1) % self.chunk + 1
        held = self.tokens_held(seq_len)
        return min(held, self.indexer.topk) if self.indexer else held

    def keys_scored(self, seq_len: int) -> int:
        """Keys the layer's own indexer scores for the query at seq_len - 1: every key it could
        attend to (0 without an indexer of its own: dense, or a shared one)."""
        return self.tokens_held(seq_len) if self.scores_keys else 0

    @property
    def scores_keys(self) -> bool:
        """Whether the layer runs an indexer of its own (DSA, not shared)."""
        return self.indexer is not None and not self.indexer.shared

    @property
    def rotary_dim(self) -> int:
        """Dims RoPE rotates per head: MLA's decoupled qk_rope_head_dim, else the first
        int(head_dim * rotary_fraction) (transformers' rule), the whole head when null."""
        if self.kind == "mla":
            return self.qk_rope_head_dim
        return int(self.head_dim * self.rotary_fraction) if self.rotary_fraction else self.head_dim

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
