"""What Qwen3-Next's gated full attention weighs, caches and costs: GQA with a q_proj twice as
wide (a per-head sigmoid gate on the output), per-head QK-norm, partial rotary.

Pure arithmetic; H = n_heads, H_kv = n_kv_heads, h = head_dim, d = d_model. FLOPs: 2 per
multiply-add, matmuls only; the gate's sigmoid and product, the norms, RoPE and softmax are
left out. RoPE's partial rotary changes no count.
"""

from __future__ import annotations

from archscope.kinds.base import Part, linear, norm


def parts(d: int, n_heads: int, n_kv_heads: int, head_dim: int, bias: bool = False,
          prefix: str = "self_attn") -> list[Part]:
    """q_proj d*2*H*h (queries and gates), k_proj and v_proj d*H_kv*h each, q_norm and k_norm
    h each (per head, shared by the heads), o_proj H*h*d; biases on all four when `bias`
    (config.json's attention_bias)."""
    q_width, kv_width = n_heads * head_dim, n_kv_heads * head_dim
    return [linear(f"{prefix}.q_proj", d, 2 * q_width, bias),
            linear(f"{prefix}.k_proj", d, kv_width, bias),
            linear(f"{prefix}.v_proj", d, kv_width, bias),
            norm(f"{prefix}.q_norm", head_dim),
            norm(f"{prefix}.k_norm", head_dim),
            linear(f"{prefix}.o_proj", q_width, d, bias)]


def cache_elements(n_kv_heads: int, head_dim: int) -> int:
    """Per token: 2 * H_kv * h, as GQA (the gate is recomputed, never cached)."""
    return 2 * n_kv_heads * head_dim


def decode_flops(d: int, n_heads: int, n_kv_heads: int, head_dim: int,
                 seq_len: int) -> dict[str, int]:
    """One new token reading seq_len keys (itself included):

        projections  2 * (d*2*H*h + 2*d*H_kv*h + H*h*d)
        scores       2 * H*h*seq_len      q k^T
        values       2 * H*h*seq_len      softmax(...) v
    """
    macs = sum(p.macs for p in parts(d, n_heads, n_kv_heads, head_dim))
    pair = 2 * n_heads * head_dim * seq_len
    return {"projections": 2 * macs, "scores": pair, "values": pair}


def prefill_flops(d: int, n_heads: int, n_kv_heads: int, head_dim: int, tokens: int,
                  causal: bool = True) -> dict[str, int]:
    """A prompt of `tokens`: projections times tokens; scores and values over the pairs a
    query reads: tokens*(tokens+1)/2 causal, tokens^2 `full` (what eager attention and
    FlopCounterMode count), each 2 * H*h per pair."""
    macs = sum(p.macs for p in parts(d, n_heads, n_kv_heads, head_dim))
    pairs = tokens * (tokens + 1) // 2 if causal else tokens * tokens
    pair = 2 * n_heads * head_dim * pairs
    return {"projections": 2 * macs * tokens, "scores": pair, "values": pair}
