"""DeepSeek-V3.2 (transformers' `deepseek_v32`, DeepseekV32ForCausalLM): DeepSeek-V3 + DeepSeek
Sparse Attention, a lightning indexer on every layer (index_n_heads heads of index_head_dim,
RoPE on half-split pairs, its own cached key) whose top index_topk keys are the only ones
each query attends to (attention.indexer; kinds/indexer.py, nn/dsa.py).

Its config class derives from GLM-4.7-Flash's (Glm4MoeLiteConfig), not DeepSeek-V3's: the MoE
layers are those `mlp_layer_types` marks "sparse" (absent: all from first_k_dense_replace
on; DeepSeek's moe_layer_freq is not read), the query always has a latent (q_lora_rank), MLA
always rotates adjacent pairs (rope_interleave is not read) and `layer_types` may only say
indexed_attention. num_nextn_predict_layers (the MTP layer model.layers.61) is read when the
file has it; the class does not build it."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.deepseek_v2 import read as read_v2
from archscope.spec.families.deepseek_v3 import DEEPSEEK_V3, _deepseek_v3_moe
from archscope.spec.families.deepseek_v3 import write as write_v3
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _check_types
from archscope.spec.schema import ModelSpec

_MLP_TYPES = ("dense", "sparse")
_INDEXER = ("wq_b", "wk", "k_norm", "weights_proj")


def dense_layers(c: Keys, n: int) -> list[int]:
    """The layers `mlp_layer_types` marks dense (absent or null: the first
    first_k_dense_replace, the config class's default)."""
    types = c.get("mlp_layer_types", None)
    if types is None:
        return list(range(min(c.size("first_k_dense_replace", least=0), n)))
    if not isinstance(types, list) or len(types) != n:
        raise c.error("mlp_layer_types", f"expected a list of {n} entries (num_hidden_layers), "
                                         f"each dense or sparse, {what(types)}")
    for i, t in enumerate(types):
        if t not in _MLP_TYPES:
            raise c.error(f"mlp_layer_types[{i}]", f"expected dense or sparse, {what(t)}")
    return [i for i, t in enumerate(types) if t == "dense"]


def indexer(c: Keys, **extra) -> dict:
    return {"n_heads": c.size("index_n_heads"), "head_dim": c.size("index_head_dim"),
            "topk": c.size("index_topk"), **extra}


def read(c: Keys, interleaved: bool = False) -> dict:
    """DeepSeek-V3 with the indexer on every layer; `interleaved`: its RoPE on adjacent pairs
    (GLM-MoE-DSA's)."""
    if c.size("q_lora_rank", null=True) is None:
        raise c.error("q_lora_rank", "DeepSeek-V3.2's attention always has a query latent "
                                     "(its indexer reads it): null is not built by its class")
    types = c.get("layer_types", None)
    if types is not None:  # each layer's cache kind; its model attends one way only
        _check_types(c, types, c.size("num_hidden_layers"), allowed=("indexed_attention",),
                     why="DeepseekV32Model builds indexed attention only")
    out = read_v2(c, moe=_deepseek_v3_moe, mlp_bias=False, refused_by=None,
                  dense_layers=dense_layers)
    out["attention"]["indexer"] = indexer(c, **({"interleaved": True} if interleaved else {}))
    mtp = c.alias("num_nextn_predict_layers", "num_mtp_layers")
    return {**out, "mtp_layers": c.size(mtp, least=0, fallback=0)}


def indexers(s: ModelSpec, interleaved: bool | None = None):
    """The own-indexer spec every attention layer shares, checked: DeepseekV32Config has one
    index_n_heads/index_head_dim/index_topk for all layers (None: `s` has none)."""
    own = {layer.attention.indexer for layer in s.plan if layer.attention is not None
           and layer.attention.indexer is not None and not layer.attention.indexer.shared}
    missing = next((layer.index for layer in s.plan if layer.attention is None
                    or layer.attention.indexer is None), None)
    if missing is not None:
        raise SpecError(f"every layer of this class attends through an indexer; layer "
                        f"{missing} has none", key="attention.indexer")
    if len(own) != 1:
        raise SpecError("this class has one indexer shape for every layer; the spec has "
                        f"{len(own)}", key="layers")
    ix = own.pop()
    if ix.interleaved != interleaved:
        raise SpecError(f"this class's indexer rotates {'adjacent' if interleaved else 'half-split'}"
                        " pairs", key="attention.indexer.interleaved")
    return ix


def write(s: ModelSpec, interleaved: bool | None = None, shared: bool = False) -> dict:
    """DeepSeek-V3's keys less rope_interleave (the class has none) + the indexer's +
    mlp_layer_types (first_k_dense_replace still written: it is what a dense prefix says);
    `shared`: the class shares selections (GLM-MoE-DSA's, which writes which ones)."""
    ix = indexers(s, interleaved)
    if not shared and any(layer.attention.indexer.shared for layer in s.plan):
        raise SpecError("DeepseekV32 gives every layer an indexer of its own: no shared "
                        "selection", key="layers")
    out = {k: v for k, v in write_v3(s).items() if k != "rope_interleave"}
    dense = next((layer.ffn for layer in s.plan if not layer.is_moe), None)
    if dense is not None:  # V3 writes it for a dense prefix only
        out["intermediate_size"] = dense.d_ff
    return {**out, "index_n_heads": ix.n_heads, "index_head_dim": ix.head_dim,
            "index_topk": ix.topk,
            "mlp_layer_types": ["sparse" if layer.is_moe else "dense" for layer in s.plan]}


def indexed(s: ModelSpec) -> bool:
    """Whether some layer attends through a sparse-attention indexer."""
    return any(layer.attention is not None and layer.attention.indexer is not None
               for layer in s.plan)


_ATTN = "model.layers.{i}.self_attn.indexer"
DEEPSEEK_V32 = DEEPSEEK_V3.but(
    "deepseek_v32", "DeepseekV32ForCausalLM", read=read, write=write, exports=indexed,
    attentions=("mla",), ffns=("moe", "swiglu"), per_expert=DEEPSEEK_V3.per_expert,
    weights=DEEPSEEK_V3.weights + rules(*[(f"{_ATTN}.{name}.{{p}}",
                                           f"layers.{{i}}.self_attn.indexer.{name}.{{p}}")
                                          for name in _INDEXER]),
    spec_keys=DEEPSEEK_V3.key_table(**{
        "layers": "mlp_layer_types", "attention.indexer.n_heads": "index_n_heads",
        "attention.indexer.head_dim": "index_head_dim", "attention.indexer.topk": "index_topk"}),
    key_fields=DEEPSEEK_V3.field_table(index_n_heads="n_heads", index_head_dim="head_dim",
                                       index_topk="topk"),
    names=("deepseek",), doc="DeepSeek-V3 + a sparse-attention indexer on every layer")
FAMILIES = (DEEPSEEK_V32,)
