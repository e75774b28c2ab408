"""Forward FLOPs from the spec alone: 2 FLOPs per multiply-add, matmuls only.

Per layer of the plan, for T new tokens whose queries meet P query-key pairs per head:
- attention_proj: 2 * T * (weight elements of the attention projections);
- attention_qk:   2 * P * n_heads * qk_head_dim        (QK^T);
- attention_av:   2 * P * n_heads * value_head_dim     (softmax(QK^T) V);
- attention_index (models with a DeepSeek Sparse Attention indexer only): 2 * S * n_idx_heads *
  (idx_head_dim + 1) for the S query-key pairs the indexer scores: every key a query may see,
  while attention's P pairs read at most the indexer's topk keys per query (kinds/indexer.py;
  DeepSeek-V3.2-Exp's report, eq. 1, and transformers' DeepseekV32Indexer: q.k per head, then
  the heads' weighted sum);
- ffn:            2 * T * (gate/up/down weights), MoE: only top_k routed + shared experts;
- router:         2 * T * d_model * n_experts;
and once per model lm_head: 2 * T * d_model * vocab, tied or not, for EVERY position, because
the built model (like transformers' forward) computes logits for all of them.

- decode step at context N: T = 1; its query reads N keys (itself included), a sliding-window
  layer min(N, window), a chunked layer its own chunk's (N - 1) % chunk + 1, an indexed (DSA)
  layer min(N, topk) while its indexer scores all N (AttentionSpec.keys_read and keys_scored,
  the one home of the rule).
- prefill of N tokens, attention="causal" (default): only the unmasked pairs,
  P = sum_{i=1..N} keys_read(i): N(N+1)/2, for a window layer sum_i min(i, window), for a
  chunked layer each whole chunk's c(c+1)/2 plus the last part's, for an indexed layer
  sum_i min(i, topk) (and its indexer's S = N(N+1)/2); attention="full": P = S = N^2 for
  every layer, the square that dense kernels and torch.utils.flop_counter count (a masked
  dense kernel, transformers' eager DSA included, multiplies every pair).
- training per token = 3 x forward per token (backward = 2 x forward: one matmul for the
  input gradient and one for the weight gradient per forward matmul; Kaplan et al. 2020).

MLA conventions (`mla=`). kv_b_proj's cost is in attention_proj; in a prefill every convention
applies it (or its absorbed halves) once per token:
- "naive" (prefill default; what transformers' DeepseekV2 computes): kv_b_proj decompresses
  each token's latent into per-head K (qk_nope + qk_rope) and V (v_head_dim), and attention
  runs per head in that space. Exact for a prefill, which every implementation runs this way;
  for a decode step it is an implementation that keeps the decompressed K/V
  (KVCache.decompressed_bytes), which no MLA server does.
- "recompute": the same, but the cache holds only the latent (KVCache.bytes), so a decode step
  re-decompresses every key it reads: kv_b_proj on min(N, window) keys instead of 1. This is
  what transformers >= 5 does when decoding with a cache (archscope's builder with
  `nn.mla.set_mla_decode_form(model, "recompute")`). An indexed layer decompresses the keys
  it reads, min(N, topk) (archscope's builder gathers them first; transformers' eager DSA
  decompresses all N and masks).
- "absorbed" (decode default: DeepSeek's inference form, what serving kernels run, and what the
  builder's decode steps run): kv_b_proj's key half is folded into the query and its value half
  into the output (the same multiply-adds per token), and attention runs on the 576-wide cached
  latent: per head q/k dim kv_lora_rank + qk_rope_head_dim, v dim kv_lora_rank.

State mixers (a hybrid's `mixer_proj` and `mixer_state`): their projections and depthwise conv
per token like any part (the conv multiplies each weight once a token), plus a decode step's
recurrence or a prefill's scan from a fresh state, as their kind's entry counts them
(archscope/kinds/, each with the chunk or block size it states as its convention). Neither depends on the context: a state layer reads no keys.

Left out: norms, softmax, activations, RoPE, residual adds, biases, embedding lookups, the
multipliers of Granite, MoE dispatch; and for MoE, load imbalance (exactly top_k experts per
token is assumed). All are small next to the matmuls or are not FLOPs at all.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Literal

from archscope.errors import InputError
from archscope.estimate.shared_blocks import add_use_macs, use_index
from archscope.estimate.structure import distinct_layers, head_parts, layer_key, parts_of_layer
from archscope.kinds import attention_kind, mixer_kind
from archscope.spec import AttentionSpec, ModelSpec

AttentionFlops = Literal["causal", "full"]
MLAFlops = Literal["naive", "recompute", "absorbed"]
MLA_CONVENTIONS = ("absorbed", "recompute", "naive")
COMPONENTS = ("attention_proj", "attention_qk", "attention_av", "ffn", "router", "lm_head")
# a hybrid's state mixers: their projections and conv, and the scan / recurrence (only in the
# counts of models that have them)
MIXER_COMPONENTS = ("mixer_proj", "mixer_state")
# a sparse-attention indexer's scores (only in the counts of models that have one)
INDEXER_COMPONENTS = ("attention_index",)
TRAINING_MULTIPLIER = 3


@dataclass(frozen=True)
class FlopCount:
    kind: str  # "decode", "prefill" or "training"
    seq_len: int  # the context (decode) or the prompt length (prefill, training)
    batch: int
    tokens: int  # new tokens processed: batch (decode) or batch x seq_len
    attention: AttentionFlops
    by_component: dict[str, int] = field(default_factory=dict)
    mla: MLAFlops = "naive"  # the MLA convention used (no effect on GQA layers)

    @property
    def total(self) -> int:
        return sum(self.by_component.values())

    @property
    def per_token(self) -> float:
        return self.total / self.tokens


def causal_pairs(n: int, window: int | None = None) -> int:
    """Unmasked query-key pairs of a causal prompt of n tokens: sum_{i=1..n} min(i, window)."""
    w = min(n, window) if window else n
    return w * (w + 1) // 2 + (n - w) * w


def layer_causal_pairs(attn: AttentionSpec, n: int) -> int:
    """sum_{i=1..n} attn.keys_read(i), in closed form: a chunk restarts the count; an indexed
    layer reads at most topk keys, a cap like a window's."""
    if attn.chunk:
        whole, rest = divmod(n, attn.chunk)
        return whole * causal_pairs(attn.chunk) + causal_pairs(rest)
    caps = [c for c in (attn.window, attn.indexer.topk if attn.indexer else None) if c]
    return causal_pairs(n, min(caps) if caps else None)


def layer_causal_scored(attn: AttentionSpec, n: int) -> int:
    """sum_{i=1..n} attn.keys_scored(i): the pairs a layer's own indexer scores."""
    return causal_pairs(n, attn.window) if attn.scores_keys else 0


def has_indexer(spec: ModelSpec) -> bool:
    """Whether some layer scores keys with an indexer of its own (DSA)."""
    return any(layer.attention is not None and layer.attention.scores_keys
               for layer, _ in spec.distinct_layers)


def _components(spec: ModelSpec, base: tuple[str, ...] = COMPONENTS) -> tuple[str, ...]:
    """The FLOP components of `spec`'s counts: the mixers' and the indexer's where it has them."""
    return (base + (MIXER_COMPONENTS if spec.hybrid else ())
            + (INDEXER_COMPONENTS if has_indexer(spec) else ()))


def _component(part_name: str) -> str:
    if part_name == "ffn.router":
        return "router"
    return {"attention": "attention_proj", "mixer": "mixer_proj", "ffn": "ffn",
            "lm_head": "lm_head"}[part_name.split(".")[0]]


@functools.lru_cache(maxsize=4096)  # keyed as the parts: the same few layers, asked per estimate
def _linear_macs(key: tuple) -> tuple[tuple[str, bool, int], ...]:
    """A layer's matmul multiply-adds per use (a token, or a key MLA decompresses) of its
    active parts, summed by (component, per key): the sum over parts, factored."""
    sums: dict[tuple[str, bool], int] = {}
    for part in parts_of_layer(key):
        if part.macs:
            slot = (_component(part.name), part.per_key)
            sums[slot] = sums.get(slot, 0) + part.macs * part.active
    return tuple((component, per_key, m) for (component, per_key), m in sums.items())


def _pair_dims(attn: AttentionSpec, mla: MLAFlops) -> tuple[int, int]:
    """Per head, the q/k and the v dimension that each query-key pair multiplies over."""
    return attention_kind(attn.kind).pair_dims(attn, mla)


def _forward(spec: ModelSpec, tokens: int, pairs: Callable[[AttentionSpec], int],
             keys: Callable[[AttentionSpec], int], mla: MLAFlops,
             scored: Callable[[AttentionSpec], int]) -> dict[str, int]:
    """Multiply-adds of one sequence: `tokens` new tokens, `pairs(attn)` query-key pairs per
    head, `keys(attn)` latents that MLA's kv_b_proj decompresses (or absorbs), `scored(attn)`
    query-key pairs an indexer scores. A state mixer's scan or recurrence is not here (see
    `_state_flops`)."""
    if mla not in MLA_CONVENTIONS:
        raise InputError(f"mla_flops must be one of {', '.join(MLA_CONVENTIONS)}, got {mla!r}")
    macs = dict.fromkeys(_components(spec), 0)
    for layer, count in distinct_layers(spec):  # alike layers once, times their count
        _layer_macs(spec, layer, tokens, pairs, keys, mla, macs, count, scored)
    add_use_macs(spec, tokens, pairs, lambda a: _pair_dims(a, mla), _component, macs)
    for part in head_parts(spec):
        if part.macs:
            macs[_component(part.name)] += part.macs * tokens
    return macs


def _layer_macs(spec: ModelSpec, layer, tokens: int, pairs, keys, mla: MLAFlops,
                macs: dict[str, int], count: int = 1, scored=None) -> None:
    """Add `count` such layers' multiply-adds to `macs` (see `_forward`)."""
    attn = layer.attention
    for component, per_key, layer_macs in _linear_macs(layer_key(spec, layer)):
        macs[component] += layer_macs * (keys(attn) if per_key else tokens) * count
    if attn is not None:
        qk_dim, v_dim = _pair_dims(attn, mla)
        macs["attention_qk"] += pairs(attn) * attn.n_heads * qk_dim * count
        macs["attention_av"] += pairs(attn) * attn.n_heads * v_dim * count
        if attn.scores_keys:
            macs["attention_index"] += (scored(attn) * count
                                        * attention_kind(attn.kind).scoring_macs(attn))


def decode_flops_by_layer(spec: ModelSpec, context: int, mla: MLAFlops = "absorbed"
                          ) -> list[dict[str, int]]:
    """One decode step of one sequence at `context`, layer by layer: {component: FLOPs} with
    the components of `decode_flops` (lm_head left out: it follows the last layer); a state
    layer's `mixer_state` is its recurrence step. The layers sum to decode_flops minus lm_head."""
    _check("context", context)
    out, shared = [], use_index(spec)
    for layer in spec.plan:
        macs = dict.fromkeys(_components(spec, COMPONENTS[:-1]), 0)
        read = layer.attention.keys_read(context) if layer.attention is not None else 0
        _layer_macs(spec, layer, 1, lambda a: read, lambda a: read if mla == "recompute" else 1,
                    mla, macs, scored=lambda a: a.keys_scored(context))
        if layer.index in shared:  # a shared block runs before this layer's mixer
            add_use_macs(spec, 1, lambda a: a.keys_read(context), lambda a: _pair_dims(a, mla),
                         _component, macs, uses=1)
        flops = {k: 2 * v for k, v in macs.items()}
        if layer.state is not None:
            flops["mixer_state"] = sum(mixer_kind(layer.state.kind).step_flops(layer.state).values())
        out.append(flops)
    return out


def _state_flops(spec: ModelSpec, prompt: int | None) -> int:
    """FLOPs of the state mixers' scan (a prompt of `prompt` tokens from a fresh state) or of
    one recurrence step (prompt None), one sequence; each kind's entry gives the terms."""
    total = 0
    for layer, count in distinct_layers(spec):  # alike layers once, times their count
        if layer.state is not None:
            entry = mixer_kind(layer.state.kind)
            terms = (entry.step_flops(layer.state) if prompt is None
                     else entry.scan_flops(layer.state, prompt))
            total += sum(terms.values()) * count
    return total


def _count(kind: str, seq_len: int, batch: int, tokens: int, attention: AttentionFlops,
           macs: dict[str, int], mla: MLAFlops, state_flops: int = 0) -> FlopCount:
    flops = {k: 2 * batch * v for k, v in macs.items()}
    if "mixer_state" in flops:
        flops["mixer_state"] = batch * state_flops
    return FlopCount(kind, seq_len, batch, batch * tokens, attention, flops, mla)


def _check(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(f"{name} must be a positive integer, got {value!r}")


def decode_flops(spec: ModelSpec, context: int, batch: int = 1,
                 mla: MLAFlops = "absorbed") -> FlopCount:
    """One decode step per sequence: a new token at position `context` (it reads `context` keys,
    itself included; window layers min(context, window)). `mla`: see the module doc."""
    _check("context", context)
    _check("batch", batch)

    def read(attn: AttentionSpec) -> int:
        return attn.keys_read(context)

    expanded = read if mla == "recompute" else (lambda attn: 1)
    macs = _forward(spec, 1, read, expanded, mla, lambda attn: attn.keys_scored(context))
    return _count("decode", context, batch, 1, "causal", macs, mla, _state_flops(spec, None))


def prefill_flops(spec: ModelSpec, seq_len: int, batch: int = 1,
                  attention: AttentionFlops = "causal", mla: MLAFlops = "naive") -> FlopCount:
    """A forward over `batch` prompts of `seq_len` tokens, logits for every position."""
    _check("seq_len", seq_len)
    _check("batch", batch)
    if attention not in ("causal", "full"):
        raise InputError(f"attention FLOPs must be 'causal' or 'full', got {attention!r}")

    def pairs(attn: AttentionSpec) -> int:
        return layer_causal_pairs(attn, seq_len) if attention == "causal" else seq_len ** 2

    def scored(attn: AttentionSpec) -> int:
        return layer_causal_scored(attn, seq_len) if attention == "causal" else seq_len ** 2

    macs = _forward(spec, seq_len, pairs, lambda attn: seq_len, mla, scored)
    return _count("prefill", seq_len, batch, seq_len, attention, macs, mla,
                  _state_flops(spec, seq_len))


def training_flops(spec: ModelSpec, seq_len: int, batch: int = 1,
                   attention: AttentionFlops = "causal") -> FlopCount:
    """Forward + backward over `batch` sequences of `seq_len`: 3 x the (naive) prefill forward."""
    return training_of(prefill_flops(spec, seq_len, batch, attention))


def training_of(forward: FlopCount) -> FlopCount:
    """Training on the prompts of `forward`, a naive-MLA prefill: forward + backward, 3 x its
    FLOPs (the record reuses its own prefill when that is causal)."""
    if forward.kind != "prefill" or forward.mla != "naive":
        raise ValueError(f"training is priced from a naive-MLA prefill, not {forward.kind} "
                         f"with mla={forward.mla!r}")
    return FlopCount("training", forward.seq_len, forward.batch, forward.tokens,
                     forward.attention, {k: TRAINING_MULTIPLIER * v
                                         for k, v in forward.by_component.items()})


def training_flops_per_token(spec: ModelSpec, seq_len: int,
                             attention: AttentionFlops = "causal") -> float:
    """Training FLOPs per token at length `seq_len` (about 6 x active params + attention)."""
    return training_flops(spec, seq_len, 1, attention).per_token
