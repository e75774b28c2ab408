"""The constant per-sequence state of state-mixer layers, from the spec alone: what a hybrid
holds besides its per-token KV cache.

Per layer with a state mixer, its kind's entry (archscope/kinds) gives the bytes by part, each
in the dtype transformers' class keeps it in, as the kind's module documents: a conv window in
the activations' dtype (all kernel columns where transformers' cache keeps them all, K - 1
where it keeps those), a recurrent state in fp32 where the class keeps it so whatever the
model's dtype (Mamba-1 and -2, Gated DeltaNet, Kimi Delta Attention, RG-LRU) or in the
activations' dtype (lightning attention). The activations' dtype is the compute dtype of the
weights (estimate.memory.compute_dtype): a quantised cache dtype (--kv-dtype fp8) prices the
KV cache only, never the state.

Total = batch * sum over state layers of their parts. It does not grow with the context.
"""

from __future__ import annotations

from archscope.estimate.dtypes import canonical_dtype, nbytes
from archscope.kinds import mixer_kind
from archscope.spec import LayerPlan, ModelSpec


def state_bytes_by_layer(spec: ModelSpec, dtype: str = "bf16") -> dict[int, dict[str, int]]:
    """Layer index -> {state part: bytes} for one sequence, activations in `dtype`."""
    act_bytes = nbytes(1, canonical_dtype(dtype))
    return {layer.index: _state_of(layer, act_bytes) for layer in spec.plan
            if layer.state is not None}


def state_bytes(spec: ModelSpec, batch: int = 1, dtype: str = "bf16") -> int:
    """Bytes of every state-mixer layer's state for `batch` sequences (0 without any)."""
    act_bytes = nbytes(1, canonical_dtype(dtype))
    return batch * sum(count * sum(_state_of(layer, act_bytes).values())  # alike layers once
                       for layer, count in spec.distinct_layers if layer.state is not None)


def _state_of(layer: LayerPlan, act_bytes: int) -> dict[str, int]:
    return mixer_kind(layer.state.kind).state_bytes(layer.state, act_bytes)
