"""DeepSeek Sparse Attention's lightning indexer, a component of an MLA layer (kinds/mla.py):
its parts, cache, FLOPs and wording (DeepSeek-V3.2-Exp's report, eq. 1; transformers'
DeepseekV32Indexer, GlmMoeDsaIndexer).

Modules (under the attention's `indexer`, in transformers' order): wq_b q_lora_rank ->
n_heads*head_dim (from the query latent, q_a_layernorm's output), wk d -> head_dim, k_norm
LayerNorm(head_dim) with weight and bias (eps 1e-6), weights_proj d -> n_heads. No bias.

Per token the indexer caches one key of head_dim (RoPE on its first qk_rope_head_dim dims):
the layer's cache is kv_lora_rank + qk_rope_head_dim + head_dim elements per token (576 + 128
= 704 for DeepSeek-V3.2). Each query scores every key it may see,
I(t, s) = sum_j w(t, j) * ReLU(q(t, j) . k(s) / sqrt(head_dim)), w = weights_proj(x) /
sqrt(n_heads): n_heads * head_dim + n_heads multiply-adds per query-key pair (the two matmuls
of transformers' forward), and attention then reads only the topk best keys
(AttentionSpec.keys_read caps the pairs attention counts; keys_scored counts these).
A shared indexer (GLM-5) has no module, no cache and no scoring: it attends to the keys the
last layer with an indexer of its own selected.
"""

from __future__ import annotations

from archscope.kinds.base import linear, norm
from archscope.units import commas


def parts(attn, d: int) -> list:
    """The indexer's projections and key norm, named as the built module registers them."""
    ix = attn.indexer
    if ix is None or ix.shared:
        return []
    hd, heads = ix.head_dim, ix.n_heads
    return [linear("attention.indexer.wq_b", attn.q_lora_rank, heads * hd, module="indexer.wq_b"),
            linear("attention.indexer.wk", d, hd, module="indexer.wk"),
            norm("attention.indexer.k_norm", hd, bias=True, module="indexer.k_norm",
                 module_type="LayerNorm"),
            linear("attention.indexer.weights_proj", d, heads, module="indexer.weights_proj")]


def cache_elements(attn) -> int:
    """Indexer keys per token: head_dim for a layer with its own indexer, else 0."""
    return attn.indexer.head_dim if attn.scores_keys else 0


def scoring_macs(attn) -> int:
    """Multiply-adds per scored query-key pair: q . k for each indexer head, then the heads'
    weighted sum (0 without an indexer of its own)."""
    return attn.indexer.n_heads * (attn.indexer.head_dim + 1) if attn.scores_keys else 0


def text(attn) -> str:
    """', DSA indexer 64×128, top 2,048' for the one-line description and labels."""
    ix = attn.indexer
    if ix is None:
        return ""
    if ix.shared:
        return f", DSA top {commas(ix.topk)} (shared selection)"
    return f", DSA indexer {ix.n_heads}×{ix.head_dim}, top {commas(ix.topk)}"


def cache_formula(attn) -> str:
    return f" + {attn.indexer.head_dim} (indexer key)" if attn.scores_keys else ""


def draw(g, a, q_latent: str, cache: str, sdpa: str) -> list[str]:
    """The indexer's nodes: its query from the q latent, its key into the cache, its scores
    over every cached key choosing the keys attention reads. Returns the nodes the layer's
    input enters (wk and weights_proj)."""
    ix = a.indexer
    if ix is None:
        return []
    if ix.shared:
        g.edge(g.node("shared", f"top-{commas(ix.topk)} selection of the last indexed layer"),
               sdpa, "selected keys")
        return []
    rot = "adjacent pairs" if ix.interleaved else "half-split pairs"
    q = g.node("ix_q", f"indexer wq_b<br/>{commas(a.q_lora_rank)} → {ix.n_heads}×{ix.head_dim}")
    k = g.node("ix_k", f"indexer wk + LayerNorm<br/>→ {ix.head_dim}, RoPE on "
                       f"{a.qk_rope_head_dim} dims ({rot})")
    w = g.node("ix_w", f"indexer weights_proj<br/>→ {ix.n_heads} head weights")
    score = g.node("ix_score", f"Σ_heads w·ReLU(q·k/√{ix.head_dim}) over every cached key"
                               f"<br/>keep the top {commas(ix.topk)}")
    g.edge(q_latent, q)
    g.edge(k, cache, "index key")
    g.edge(cache, score, "index keys")
    g.edge(q, score)
    g.edge(w, score)
    g.edge(score, sdpa, "selected keys")
    return [k, w]


def explain(a) -> str:
    """A sentence on what the indexer reads, caches and selects, in the model's numbers."""
    ix = a.indexer
    if ix is None:
        return ""
    if ix.shared:
        return (f" DeepSeek Sparse Attention: this layer attends only to the {commas(ix.topk)} "
                "keys the last indexed layer selected (no indexer of its own).")
    return (f" DeepSeek Sparse Attention: a lightning indexer of {ix.n_heads} heads × "
            f"{ix.head_dim} (queries from the q latent, one key per token, cached: "
            f"+{ix.head_dim} elements per token) scores every cached key, "
            f"Σ_j w_j·ReLU(q_j·k/√{ix.head_dim}), {ix.n_heads} × ({ix.head_dim} + 1) = "
            f"{commas(scoring_macs(a))} multiply-adds per query-key pair, and attention reads "
            f"only the top {commas(ix.topk)} keys.")
