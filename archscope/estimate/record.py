"""One model's numbers in one typed, frozen record: every surface reads it, none recomputes.

`model_record(spec, contexts, ...)` is the single place where parameters, the cache, FLOPs,
weight bytes and inference memory are put together for a model under stated conventions.
`show`, `compare`, `report`, the claims checker, `profile`'s estimated side and the figures all
read a record (`ModelRecord.row(n)` is the `compare --format json` element).

Conventions (named in the record, `Conventions`):
- weight_format prices the weights (estimate/formats.py: bf16, fp8, int4-g128, mxfp4-experts,
  ...; scales included); cache_dtype prices the KV cache (a state mixer's constant state is in
  the compute dtype, its SSM / recurrent part fp32: estimate/state.py). By default the cache is
  kept in the compute dtype: fp16 or fp32 with those plain formats, else bf16 (the quantized
  formats are weight-only unless a cache dtype is given). Activations are always priced in the
  compute dtype.
- attention_flops: the prefill's attention, `causal` (the unmasked half) or `full` (the square).
- mla_flops: the MLA decode convention, `absorbed` (default, what serving kernels run),
  `recompute` or `naive` (estimate/flops.py). A prefill decompresses each latent once under
  every convention, so prefill FLOPs are computed with `naive`.
- batch: sequences; the cache, the prefill and the memory are for the whole batch, the decode
  FLOPs per token (`flops_per_token`) for one sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from archscope.errors import InputError
from archscope.estimate.dtypes import canonical_dtype, nbytes
from archscope.estimate.formats import canonical_format
from archscope.estimate.flops import (MLA_CONVENTIONS, FlopCount, decode_flops, prefill_flops,
                                      training_flops, training_of)
from archscope.estimate.kv_cache import (KVCache, decompressed_elements_per_token, kv_cache,
                                         kv_elements_per_token, mha_elements_per_token)
from archscope.estimate.memory import (InferenceMemory, compute_dtype, inference_memory,
                                      weights_bytes, weights_table)
from archscope.estimate.params import ParamCount, count_params
from archscope.estimate.shared_blocks import kv_uses
from archscope.estimate.state import state_bytes, state_bytes_by_layer
from archscope.kinds import attention_kind, mixer_kind
from archscope.spec import ModelSpec

DEFAULT_CONTEXT = 4096


@dataclass(frozen=True)
class Conventions:
    batch: int = 1
    weight_format: str = "bf16"
    cache_dtype: str = "bf16"
    attention_flops: str = "causal"  # prefill attention: causal | full
    mla_flops: str = "absorbed"  # MLA decode: absorbed | recompute | naive


@dataclass(frozen=True)
class CacheGroup:
    """Layers that cache alike: elements per token per layer, and the window that caps them."""

    layers: tuple[int, ...]
    variant: str  # GQA, MHA, MQA, MLA
    window: int | None
    elements_per_token: int  # what the model's own cache holds
    decompressed_elements_per_token: int  # MLA after kv_b_proj (GQA: the same)
    mha_elements_per_token: int  # one K and V per query head: the MHA-equivalent
    bytes_per_token: int  # elements_per_token at the cache dtype


@dataclass(frozen=True)
class StateGroup:
    """State-mixer layers that hold alike: one sequence's constant state per layer, by part."""

    layers: tuple[int, ...]
    kind: str  # the mixer's name for people: 'Mamba-2', 'Gated DeltaNet'
    bytes_by_part: dict[str, int]  # conv in the compute dtype; ssm / recurrent fp32

    @property
    def bytes_per_layer(self) -> int:
        return sum(self.bytes_by_part.values())


@dataclass(frozen=True)
class AtContext:
    """Everything that depends on the context length."""

    seq_len: int
    exceeds_context: bool  # seq_len > the model's max_seq_len: computed as a what-if
    cache: KVCache  # batch x seq_len tokens at the cache dtype
    # the state mixers' constant state (conv and SSM / recurrent) of the whole batch, at the
    # compute dtype (SSM fp32); 0 without state mixers (estimate/state.py)
    state_bytes: int
    decode: FlopCount  # one decode step of ONE sequence, under the record's mla convention
    decode_by_mla: dict[str, int]  # every MLA convention's decode total (empty without MLA)
    prefill: FlopCount  # the whole batch's prompts of seq_len, logits for every position
    training_flops_per_token: int  # 3 x the causal forward per token
    memory: InferenceMemory  # weights + cache + activations of the prefill

    @property
    def kv_cache_bytes(self) -> int:
        return self.cache.bytes

    @property
    def cache_bytes(self) -> int:
        """Per-token cache plus constant state: what the batch holds at this context."""
        return self.cache.bytes + self.state_bytes


@dataclass(frozen=True)
class ModelRecord:
    model: str
    attention: str  # 'GQA', 'MLA', or e.g. 'GQA+MHA' when layers differ
    moe: bool
    conventions: Conventions
    params: ParamCount
    kv_cache_bytes_per_token: int  # one more token of context, all layers, one sequence
    weights_bytes: int  # in the weight format
    contexts: tuple[AtContext, ...]
    spec: ModelSpec = field(repr=False, compare=False)  # what the groups below are read from

    # The layer groups and the weights in every format: for the tables that show them, computed
    # when first asked (a sweep's rows never ask), then kept.
    @cached_property
    def cache_groups(self) -> tuple[CacheGroup, ...]:
        return _cache_groups(self.spec, self.conventions.cache_dtype)

    @cached_property
    def state_groups(self) -> tuple[StateGroup, ...]:  # empty without state mixers
        return _state_groups(self.spec, self.conventions.weight_format)

    @cached_property
    def weights_by_format(self) -> dict[str, int]:
        """The weights in the common formats (memory.WEIGHT_FORMATS) and the record's own."""
        table = weights_table(self.spec)
        return {**table, self.conventions.weight_format: self.weights_bytes}

    def at(self, seq_len: int) -> AtContext:
        for c in self.contexts:
            if c.seq_len == seq_len:
                return c
        raise InputError(f"{self.model}: the record has no context {seq_len} "
                         f"(it has {', '.join(str(c.seq_len) for c in self.contexts)})")

    def row(self, seq_len: int | None = None) -> dict:
        """The flat JSON object `compare --format json` prints (integers for every count)."""
        c = self.at(seq_len) if seq_len is not None else self.contexts[0]
        v = self.conventions
        return {
            "model": self.model, "attention": self.attention, "moe": self.moe,
            "seq_len": c.seq_len, "batch": v.batch, "dtype": v.weight_format,
            "kv_dtype": v.cache_dtype,
            "params_total": self.params.total, "params_active": self.params.active,
            "params_active_without_input_embedding":
                self.params.active_without_input_embedding,
            "params_active_without_embeddings_or_head":
                self.params.active_without_embeddings_or_head,
            # the model card's convention where the spec names it, and the count under it
            "active_convention": self.spec.active_convention,
            "params_active_card": self.params.active_under(self.spec.active_convention)
            if self.spec.active_convention else None,
            "params_embedding": self.params.embedding, "params_mtp": self.params.mtp,
            "kv_cache_bytes": c.cache.bytes, "kv_cache_bytes_per_token": self.kv_cache_bytes_per_token,
            "state_bytes": c.state_bytes, "cache_bytes": c.cache_bytes,
            "flops_per_token": c.decode.total, "prefill_flops": c.prefill.total,
            "prefill_attention": v.attention_flops, "mla_flops": v.mla_flops,
            "training_flops_per_token": c.training_flops_per_token,
            "weights_bytes": self.weights_bytes,
            "inference_memory_bytes": c.memory.total, "exceeds_context": c.exceeds_context,
        }


def _variants(spec: ModelSpec) -> str:
    """The layers' mixers: 'GQA', 'GQA+MHA', or a hybrid's 'Mamba-2+GQA' (state mixers first)."""
    layers = [layer for layer, _ in spec.distinct_layers]  # in order of first appearance
    states = (mixer_kind(layer.state.kind).display for layer in layers if layer.state)
    attns = (layer.attention.variant for layer in layers if layer.attention)
    return "+".join(dict.fromkeys([*states, *attns]))


def _cache_groups(spec: ModelSpec, cache_dtype: str) -> tuple[CacheGroup, ...]:
    """The attention layers grouped by what they cache per token (state layers cache none)."""
    shared = dict(kv_uses(spec))  # a layer that runs a shared block caches its attention
    attentions = [shared.get(layer.index, layer.attention) for layer in spec.plan]
    # layers share spec objects (a few in all): each object's layers, then equal specs built
    # apart merged into one group
    objects = {id(a): a for a in attentions if a is not None}
    groups: dict = {}
    for attention in objects.values():
        groups.setdefault(attention, []).extend(
            i for i, other in enumerate(attentions) if other is attention)
    for indices in groups.values():
        indices.sort()
    return tuple(CacheGroup(tuple(idx), a.variant, a.window, kv_elements_per_token(a),
                            decompressed_elements_per_token(a), mha_elements_per_token(a),
                            nbytes(kv_elements_per_token(a), cache_dtype))
                 for a, idx in groups.items())


def _state_groups(spec: ModelSpec, weight_format: str) -> tuple[StateGroup, ...]:
    """The state-mixer layers grouped by what one sequence's state holds (estimate/state.py)."""
    groups: dict = {}
    for index, parts in state_bytes_by_layer(spec, compute_dtype(weight_format)).items():
        key = (mixer_kind(spec.plan[index].state.kind).display, tuple(parts.items()))
        groups.setdefault(key, []).append(index)
    return tuple(StateGroup(tuple(idx), kind, dict(parts)) for (kind, parts), idx in groups.items())


def conventions(batch: int = 1, weight_format: str = "bf16", cache_dtype: str | None = None,
                attention_flops: str = "causal", mla_flops: str = "absorbed") -> Conventions:
    """Checked conventions; the cache dtype defaults to the compute dtype of the weights."""
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise InputError(f"batch must be a positive integer, got {batch!r}")
    if attention_flops not in ("causal", "full"):
        raise InputError(f"attention_flops must be 'causal' or 'full', got {attention_flops!r}")
    if mla_flops not in MLA_CONVENTIONS:
        raise InputError(f"mla_flops must be one of {', '.join(MLA_CONVENTIONS)}, "
                         f"got {mla_flops!r}")
    weight_format = canonical_format(weight_format)
    cache_dtype = canonical_dtype(cache_dtype) if cache_dtype else compute_dtype(weight_format)
    return Conventions(batch, weight_format, cache_dtype, attention_flops, mla_flops)


def _by_mla(spec: ModelSpec, n: int) -> dict[str, int]:
    """Decode totals under each MLA convention, when they differ. Only a compressed cache (MLA's
    latent: decompressed, recomputed or absorbed) decodes differently, so without one: none."""
    if not any(attention_kind(layer.attention.kind).compressed_cache
               for layer, _ in spec.distinct_layers if layer.attention is not None):
        return {}
    totals = {c: decode_flops(spec, n, 1, mla=c).total for c in MLA_CONVENTIONS}
    return totals if len(set(totals.values())) > 1 else {}


def _at(spec: ModelSpec, n: int, v: Conventions, state: int, weights: int) -> AtContext:
    """The record at context n; `state`: the batch's constant state and `weights` the weight
    bytes (the same at every n)."""
    prefill = prefill_flops(spec, n, v.batch, attention=v.attention_flops, mla="naive")
    # training per token is the same at any batch (every term scales with it), so a causal
    # prefill of the batch serves; a full-attention one does not (training is causal)
    training = training_of(prefill) if v.attention_flops == "causal" else training_flops(spec, n)
    return AtContext(
        seq_len=n, exceeds_context=n > spec.max_seq_len,
        cache=kv_cache(spec, n, v.batch, v.cache_dtype),
        state_bytes=state,
        decode=decode_flops(spec, n, 1, mla=v.mla_flops),
        decode_by_mla=_by_mla(spec, n),
        prefill=prefill, training_flops_per_token=round(training.per_token),
        memory=inference_memory(spec, n, v.batch, v.weight_format, kv_dtype=v.cache_dtype,
                                weights=weights))


def model_record(spec: ModelSpec, contexts=(DEFAULT_CONTEXT,), batch: int = 1,
                 weight_format: str = "bf16", cache_dtype: str | None = None,
                 attention_flops: str = "causal", mla_flops: str = "absorbed") -> ModelRecord:
    """The record of `spec` at each context length in `contexts` (an int or a sequence; the
    first is the one `row()` gives by default), under the conventions given."""
    v = conventions(batch, weight_format, cache_dtype, attention_flops, mla_flops)
    lengths = (contexts,) if isinstance(contexts, int) else tuple(dict.fromkeys(contexts))
    if not lengths:
        raise InputError("a record needs at least one context length")
    for n in lengths:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InputError(f"context lengths must be positive integers, got {n!r}")
    params = count_params(spec)
    weights = weights_bytes(spec, v.weight_format)
    state = state_bytes(spec, v.batch, compute_dtype(v.weight_format))  # the same at every n
    contexts = tuple(_at(spec, n, v, state, weights) for n in lengths)
    return ModelRecord(
        model=spec.name, attention=_variants(spec), moe=spec.moe, conventions=v, params=params,
        # one more token's bytes, at any context: the elements every layer caches per token
        kv_cache_bytes_per_token=contexts[0].cache.bytes_per_token,
        weights_bytes=weights, contexts=contexts, spec=spec)
