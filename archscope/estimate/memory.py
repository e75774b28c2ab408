"""Memory from the spec alone: weights, inference memory at a context, the longest that fits.

- weights: every stored tensor priced in the weight format (formats.py: a format's scales and
  zero points included, the tensors it keeps in 16 bits priced so), the one table that `show`,
  `compare`, `fit` and the reports read.
- inference memory at context N for a batch = weights + KV cache (kv_cache.py) + the state
  mixers' constant state (state.py, in the compute dtype and fp32) + activations.
- activations, the transient peak of one forward over the prompt (the whole prompt at once
  unless `prefill_chunk` is given), at the compute dtype:
      batch * (tokens * (2 * d_model + widest layer) + logit positions * vocab_size)
  where 2 * d_model is the residual stream and the current sublayer's normed input; the widest
  layer is the widest of q + k + v + attention output (per-head K/V, MLA decompressed), a
  state mixer's input projections (its kind's `activation_width`) and the
  FFN hidden (its kind's `activation_width`: mlp d_ff, swiglu 2 d_ff, MoE 2 d_expert (top_k +
  shared) + router logits);
  the logits are those of the last position (what generation needs; transformers' generate
  asks for just those), or of every position with `all_logits=True` (a plain forward of the
  built model, as in profiling, or training without a fused loss).
  Left out: attention score matrices (a fused / flash kernel never stores them; an eager kernel
  adds batch * n_heads * tokens * N), the CUDA context, workspaces and allocator fragmentation.
- formats: `dtype` is the weight format (any name formats.py knows: bf16, fp8, int4-g128, ...);
  `kv_dtype` prices the cache (default: the compute dtype); activations are always in the
  compute dtype: fp16 or fp32 for those plain formats, else bf16 (the quantized formats are
  weight-only).
"""

from __future__ import annotations

from dataclasses import dataclass

from archscope.errors import InputError
from archscope.estimate.dtypes import canonical_dtype, nbytes
from archscope.estimate.formats import canonical_format, weights_in_format
from archscope.estimate.kv_cache import decompressed_elements_per_token, kv_cache_bytes
from archscope.estimate.state import state_bytes
from archscope.kinds import ffn_kind, mixer_kind
from archscope.spec import LayerPlan, ModelSpec


# The formats a weights table shows (the checkpoint's own is added where it is another):
# the plain 32 and 16 bits, and the quantized layouts serving engines load most.
WEIGHT_FORMATS = ("fp32", "bf16", "fp8", "int8", "int4-g128", "nvfp4", "mxfp4")


def weights_bytes(spec: ModelSpec, dtype: str = "bf16") -> int:
    """The stored weights in format `dtype` (formats.py: scales included)."""
    return weights_in_format(spec, dtype).total_bytes


def weights_table(spec: ModelSpec, formats=WEIGHT_FORMATS) -> dict[str, int]:
    """Weight bytes in each format, by canonical name."""
    return {canonical_format(f): weights_bytes(spec, f) for f in formats}


def compute_dtype(dtype: str) -> str:
    """The dtype caches and activations use when weights are stored in format `dtype`: the plain
    fp16 and fp32 compute in themselves, every other format in bf16."""
    fmt = canonical_format(dtype)
    return fmt if fmt in ("fp16", "fp32") else "bf16"


def _layer_width(layer: LayerPlan) -> int:
    widths = [0]
    if layer.attention is not None:
        attn = layer.attention
        q_and_out = attn.n_heads * (attn.qk_head_dim + attn.value_head_dim)
        widths.append(q_and_out + decompressed_elements_per_token(attn))
    if layer.state is not None:
        widths.append(mixer_kind(layer.state.kind).activation_width(layer.state))
    if layer.ffn is not None:
        widths.append(ffn_kind(layer.ffn.kind).activation_width(layer.ffn))
    return max(widths)


def activation_bytes(spec: ModelSpec, tokens: int, batch: int = 1, dtype: str = "bf16",
                     all_logits: bool = False) -> int:
    """Transient peak of a forward over `tokens` positions per sequence (see the module doc)."""
    widest = max(_layer_width(layer) for layer, _ in spec.distinct_layers)
    logits = (tokens if all_logits else 1) * spec.vocab_size
    return nbytes(batch * (tokens * (2 * spec.d_model + widest) + logits), dtype)


@dataclass(frozen=True)
class InferenceMemory:
    seq_len: int
    batch: int
    dtype: str  # weights
    kv_dtype: str  # cache (activations: compute_dtype(dtype))
    weights: int
    kv_cache: int
    activations: int
    state: int = 0  # the state mixers' constant per-sequence state (estimate/state.py)

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.state + self.activations


def inference_memory(spec: ModelSpec, seq_len: int, batch: int = 1, dtype: str = "bf16",
                     kv_dtype: str | None = None, prefill_chunk: int | None = None,
                     all_logits: bool = False, weights: int | None = None) -> InferenceMemory:
    """Weights + KV cache at `seq_len` + activations of prefilling it (in chunks, if given).
    `weights`: weights_bytes(spec, dtype), when the caller has it (the record counts once)."""
    return _memory(spec, seq_len, batch, dtype, kv_dtype, prefill_chunk, all_logits,
                   weights_bytes(spec, dtype) if weights is None else weights)


def _memory(spec: ModelSpec, seq_len: int, batch: int, dtype: str, kv_dtype: str | None,
            prefill_chunk: int | None, all_logits: bool, weights: int) -> InferenceMemory:
    dtype = canonical_format(dtype)
    kv_dtype = canonical_dtype(kv_dtype) if kv_dtype else compute_dtype(dtype)
    tokens = min(seq_len, prefill_chunk) if prefill_chunk else seq_len
    return InferenceMemory(seq_len, batch, dtype, kv_dtype, weights,
                           kv_cache=kv_cache_bytes(spec, seq_len, batch, kv_dtype),
                           activations=activation_bytes(spec, tokens, batch, compute_dtype(dtype),
                                                        all_logits),
                           state=state_bytes(spec, batch, compute_dtype(dtype)))


# Uncapped searches stop here (2^40 tokens): with every layer windowed and a chunked prefill,
# memory stops growing and every context would fit.
UNCAPPED_LIMIT = 2 ** 40


def max_context(spec: ModelSpec, budget_bytes: float, batch: int = 1, dtype: str = "bf16",
                kv_dtype: str | None = None, prefill_chunk: int | None = None,
                all_logits: bool = False, capped: bool = True) -> int:
    """The longest context whose inference memory fits `budget_bytes`; 0 if none does.

    Capped at the spec's max_seq_len unless `capped=False` (a what-if beyond the trained
    context; then at most UNCAPPED_LIMIT). Memory never shrinks as the context grows, so a
    binary search finds the edge.
    """
    if not budget_bytes > 0:
        raise InputError(f"the memory budget must be positive, got {budget_bytes!r}")
    weights = weights_bytes(spec, dtype)

    def fits(n: int) -> bool:
        mem = _memory(spec, n, batch, dtype, kv_dtype, prefill_chunk, all_logits, weights)
        return mem.total <= budget_bytes

    if not fits(1):
        return 0
    hi = spec.max_seq_len if capped else 2
    while not capped and hi < UNCAPPED_LIMIT and fits(hi):
        hi *= 2
    if fits(hi):
        return hi
    lo = 1  # invariant: fits(lo) and not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo
