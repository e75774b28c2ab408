"""Parameter counts from the spec alone.

Formula: the sum over the module structure in `structure.py` (token embedding, learned
positions, per layer of the plan its attention projections, FFN or experts + router, two
norms; final norm; lm_head), counting unique tensors, so a tied lm_head adds nothing.
Per-layer kinds may differ (DeepSeek's dense first layer), so every layer is counted on its own.

- total: every stored parameter.
- active: the parameters one token uses: MoE layers count only top_k routed experts (plus
  shared experts and the router); everything else, embeddings and head included, counts whole.
- embedding: the lookup tables (token embedding + learned positions). They cost memory but no
  matmul FLOPs; an untied lm_head is not in it (it is `breakdown["lm_head"]`).
- active under the vendors' other conventions: `active_without_input_embedding` (OpenAI's and
  DeepSeek's: the unembedding counts, the embedding not) and
  `active_without_embeddings_or_head` (GLM's); `active` itself counts both.
- mtp: the multi-token-prediction modules a checkpoint ships (spec.mtp_layers; structure.
  mtp_parts), apart: neither transformers' model nor archscope's runs them, so they are in no
  other figure (total, active, breakdown, weights), though the checkpoint's files hold them.

Source: the module structure of transformers' Llama/Mistral/GPT-2/Granite/Mixtral/GraniteMoe/
DeepseekV2 classes; the tests check these counts against those classes built on the meta device.
Left out: buffers (RoPE inverse frequencies, masks), which are not parameters.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from archscope.estimate.structure import (Part, distinct_layers, embedding_parts, head_parts,
                                          layer_key, mtp_parts, parts_of_layer)
from archscope.estimate.shared_blocks import stored_parts
from archscope.spec import ModelSpec

# Order of the breakdown groups, and the group each key belongs to (by prefix).
# `mixer`: the state mixers of a hybrid (Mamba-2, Gated DeltaNet), 0 in every other model.
GROUPS = ("embedding", "attention", "mixer", "ffn", "norms", "head")
_GROUP_OF = {"embedding": "embedding", "positional": "embedding", "attention": "attention",
             "mixer": "mixer", "ffn": "ffn", "norms": "norms", "final_norm": "norms",
             "embedding_norm": "norms",
             "lm_head": "head"}


@functools.lru_cache(maxsize=256)  # a few dozen part names in all
def group_of(key: str) -> str:
    """'attention.q_proj' -> 'attention'; 'final_norm' -> 'norms'; 'lm_head' -> 'head'."""
    return _GROUP_OF[key.split(".")[0]]


@dataclass(frozen=True)
class ParamCount:
    total: int
    active: int
    embedding: int
    breakdown: dict[str, int] = field(default_factory=dict)  # key -> params, in group order
    tied_head: int = 0  # lm_head weights that tying shares with the embedding (counted once)
    mtp: int = 0  # the MTP modules the checkpoint ships, in no other figure

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding

    @property
    def active_without_input_embedding(self) -> int:
        """Active parameters less the input lookup tables (token embedding, learned positions),
        the unembedding kept: a tied table still multiplies as the head. How OpenAI (gpt-oss)
        and DeepSeek state active parameters."""
        return self.active - self.embedding + self.tied_head

    @property
    def active_without_embeddings_or_head(self) -> int:
        """Active parameters less every vocabulary-sized matrix: the lookup tables and the
        head, tied or not. How GLM-4.5 states them."""
        return self.active - self.embedding - self.breakdown.get("lm_head", 0)

    def active_under(self, convention: str) -> int:
        """Active parameters under a card's convention (spec/weight_formats.ActiveConvention)."""
        return {"with_embeddings": self.active,
                "without_input_embedding": self.active_without_input_embedding,
                "without_embeddings_or_head": self.active_without_embeddings_or_head}[convention]

    @property
    def groups(self) -> dict[str, int]:
        """The breakdown summed into embedding, attention, ffn, norms, head, and `mixer` when
        the model has state mixers."""
        present = {group_of(key) for key in self.breakdown}
        out = {g: 0 for g in GROUPS if g != "mixer" or g in present}
        for key, value in self.breakdown.items():
            out[group_of(key)] += value
        return out


def count_params(spec: ModelSpec) -> ParamCount:
    """Total, active and embedding parameters of `spec`, with a per-component breakdown. Each
    distinct layer is priced once and counted as many times as the plan holds it (the sums
    are of integers: the same as adding layer by layer, in the same first-seen key order)."""
    sums = [(_sums(tuple(embedding_parts(spec))), 1)]
    sums += [(_layer_sums(layer_key(spec, layer)), n) for layer, n in distinct_layers(spec)]
    sums += [(_sums(tuple(head_parts(spec))), 1)]
    if spec.shared is not None:  # shared blocks: stored once (estimate/shared_blocks.py)
        sums.append((_sums(tuple(stored_parts(spec))), 1))
    active = embedding = 0
    by_key: dict[str, int] = {}
    for (stored, active_part, embedding_part), n in sums:
        for name, params in stored:
            by_key[name] = by_key.get(name, 0) + params * n
        active += active_part * n
        embedding += embedding_part * n
    return ParamCount(
        total=sum(by_key.values()), active=active, embedding=embedding,
        # stable sort: keys keep their first-seen order inside each group
        breakdown=dict(sorted(by_key.items(), key=lambda kv: _GROUP_RANK[group_of(kv[0])])),
        tied_head=spec.vocab_size * spec.d_model if spec.tie_embeddings else 0,
        mtp=spec.mtp_layers * sum(p.params * p.copies for p in mtp_parts(spec))
        if spec.mtp_layers else 0)


_GROUP_RANK = {g: i for i, g in enumerate(GROUPS)}


def _sums(parts: tuple[Part, ...]) -> tuple[tuple[tuple[str, int], ...], int, int]:
    """Of some parts: the stored parameters by key (first-seen order), the active ones, and
    those of the embedding group."""
    stored: dict[str, int] = {}
    active = embedding = 0
    for p in parts:
        stored[p.name] = stored.get(p.name, 0) + p.params * p.copies
        active += p.params * p.active
        if group_of(p.name) == "embedding":
            embedding += p.params
    return tuple(stored.items()), active, embedding


@functools.lru_cache(maxsize=4096)  # keyed as the parts: a few layers, over a sweep's variants
def _layer_sums(key: tuple) -> tuple[tuple[tuple[str, int], ...], int, int]:
    return _sums(parts_of_layer(key))
