"""The gated delta rule in plain torch: one step at a time (decode) and by chunks (prefill).

Per value head the state S is a key_head_dim x value_head_dim matrix. For token t, with q and
k L2-normalised (q also scaled by key_head_dim^-1/2), decay g_t <= 0 (log space) and write
strength beta_t in (0, 1) (Yang, Kautz and Hatamizadeh, "Gated Delta Networks", 2024):

    S' = exp(g_t) S                     forget
    S  = S' + k_t (beta_t (v_t - S'^T k_t))^T    write the correction to what S' predicts for k_t
    o_t = S^T q_t                       read

The functions take fp32 tensors laid out [batch, heads, tokens, dim] (beta without the last
axis; g too, except with a decay per key channel: `recurrent_step` and `chunked_per_channel`) and the state [batch, heads, key_head_dim, value_head_dim] in fp32, as transformers'
torch path keeps it. Every product is a matmul, so FlopCounterMode sees the whole cost (the two
triangular solves of the chunked form excepted: the counter has no rule for them).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


# transformers keeps the delta rule's recurrent state in fp32 whatever the model's dtype
RECURRENT_DTYPE = torch.float32


class DeltaRuleState:
    """One layer's state for `batch` sequences, allocated once (a fixed address, like the
    static KV cache): conv [B, conv_dim, conv_kernel] in the activations' dtype, recurrent
    [B, heads, key_dim, value_dim] in fp32 (Gated DeltaNet's, Kimi Delta Attention's)."""

    def __init__(self, batch: int, conv: tuple[int, int], recurrent: tuple[int, int, int],
                 device, dtype: torch.dtype):
        self.conv = torch.zeros(batch, *conv, device=device, dtype=dtype)
        self.recurrent = torch.zeros(batch, *recurrent, device=device, dtype=RECURRENT_DTYPE)

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.conv, self.recurrent))

    def reset(self) -> None:
        """A new sequence starts from zeros (what a fresh state holds)."""
        self.conv.zero_()
        self.recurrent.zero_()


def l2_normalize(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(|x|^2 + eps) over the last axis: eps inside the root, where FLA and
    transformers put it, so small vectors come out the same."""
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


def recurrent_step(q, k, v, g, beta, state):
    """One token (tokens axis of length 1): the recurrence above as three matmuls per head.
    Returns (output [B, H, 1, dv], new state)."""
    # g [B, H, 1]: one factor per head; [B, H, 1, d_k] (Kimi's per-channel decay): one per
    # row of the state
    state = state * (g.exp()[..., None] if g.dim() == 3 else g.exp().transpose(-1, -2))
    correction = (v - k @ state) * beta[..., None]
    state = state + k.transpose(-1, -2) @ correction
    return q @ state, state


def chunked(q, k, v, g, beta, state, chunk: int):
    """Tokens in chunks of `chunk`: within a chunk, the writes of the recurrence solved at
    once (the WY / UT form of DeltaNet's parallel algorithm); across chunks, the state carried.

    Within a chunk, with gamma_i the decay summed from the chunk's start through token i and
    the state S0 it starts from, the corrections d_i written by the recurrence satisfy

        d_i + sum_{j<i} beta_i exp(gamma_i - gamma_j) (k_i . k_j) d_j
            = beta_i v_i - beta_i exp(gamma_i) S0^T k_i

    a unit lower-triangular system (I + A) d = u - w S0, solved once for v and once for k. Then
    o_i = exp(gamma_i) S0^T q_i + sum_{j<=i} exp(gamma_i - gamma_j) (q_i . k_j) d_j, and the next
    chunk starts from exp(gamma_C) S0 + sum_j exp(gamma_C - gamma_j) k_j d_j^T.

    The tokens are padded to whole chunks with k = v = q = 0, beta = 0, g = 0: a padded token
    writes nothing and decays nothing, so the state is exact; its outputs are dropped.
    """
    batch, heads, tokens, _ = k.shape
    pad = -tokens % chunk
    if pad:
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        g, beta = (F.pad(x, (0, pad)) for x in (g, beta))
    n_chunks = (tokens + pad) // chunk

    def by_chunk(x):
        return x.reshape(batch, heads, n_chunks, chunk, *x.shape[3:])

    q, k, v, g, beta = map(by_chunk, (q, k, v, g, beta))
    gamma = g.cumsum(-1)
    # decay from token j to token i of a chunk, for j <= i; above the diagonal it is masked
    # before the exp, where it would grow without bound
    earlier = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).tril()
    decay = (gamma[..., :, None] - gamma[..., None, :]).masked_fill(~earlier, float("-inf")).exp()

    k_beta = k * beta[..., None]
    system = (k_beta @ k.transpose(-1, -2)) * decay  # A, and beta_i on the diagonal, ignored
    u = torch.linalg.solve_triangular(system, v * beta[..., None], upper=False, unitriangular=True)
    w = torch.linalg.solve_triangular(system, k_beta * gamma.exp()[..., None], upper=False,
                                      unitriangular=True)
    scores = (q @ k.transpose(-1, -2)) * decay  # (q_i . k_j) decayed, j <= i
    q_from_start = q * gamma.exp()[..., None]  # reads S0 decayed to token i
    k_to_end = k * (gamma[..., -1:] - gamma).exp()[..., None]  # writes decayed to the chunk end
    chunk_decay = gamma[..., -1].exp()[..., None, None]

    out = torch.empty_like(v)
    for c in range(n_chunks):  # only this carry is sequential
        corrections = u[:, :, c] - w[:, :, c] @ state
        out[:, :, c] = q_from_start[:, :, c] @ state + scores[:, :, c] @ corrections
        state = state * chunk_decay[:, :, c] + k_to_end[:, :, c].transpose(-1, -2) @ corrections
    return out.reshape(batch, heads, -1, v.shape[-1])[:, :, :tokens], state


def chunked_per_channel(q, k, v, g, beta, state, chunk: int):
    """`chunked` with a decay per key channel (Kimi Delta Attention): g [B, H, T, d_k], and the
    forget step S' = diag(exp(g_t)) S. With gamma_i the per-channel decay summed from the
    chunk's start through token i, the pair (i, j) decays channel by channel, so the chunk's
    k_i . k_j and q_i . k_j become sums over the channels of k_i k_j exp(gamma_i - gamma_j)
    (j <= i; masked before the exp above the diagonal). The rest is `chunked`'s: the same
    unit-triangular system for the corrections, and the state carried across chunks.
    Padding is `chunked`'s too (zeros: a padded token writes and decays nothing)."""
    batch, heads, tokens, _ = k.shape
    pad = -tokens % chunk
    if pad:
        q, k, v, g = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v, g))
        beta = F.pad(beta, (0, pad))
    n_chunks = (tokens + pad) // chunk

    def by_chunk(x):
        return x.reshape(batch, heads, n_chunks, chunk, *x.shape[3:])

    q, k, v, g, beta = map(by_chunk, (q, k, v, g, beta))
    gamma = g.cumsum(-2)  # [B, H, N, C, d_k]
    earlier = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).tril()
    # [B, H, N, C, C, d_k]: channel-wise decay from token j to token i
    decay = (gamma[..., :, None, :] - gamma[..., None, :, :]).masked_fill(
        ~earlier[..., None], float("-inf")).exp()

    def decayed(a, b):  # sum_d a_i[d] decay_ij[d] b_j[d]: a (1 x d_k) @ (d_k x 1) per (i, j),
        # a matmul FlopCounterMode counts (2 * C*C*d_k a chunk, the estimate's intra terms)
        return ((a[..., :, None, None, :] * decay[..., None, :]) @ b[..., None, :, :, None])[
            ..., 0, 0]

    k_beta = k * beta[..., None]
    system = decayed(k_beta, k)  # A, and beta_i |k_i|^2 on the diagonal, ignored
    u = torch.linalg.solve_triangular(system, v * beta[..., None], upper=False, unitriangular=True)
    w = torch.linalg.solve_triangular(system, k_beta * gamma.exp(), upper=False,
                                      unitriangular=True)
    scores = decayed(q, k)
    q_from_start = q * gamma.exp()
    k_to_end = k * (gamma[..., -1:, :] - gamma).exp()
    chunk_decay = gamma[..., -1, :].exp()[..., None]  # [B, H, N, d_k, 1]

    out = torch.empty_like(v)
    for c in range(n_chunks):  # only this carry is sequential
        corrections = u[:, :, c] - w[:, :, c] @ state
        out[:, :, c] = q_from_start[:, :, c] @ state + scores[:, :, c] @ corrections
        state = state * chunk_decay[:, :, c] + k_to_end[:, :, c].transpose(-1, -2) @ corrections
    return out.reshape(batch, heads, -1, v.shape[-1])[:, :, :tokens], state


def advance(q, k, v, g, beta, state, chunk: int):
    """The delta rule over one call's tokens, q, k [B, H, T, d_k], v [B, H, T, d_v]: the
    one-step recurrence for one token, the chunked form for more, with a decay per head
    (g [B, H, T]) or per key channel (g [B, H, T, d_k]: `chunked_per_channel`). It starts from
    `state.recurrent` [B, H, d_k, d_v] and writes the new one back there; `state` None is a
    fresh zero state, kept nowhere. Returns the output [B, H, T, d_v]."""
    batch, heads, tokens, key_dim = q.shape
    recurrent = (q.new_zeros(batch, heads, key_dim, v.shape[-1]) if state is None
                 else state.recurrent)
    if tokens == 1:
        out, recurrent = recurrent_step(q, k, v, g, beta, recurrent)
    else:
        scan = chunked if g.dim() == 3 else chunked_per_channel
        out, recurrent = scan(q, k, v, g, beta, recurrent, chunk)
    if state is not None:
        state.recurrent.copy_(recurrent)
    return out
