"""The spec's Gated DeltaNet mixer (Qwen3-Next's `linear_attention` layers).

A frozen dataclass whose field names are the YAML keys; beside each, the config.json key
transformers reads (Qwen3NextConfig). It checks its own consistency in `validate`. What the
mixer holds per sequence is a constant-size state (a conv window and one matrix per value
head), not a per-token cache.

The layer: in_proj_qkvz gives q, k (n_key_heads x key_head_dim each), v and the output gate z
(n_value_heads x value_head_dim each); in_proj_ba gives per value head the write strength b
(beta = sigmoid(b)) and the decay input a; a causal depthwise conv of conv_kernel taps runs
over q, k and v; the gated delta rule updates the state; an RMSNorm gated by silu(z) and
out_proj return to d_model. Several value heads may share one key head (n_value_heads a
multiple of n_key_heads), as GQA shares K/V heads.

`projections` says how the input projections are laid out (the same weights, differently
arranged and named): "fused" (Qwen3-Next) in_proj_qkvz and in_proj_ba, rows grouped per key
head; "split" (Qwen3.5) in_proj_qkv (q of every key head, then k, then v), in_proj_z, in_proj_b
and in_proj_a, each head after head. Parameters, FLOPs and the state are the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.spec.checks import positive, require

# transformers' torch path (torch_chunk_gated_delta_rule) and FLA's chunked kernels both run
# the prefill in chunks of 64 tokens; config.json has no key for it
DEFAULT_CHUNK = 64


@dataclass(frozen=True)
class GatedDeltaNetSpec:
    # no defaults for the shape (config.json's are Qwen3-Next-80B's; a spec states its own)
    kind: Literal["gated_deltanet"]
    n_key_heads: int  # linear_num_key_heads: q/k heads
    n_value_heads: int  # linear_num_value_heads: v/z heads, one state matrix each
    key_head_dim: int  # linear_key_head_dim: a state matrix's rows
    value_head_dim: int  # linear_value_head_dim: a state matrix's columns
    conv_kernel: int  # linear_conv_kernel_dim: taps of the causal conv over q, k and v
    # tokens per chunk of the chunked prefill (a convention of the implementation, not a
    # weight): it changes the prefill's FLOPs and rounding, never the result in exact arithmetic
    chunk_size: int = DEFAULT_CHUNK
    # the input projections' layout (module doc): no config.json key, the family says it
    projections: Literal["fused", "split"] = "fused"

    def validate(self) -> None:
        positive(self, "n_key_heads", "n_value_heads", "key_head_dim", "value_head_dim",
                 "conv_kernel", "chunk_size")
        # transformers' fused projections are laid out per key head (its q, k, then the value
        # heads it serves), so the value heads must divide evenly among the key heads
        require(self.n_value_heads % self.n_key_heads == 0, "n_value_heads",
                f"must be a multiple of n_key_heads ({self.n_key_heads}): each key head serves "
                f"the same number of value heads, got {self.n_value_heads}")

    @property
    def heads_per_key(self) -> int:
        """Value heads that share one q/k head (1: one key head per value head)."""
        return self.n_value_heads // self.n_key_heads

    @property
    def key_dim(self) -> int:
        """Width of q and of k: n_key_heads * key_head_dim."""
        return self.n_key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        """Width of v, of z and of out_proj's input: n_value_heads * value_head_dim."""
        return self.n_value_heads * self.value_head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the depthwise conv: q, k and v together."""
        return 2 * self.key_dim + self.value_dim

    @property
    def qkvz_width(self) -> int:
        """in_proj_qkvz's output: q, k, v and the gate z."""
        return 2 * self.key_dim + 2 * self.value_dim

    @property
    def ba_width(self) -> int:
        """in_proj_ba's output: b and a, one each per value head."""
        return 2 * self.n_value_heads


# config.json key -> field, for the importer and exporter (chunk_size has no key)
HF_KEYS = {
    "linear_num_key_heads": "n_key_heads",
    "linear_num_value_heads": "n_value_heads",
    "linear_key_head_dim": "key_head_dim",
    "linear_value_head_dim": "value_head_dim",
    "linear_conv_kernel_dim": "conv_kernel",
}
