"""GLM-5 (transformers' `glm_moe_dsa`, GlmMoeDsaForCausalLM): DeepSeek-V3.2 whose indexer
rotates adjacent pairs (transformers' GlmMoeDsaIndexer; the files' indexer_rope_interleave is
not read, as the class reads none) and whose "shared" layers (`indexer_types`) have no indexer:
they attend to the keys the last "full" layer selected (attention.indexer.shared, as `layers`
overrides). Without indexer_types the class derives them: index_topk_pattern ("F"/"S" per
layer, or a list), else layer i is full when max(i - index_skip_topk_offset + 1, 0) is a
multiple of index_topk_freq (defaults 2 and 1: every layer full)."""

from __future__ import annotations

from archscope.spec.families.deepseek_v32 import DEEPSEEK_V32, indexed
from archscope.spec.families.deepseek_v32 import read as read_v32
from archscope.spec.families.deepseek_v32 import write as write_v32
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _select
from archscope.spec.schema import ModelSpec

_TYPES = ("full", "shared")


def indexer_types(c: Keys, n: int) -> list[str]:
    """Each layer's indexer, full or shared, as GlmMoeDsaConfig decides it."""
    types, key = c.get("indexer_types", None), "indexer_types"
    if types is None:
        key, pattern = "index_topk_pattern", c.get("index_topk_pattern", None)
        if isinstance(pattern, str):
            types = [{"F": "full", "S": "shared"}.get(ch, ch) for ch in pattern]
        elif pattern is not None:
            types = pattern
        else:
            freq = max(c.size("index_topk_freq", least=0, fallback=1), 1)
            offset = c.size("index_skip_topk_offset", least=0, fallback=2)
            return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n)]
    if not isinstance(types, list) or len(types) < n:
        raise c.error(key, f"expected at least {n} entries (num_hidden_layers), each full or "
                           f"shared, {what(types)}")
    for i, t in enumerate(types[:n]):
        if t not in _TYPES:
            raise c.error(f"{key}[{i}]", f"expected full or shared, {what(t)}")
    if types[0] != "full":
        raise c.error(f"{key}[0]", "the first layer has no earlier selection to share: its "
                                   "indexer must be full")
    return list(types[:n])


def read(c: Keys) -> dict:
    out = read_v32(c, interleaved=True)
    shared = [i for i, t in enumerate(indexer_types(c, out["n_layers"])) if t == "shared"]
    if shared:
        patch = {"indexer": {"topk": out["attention"]["indexer"]["topk"], "shared": True}}
        out["layers"] = [*out.get("layers", []), {"select": _select(shared), "attention": patch}]
    return out


def write(s: ModelSpec) -> dict:
    """DeepSeek-V3.2's keys + indexer_types; the shared layers' selection comes from the last
    full layer, which is what the spec's shared indexers say (the spec checks it)."""
    out = write_v32(s, interleaved=True, shared=True)  # every layer attends (it checks)
    return {**out, "indexer_types": ["shared" if layer.attention.indexer.shared else "full"
                                     for layer in s.plan]}


def interleaved_indexer(s: ModelSpec) -> bool:
    return indexed(s) and any(layer.attention.indexer.shared or layer.attention.indexer.interleaved
                              for layer in s.plan if layer.attention is not None
                              and layer.attention.indexer is not None)


GLM_MOE_DSA = DEEPSEEK_V32.but(
    "glm_moe_dsa", "GlmMoeDsaForCausalLM", read=read, write=write, exports=interleaved_indexer,
    attentions=("mla",), ffns=("moe", "swiglu"), per_expert=DEEPSEEK_V32.per_expert,
    spec_keys=DEEPSEEK_V32.key_table(**{"attention.indexer.shared": "indexer_types",
                                        "attention.indexer.interleaved": "indexer_types"}),
    names=("glm",), doc="DeepSeek-V3.2 + an indexer on adjacent pairs, shared across layers")
FAMILIES = (GLM_MOE_DSA,)
