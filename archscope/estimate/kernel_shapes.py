"""The matmuls a model's decode step and prefill run, by weight shape: what the local CPU's
kernel probe (archscope.hardware.kernels) times to price that model.

Every stored matrix (estimate/tensors.py) is one linear per forward, fed the phase's tokens:
`batch` rows in a decode step, `batch x prompt` in a prefill, except the head, which prefill
runs on the last position only (generation asks for no other logits). The token embedding is
a lookup, not a matmul, unless it is tied: then it is also the head's matrix. Routed experts
read the expected number of distinct experts, n (1 - (1 - k/n)^tokens) (uniform routing, as
the roofline's weights_read_bytes), each fed its share of the tokens. With a weight format,
each matrix counts its stored bytes (estimate/formats.py: scales included) and the ones the
format quantizes name its kernel.
"""

from __future__ import annotations

from collections import defaultdict

from archscope.estimate.formats import weight_format as format_named
from archscope.estimate.storage import BF16, F32, Storage
from archscope.estimate.tensors import weight_tensors
from archscope.hardware.kernels import Linear, Workload
from archscope.spec import ModelSpec

_LOOKUPS = ("embedding", "positional")


def _touched(copies: int, active: int, tokens: int) -> float:
    if copies <= active:
        return float(copies)
    return copies * (1 - (1 - active / copies) ** tokens)


def _phase(spec: ModelSpec, tokens: int, head_tokens: int, stored) -> tuple[Linear, ...]:
    """`stored`: (tensor, its storage, its kernel) for every weight tensor."""
    counts: dict[tuple, float] = defaultdict(float)
    for t, storage, kernel in stored:
        if t.rows == 1:
            continue  # a vector: norms and biases, no matmul
        is_head = t.role == "lm_head" or (t.role == "embedding" and spec.tie_embeddings)
        if t.role in _LOOKUPS and not is_head:
            continue
        n = head_tokens if is_head else tokens
        touched = _touched(t.copies, t.active, n)
        per_copy = max(1, round(n * t.active / t.copies)) if t.copies > t.active else n
        key = (t.rows, t.cols, per_copy, storage.nbytes(t.rows, t.cols), kernel or "")
        counts[key] += touched
    return tuple(Linear(r, c, count, n, nbytes, kernel or None)
                 for (r, c, n, nbytes, kernel), count in sorted(counts.items()))


def _stored(spec: ModelSpec, dtype: str, weight_format: str | None):
    tensors = weight_tensors(spec)
    if weight_format is None:
        dense: Storage = F32 if dtype == "fp32" else BF16
        return [(t, dense, None) for t in tensors]
    fmt = format_named(weight_format)
    return [(t, s, fmt.name if fmt.quantizes(t) else None)
            for t, s in zip(tensors, fmt.storages(spec, tensors))]


def workload(spec: ModelSpec, dtype: str, batch: int, prompt_len: int,
             prefill_batch: int | None = None, weight_format: str | None = None) -> Workload:
    """A decode step of `batch` tokens and a prefill of `prefill_batch` (default: `batch`)
    prompts of `prompt_len` tokens, for `spec` computing in `dtype`, its weights dense in
    `dtype` or stored in `weight_format`."""
    b = batch if prefill_batch is None else prefill_batch
    stored = _stored(spec, dtype, weight_format)
    return Workload(dtype, _phase(spec, batch, batch, stored),
                    _phase(spec, b * prompt_len, b, stored))
