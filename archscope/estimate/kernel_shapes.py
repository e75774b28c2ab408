"""The matmuls a model's decode step and prefill run, by weight shape: what the local CPU's
kernel probe (archscope.hardware.kernels) times to price that model.

Every stored matrix (estimate/tensors.py) is one linear per forward, fed the phase's tokens:
`batch` rows in a decode step, `batch x prompt` in a prefill, except the head, which prefill
runs on the last position only (generation asks for no other logits). The token embedding is
a lookup, not a matmul, unless it is tied: then it is also the head's matrix. Routed experts
read the expected number of distinct experts, n (1 - (1 - k/n)^tokens) (uniform routing, as
the roofline's weights_read_bytes), each fed its share of the tokens.
"""

from __future__ import annotations

from collections import defaultdict

from archscope.estimate.tensors import weight_tensors
from archscope.hardware.kernels import Linear, Workload
from archscope.spec import ModelSpec

_LOOKUPS = ("embedding", "positional")


def _touched(copies: int, active: int, tokens: int) -> float:
    if copies <= active:
        return float(copies)
    return copies * (1 - (1 - active / copies) ** tokens)


def _phase(spec: ModelSpec, tokens: int, head_tokens: int) -> tuple[Linear, ...]:
    counts: dict[tuple[int, int, int], float] = defaultdict(float)
    for t in weight_tensors(spec):
        if t.rows == 1:
            continue  # a vector: norms and biases, no matmul
        is_head = t.role == "lm_head" or (t.role == "embedding" and spec.tie_embeddings)
        if t.role in _LOOKUPS and not is_head:
            continue
        n = head_tokens if is_head else tokens
        touched = _touched(t.copies, t.active, n)
        per_copy = max(1, round(n * t.active / t.copies)) if t.copies > t.active else n
        counts[(t.rows, t.cols, per_copy)] += touched
    return tuple(Linear(r, c, count, n) for (r, c, n), count in sorted(counts.items()))


def workload(spec: ModelSpec, dtype: str, batch: int, prompt_len: int,
             prefill_batch: int | None = None) -> Workload:
    """A decode step of `batch` tokens and a prefill of `prefill_batch` (default: `batch`)
    prompts of `prompt_len` tokens, for `spec` in `dtype`."""
    b = batch if prefill_batch is None else prefill_batch
    return Workload(dtype, _phase(spec, batch, batch), _phase(spec, b * prompt_len, b))
