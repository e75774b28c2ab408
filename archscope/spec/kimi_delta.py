"""The spec's Kimi Delta Attention mixer (Kimi Linear's `linear_attention` layers, KDA).

A frozen dataclass whose field names are the YAML keys; beside each, the config.json key
transformers reads (KimiLinearConfig: its own keys, or the checkpoint's `linear_attn_config`
sub-dict, whose names are given second). It checks its own consistency in `validate`. What the
mixer holds per sequence is a constant-size state, not a per-token cache.

The layer (transformers' KimiLinearDeltaAttention): q_proj, k_proj and v_proj give n_heads
heads of head_dim each (q, k and v share one head count and one width); a causal depthwise conv
of conv_kernel taps with silu runs over q, k and v; a forget gate from a low-rank projection
(f_a_proj d -> head_dim, f_b_proj head_dim -> n_heads*head_dim, plus dt_bias per channel and
A_log per head) gives a decay per head AND per key channel (Gated DeltaNet's is one scalar per
head); b_proj gives beta per head; the gated delta rule updates one head_dim x head_dim state
per head; an RMSNorm gated by sigmoid(g) from a second low-rank projection (g_a_proj, g_b_proj)
and o_proj return to d_model. Ling's BailingHybridDeltaAttention is the same layer with
full-rank gate projections and a bounded decay (`gates`, `gate_lower_bound`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.spec.checks import positive, require

# transformers' torch path (chunk_kimi_delta_attention's chunk_size) and FLA's chunk_kda both
# run the prefill in chunks of 64 tokens; config.json has no key for it
DEFAULT_CHUNK = 64


@dataclass(frozen=True)
class KimiDeltaSpec:
    kind: Literal["kimi_delta"]
    n_heads: int  # linear_num_heads (linear_attn_config.num_heads): q/k/v heads, one state each
    head_dim: int  # linear_head_dim (linear_attn_config.head_dim): the state is head_dim square
    conv_kernel: int  # linear_conv_kernel_dim (linear_attn_config.short_conv_kernel_size)
    # tokens per chunk of the chunked prefill (an implementation convention, not a weight)
    chunk_size: int = DEFAULT_CHUNK
    # the forget and output gates' projections: low_rank (Kimi's KimiLinearForgetGate,
    # f_a_proj d -> head_dim -> f_b_proj, A_log held [1, 1, H, 1], and g_a_proj -> g_b_proj)
    # or full_rank (Ling's BailingHybridForgetGate: f_proj d -> qkv_dim, A_log held [H], and
    # g_proj d -> qkv_dim)
    gates: Literal["low_rank", "full_rank"] = "low_rank"
    # the decay's form: null, -exp(A_log) * softplus(f + dt_bias) (Kimi's); a negative number
    # b, Ling's bounded ("safe") gate b * sigmoid(exp(A_log) * (f + dt_bias)) (kda_lower_bound)
    gate_lower_bound: float | None = None

    def validate(self) -> None:
        positive(self, "n_heads", "head_dim", "conv_kernel", "chunk_size")
        require(self.gates in ("low_rank", "full_rank"), "gates",
                f"expected low_rank or full_rank, got {self.gates!r}")
        require(self.gate_lower_bound is None or self.gate_lower_bound < 0, "gate_lower_bound",
                f"a bound on a log-space decay is negative, got {self.gate_lower_bound}")

    @property
    def qkv_dim(self) -> int:
        """Width of q, of k, of v, of the forget gate and of o_proj's input: n_heads*head_dim."""
        return self.n_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the depthwise conv: q, k and v together."""
        return 3 * self.qkv_dim


# config.json key -> field, for the importer and exporter (chunk_size has no key)
HF_KEYS = {
    "linear_num_heads": "n_heads",
    "linear_head_dim": "head_dim",
    "linear_conv_kernel_dim": "conv_kernel",
}
# the checkpoint's linear_attn_config names for the same keys (KimiLinearConfig reads them first)
SUB_KEYS = {"num_heads": "linear_num_heads", "head_dim": "linear_head_dim",
            "short_conv_kernel_size": "linear_conv_kernel_dim"}
