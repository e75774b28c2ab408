"""What a Gated DeltaNet layer (Qwen3-Next's `linear_attention`) weighs, holds and costs.

Pure arithmetic on a GatedDeltaNetSpec (`g` below) and d_model (`d`); no torch. Notation:
H_k = n_key_heads, H_v = n_value_heads, d_k = key_head_dim, d_v = value_head_dim,
K = conv_kernel, C = chunk_size, key_dim = H_k*d_k, value_dim = H_v*d_v,
conv_dim = 2*key_dim + value_dim.

FLOPs follow archscope's convention: 2 per multiply-add, matmuls only (the depthwise conv is
counted too: it is multiply-adds, and FlopCounterMode counts it). Left out: L2 norms, the
gated RMSNorm, silu, sigmoid, softplus, exp, the state's elementwise decay. Per sequence:
times batch for a batch.
"""

from __future__ import annotations

from archscope.kinds.base import Part, linear, norm

RECURRENT_BYTES = 4  # transformers' torch path and cache keep the DeltaNet state in fp32


def parts(g, d: int, prefix: str = "linear_attn") -> list[Part]:
    """The layer's parameters and per-token multiply-adds, by transformers' module names:

        in_proj_qkvz  d * (2*key_dim + 2*value_dim)        q, k, v and the gate z
        in_proj_ba    d * 2*H_v                            beta's and the decay's inputs
        conv1d        conv_dim * K                         depthwise, no bias; K MACs a channel
        dt_bias       H_v
        A_log         H_v
        norm          d_v                                  one weight shared by the heads
        out_proj      value_dim * d
    """
    conv = Part(f"{prefix}.conv1d", g.conv_dim * g.conv_kernel, g.conv_dim * g.conv_kernel)
    return [linear(f"{prefix}.in_proj_qkvz", d, g.qkvz_width),
            linear(f"{prefix}.in_proj_ba", d, g.ba_width),
            conv,
            Part(f"{prefix}.dt_bias", g.n_value_heads),
            Part(f"{prefix}.A_log", g.n_value_heads),
            norm(f"{prefix}.norm", g.value_head_dim),
            linear(f"{prefix}.out_proj", g.value_dim, d)]


def params(g, d: int) -> int:
    """d*(2*key_dim + 2*value_dim) + d*2*H_v + conv_dim*K + 2*H_v + d_v + value_dim*d."""
    return sum(p.params for p in parts(g, d))


def state_elements(g) -> dict[str, int]:
    """Per sequence, constant in the context:

        conv       conv_dim * K        the last K inputs of q, k and v (all K columns, as
                                       transformers' cache keeps them; the conv reads K - 1)
        recurrent  H_v * d_k * d_v     one d_k x d_v matrix per value head
    """
    return {"conv": g.conv_dim * g.conv_kernel,
            "recurrent": g.n_value_heads * g.key_head_dim * g.value_head_dim}


def state_bytes(g, conv_bytes: int, batch: int = 1,
                recurrent_bytes: int = RECURRENT_BYTES) -> dict[str, int]:
    """batch * (conv_dim*K*conv_bytes + H_v*d_k*d_v*recurrent_bytes), by part. conv_bytes is
    the activations' dtype (the conv state takes the dtype of what enters the conv);
    recurrent_bytes is 4 by default: transformers computes and caches the state in fp32
    whatever the model's dtype (FLA's kernels return it in fp32 as well)."""
    elements = state_elements(g)
    return {"conv": batch * elements["conv"] * conv_bytes,
            "recurrent": batch * elements["recurrent"] * recurrent_bytes}


def _projections(g, d: int, tokens: int) -> dict[str, int]:
    """2 * tokens * MACs of the projections and the conv (their MACs per token, from parts)."""
    return {p.name.rpartition(".")[2]: 2 * tokens * p.macs for p in parts(g, d) if p.macs}


def decode_flops(g, d: int) -> dict[str, int]:
    """One new token, one step of the recurrence, by part:

        in_proj_qkvz  2 * d * (2*key_dim + 2*value_dim)
        in_proj_ba    2 * d * 2*H_v
        conv1d        2 * conv_dim * K
        state_read    2 * H_v*d_k*d_v      S'^T k: what the decayed state predicts for k
        state_write   2 * H_v*d_k*d_v      S' + k (beta (v - S'^T k))^T: a rank-1 update
        output        2 * H_v*d_k*d_v      S^T q
        out_proj      2 * value_dim * d
    The decay exp(g) S (H_v*d_k*d_v multiplies, no adds) is elementwise: left out.
    """
    per_state = 2 * g.n_value_heads * g.key_head_dim * g.value_head_dim
    flops = _projections(g, d, 1)
    out_proj = flops.pop("out_proj")
    return {**flops, "state_read": per_state, "state_write": per_state, "output": per_state,
            "out_proj": out_proj}


def n_chunks(g, tokens: int, chunk: int | None = None) -> int:
    """Chunks the prefill runs: ceil(tokens / C), the last one padded to C tokens."""
    chunk = chunk or g.chunk_size
    return -(-tokens // chunk)


def prefill_flops(g, d: int, tokens: int, chunk: int | None = None) -> dict[str, int]:
    """A prompt of `tokens` (from a zero state) by the chunked algorithm, by part.

    Convention: whole chunks of C tokens (C = chunk or g.chunk_size), the last padded, and the
    chunk's square matrices computed whole, triangles included, as transformers' torch path
    and FLA's chunked kernels run them. N = ceil(tokens / C) chunks, P = N*C padded tokens:

        in_proj_qkvz, in_proj_ba, conv1d, out_proj   as decode, times tokens (not padded)
        intra_kk     2 * P*C*d_k * H_v     beta k k^T within each chunk (the UT system)
        intra_qk     2 * P*C*d_k * H_v     q k^T within each chunk
        ut_solve     N * C*(C-1) * (d_k + d_v) * H_v
                                           two unit-triangular solves per chunk, for v and
                                           for k: C*(C-1)/2 MACs a right-hand column
        state_read   2 * 2*P*d_k*d_v * H_v  w S0 (corrections) and q S0 (outputs) each chunk
        intra_av     2 * P*C*d_v * H_v     the chunk's scores times its corrections
        state_write  2 * P*d_k*d_v * H_v   k^T times the corrections into the state
    FlopCounterMode counts every term but ut_solve (it has no rule for triangular solves),
    and counts the conv over padded outputs (see the parity test).
    """
    chunk = chunk or g.chunk_size
    n = n_chunks(g, tokens, chunk)
    padded = n * chunk
    h, dk, dv = g.n_value_heads, g.key_head_dim, g.value_head_dim
    flops = _projections(g, d, tokens)
    out_proj = flops.pop("out_proj")
    return {**flops,
            "intra_kk": 2 * padded * chunk * dk * h,
            "intra_qk": 2 * padded * chunk * dk * h,
            "ut_solve": n * chunk * (chunk - 1) * (dk + dv) * h,
            "state_read": 2 * 2 * padded * dk * dv * h,
            "intra_av": 2 * padded * chunk * dv * h,
            "state_write": 2 * padded * dk * dv * h,
            "out_proj": out_proj}
