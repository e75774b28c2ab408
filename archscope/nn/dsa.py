"""DeepSeek Sparse Attention (DSA): the lightning indexer an MLA layer may carry, and the
attention it restricts (DeepSeek-V3.2-Exp; GLM-5; transformers' DeepseekV32Indexer and
GlmMoeDsaIndexer).

Per token the indexer makes one key, k = RoPE(LayerNorm(wk(x))), RoPE on its first
qk_rope_head_dim dims (half-split pairs for DeepSeek-V3.2, adjacent pairs for GLM-5; the MLA's
own cos/sin, YaRN's factor included), and caches it beside the latent. Each query's n_heads
indexer queries come from the query latent (wq_b of q_a_layernorm's output), rotated alike,
and score every key the query may see:

    I(t, s) = sum_j w(t, j) * ReLU(q(t, j) . k(s) / sqrt(head_dim)),  w = weights_proj(x) / sqrt(n_heads)

in fp32 (transformers' bf16 path computes the same; DeepSeek's kernel quantises to fp8 after a
Hadamard rotation, which preserves the dot products). The layer attends to the topk best
keys (all, while fewer are visible). A layer whose indexer is shared (GLM-5) attends to the
keys the last layer with an indexer of its own selected (`link_shared_indexers`).

How it attends (nn/mla.py): a single query per sequence (a decode step) gathers its selected
latents and RoPE keys and attends over those only, in either MLA form, so a step reads
min(context, topk) keys (and `recompute` decompresses only those); several queries (a prefill,
a chunked continuation) attend densely under a mask of the causal and selected pairs, as
transformers' eager and SDPA paths do (the FLOPs of the whole square: --attention-flops full).
Ties among equal scores are broken by torch.topk, as in transformers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archscope.nn.attention import one_query
from archscope.nn.cache import attention_mask
from archscope.nn.linear import Linear
from archscope.nn.rope import apply_rope, apply_rope_interleaved
from archscope.spec.schema import AttentionSpec, ModelSpec

KEY_NORM_EPS = 1e-6  # transformers and DeepSeek build k_norm with eps 1e-6 whatever the model's


class Indexer(nn.Module):
    """The lightning indexer's modules, under transformers' names (self_attn.indexer.*)."""

    def __init__(self, spec: ModelSpec, attn: AttentionSpec):
        super().__init__()
        ix, d = attn.indexer, spec.d_model
        self.n_heads, self.head_dim, self.topk = ix.n_heads, ix.head_dim, ix.topk
        self.rope_dim = attn.qk_rope_head_dim
        self.wq_b = Linear(attn.q_lora_rank, ix.n_heads * ix.head_dim, bias=False)
        self.wk = Linear(d, ix.head_dim, bias=False)
        self.k_norm = nn.LayerNorm(ix.head_dim, eps=KEY_NORM_EPS)
        self.weights_proj = Linear(d, ix.n_heads, bias=False)
        self.rotate = apply_rope_interleaved if ix.interleaved else apply_rope

    def _rotated(self, y, cos, sin):
        """RoPE on the first rope_dim dims of y [..., T, (heads,) head_dim]; the rest pass."""
        r = self.rope_dim
        return torch.cat((self.rotate(y[..., :r], cos, sin), y[..., r:]), dim=-1)

    def key(self, x, rope):
        """Each token's indexer key [B, T, head_dim]: what the cache keeps."""
        return self._rotated(self.k_norm(self.wk(x)), *rope)

    def scores(self, x, q_latent, rope, keys):
        """I(t, s) [B, T, S] in fp32 for the queries of x [B, T, d] over keys [B, S, head_dim]."""
        b, t, _ = x.shape
        cos, sin = rope
        q = self.wq_b(q_latent).view(b, t, self.n_heads, self.head_dim)
        q = self._rotated(q, cos[:, None], sin[:, None])  # one angle per position, every head
        per_head = torch.matmul(q.float(), keys.float().transpose(-1, -2).unsqueeze(1))
        per_head = F.relu(per_head * self.head_dim ** -0.5)  # [B, T, heads, S]
        weights = self.weights_proj(x).float() * self.n_heads ** -0.5  # [B, T, heads]
        return torch.matmul(weights.unsqueeze(-2), per_head).squeeze(-2)

    def select(self, x, q_latent, rope, keys, start, key_pos):
        """The topk keys [B, T, k] each query attends to, k = min(topk, keys held): the best
        scores among the keys it may see (a key past the query, or an empty slot, never)."""
        index = self.scores(x, q_latent, rope, keys)
        t = x.shape[1]
        if t > 1 or key_pos is not None:
            query_pos = torch.arange(t, device=x.device) + start
            seen = attention_mask(query_pos, query_pos if key_pos is None else key_pos, None)
            index = index.masked_fill(~seen, float("-inf"))
        return index.topk(min(self.topk, index.shape[-1]), dim=-1).indices


def gathered(selected, key_pos, *held):
    """A single query's selected keys: each held [B, S, C] tensor's rows selected[:, 0] ->
    [B, k, C], and a [B, 1, 1, k] mask of the ones holding a token where `key_pos` marks empty
    slots (a device-held position reads every slot), else None."""
    rows = selected[:, 0]  # [B, k]
    out = [h.gather(1, rows[..., None].expand(-1, -1, h.shape[-1])) for h in held]
    valid = None if key_pos is None else (key_pos[rows] >= 0)[:, None, None, :]
    return out, valid


def attend_one(q, k, v, scale: float, gqa: bool, valid=None):
    """One query per sequence over its gathered keys (each sequence its own): the CPU's two
    matmuls (nn/attention.py one_query) or SDPA, masking empty slots where `valid` says."""
    if q.device.type == "cpu":
        return one_query(q, k, v, scale, valid)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=valid, scale=scale, enable_gqa=gqa)


def selection_mask(selected, n_keys: int, start, key_pos):
    """[B, 1, T, S] bool: the pairs several queries attend to, causal and selected."""
    b, t, _ = selected.shape
    query_pos = torch.arange(t, device=selected.device) + start
    causal = attention_mask(query_pos, query_pos if key_pos is None else key_pos, None)
    chosen = torch.zeros(b, t, n_keys, dtype=torch.bool, device=selected.device)
    return (chosen.scatter(-1, selected, True) & causal)[:, None]


def attend_masked(q, k, v, mask, scale: float, gqa: bool):
    """Several queries, densely, under `mask` (selection_mask): every pair multiplied."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale, enable_gqa=gqa)


def link_shared_indexers(mixers) -> None:
    """Point each layer whose indexer is shared at the last layer before it with one of its
    own (the spec checks there is one), which then keeps its selection for it. `mixers`: each
    layer's mixer module in order (None for a layer without one)."""
    source = None
    for mixer in mixers:
        if getattr(mixer, "indexer", None) is not None:
            source = mixer
        elif getattr(mixer, "shares_selection", False):
            mixer.selection_source = (source,)  # a tuple: not registered as a child module
            source.keeps_selection = True
