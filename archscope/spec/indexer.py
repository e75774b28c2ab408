"""DeepSeek Sparse Attention's lightning indexer, a part of an MLA layer's attention spec
(`attention.indexer`), and the check that a shared indexer has a layer to share from."""

from __future__ import annotations

from dataclasses import dataclass

from archscope.spec.checks import one_spelling, positive, require


@dataclass(frozen=True)
class IndexerSpec:
    """DeepSeek Sparse Attention's lightning indexer on an MLA layer (DeepSeek-V3.2, GLM-5;
    HF index_n_heads, index_head_dim, index_topk): per token one key of `head_dim`
    (`wk`, a LayerNorm with bias, RoPE on its first qk_rope_head_dim dims), cached beside the
    latent; each query's `n_heads` indexer heads (`wq_b` from the query latent) score every
    cached key, ReLU(q.k / sqrt(head_dim)) weighted per head (`weights_proj`) and summed, and
    the layer's attention reads only the `topk` best keys.

    `shared` (GLM-5's "shared" indexer_types): the layer has no indexer of its own and attends
    to the keys the last layer with one selected; n_heads, head_dim and interleaved are then
    left out. `interleaved`: the indexer's RoPE rotates adjacent pairs (GLM-5); null or false,
    the half-split pairs of rotate_half (DeepSeek-V3.2), whatever MLA's own rotation."""

    topk: int
    n_heads: int | None = None
    head_dim: int | None = None
    interleaved: bool | None = None
    shared: bool | None = None

    def __post_init__(self) -> None:
        one_spelling(self, "interleaved")
        one_spelling(self, "shared")

    def validate(self) -> None:
        positive(self, "topk", "n_heads", "head_dim")
        if self.shared:
            for name in ("n_heads", "head_dim", "interleaved"):
                require(getattr(self, name) is None, name,
                        "a shared indexer reuses another layer's selection and has no heads of "
                        "its own: leave it out")
        else:
            for name in ("n_heads", "head_dim"):
                require(getattr(self, name) is not None, name,
                        "required for a layer's own indexer (or shared: true)")


def check_shared_indexers(layers, model_attention) -> None:
    """A shared indexer (GLM-5) attends to what the last layer before it with an indexer of its
    own selected: there must be one, picking as many keys. `layers`: the plan, in order."""
    source = None
    for layer in layers:
        ix = layer.attention.indexer if layer.attention is not None else None
        if ix is None or not ix.shared:
            source = ix or source
            continue
        key = "attention.indexer.shared" if layer.attention is model_attention else "layers"
        require(source is not None, key, f"layer {layer.index}'s indexer is shared, but no layer "
                "before it has an indexer of its own to share")
        require(source.topk == ix.topk, key, f"layer {layer.index} shares a selection of "
                f"{source.topk} keys but says topk {ix.topk}")
