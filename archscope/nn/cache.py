"""A static, pre-allocated KV cache.

Each layer owns a `LayerCache`: a few tensors with the sequence on one axis, allocated once for
`capacity` tokens. Full-attention layers get the whole context; sliding-window layers get
`window` slots used as a ring buffer, so they never hold more than the window; chunked layers
(Llama 4) get `chunk` slots the same way. MLA layers store their latent and shared RoPE key
here instead of keys and values.

A token at position p sits in slot p % capacity. For a chunked layer capacity is the chunk (or
the whole context when that is shorter), so the current chunk's tokens are exactly slots
0 .. p % chunk: a single-token step reads those and no mask is needed, even though the slots
after them still hold the previous chunk.
"""

from __future__ import annotations

import torch


class LayerCache:
    def __init__(self, shapes: dict[str, tuple[int, ...]], seq_dim: int, capacity: int,
                 device, dtype, chunk: int | None = None):
        self.seq_dim, self.capacity, self.chunk = seq_dim, capacity, chunk
        self.buffers = {name: torch.zeros(*shape[:seq_dim], capacity, *shape[seq_dim:],
                                          device=device, dtype=dtype)
                        for name, shape in shapes.items()}
        self.positions = torch.full((capacity,), -1, dtype=torch.long, device=device)

    def append(self, new: dict[str, torch.Tensor], start: int):
        """Store the new tokens (positions start, start+1, ...) and return what attention reads.

        Returns (tensors, key_positions). For one new token the tensors are exactly the slots
        it sees (all valid slots inside the window; a chunked layer's slots of the current
        chunk), so no mask is needed and key_positions is None. Several new tokens into an
        empty cache (a prefill) are their own keys, so key_positions is None there too: the
        queries' positions say it all, and a layer without a window or chunk attends with
        SDPA's `is_causal` and no mask tensor (as transformers does; the explicit mask was
        1.5-2x slower on CPU and rules out the flash kernels on CUDA). For several new tokens
        after cached ones, older slots plus the new ones are returned with their absolute
        positions, from which the caller builds the causal/window mask.
        """
        n_new = next(iter(new.values())).shape[self.seq_dim]
        if isinstance(start, torch.Tensor):
            return self._append_at_device_position(new, start, n_new)
        if n_new == 1:
            slot = start % self.capacity
            for name, t in new.items():
                self.buffers[name].narrow(self.seq_dim, slot, 1).copy_(t)
            self.positions[slot] = start
            # a chunk starts again at slot 0 (the module doc): the rest is the previous chunk
            n_valid = start % self.chunk + 1 if self.chunk else min(start + 1, self.capacity)
            return {name: b.narrow(self.seq_dim, 0, n_valid) for name, b in self.buffers.items()}, None

        n_old = min(start, self.capacity)
        new_pos = torch.arange(start, start + n_new, device=self.positions.device)
        if n_old:
            out = {name: torch.cat((self.buffers[name].narrow(self.seq_dim, 0, n_old), t),
                                   self.seq_dim) for name, t in new.items()}
            key_pos = torch.cat((self.positions[:n_old], new_pos))
        else:  # an empty cache: the keys are the new tokens, in order (see above)
            out, key_pos = dict(new), None
        keep = min(n_new, self.capacity)  # a ring buffer keeps only the newest `capacity` tokens
        slots = new_pos[-keep:] % self.capacity
        for name, t in new.items():
            self.buffers[name].index_copy_(self.seq_dim, slots, t.narrow(self.seq_dim, n_new - keep, keep))
        self.positions[slots] = new_pos[-keep:]
        return out, key_pos

    def _append_at_device_position(self, new: dict[str, torch.Tensor], start: torch.Tensor,
                                   n_new: int):
        """One token whose position is a 0-dim device tensor: every shape stays fixed and no
        value goes to the host, so the step can be captured as a CUDA graph or compiled once.
        Returns every slot with its position (-1 = empty); the caller masks."""
        if n_new != 1:
            raise ValueError("a device-side cache position takes one token at a time")
        slot = (start % self.capacity).view(1)
        for name, t in new.items():
            self.buffers[name].index_copy_(self.seq_dim, slot, t)
        self.positions.index_copy_(0, slot, start.view(1))
        return dict(self.buffers), self.positions

    def nbytes(self) -> int:
        return sum(b.numel() * b.element_size() for b in self.buffers.values())

    def reset(self) -> None:
        """Forget every token; the stale values stay, unread (no slot has a position)."""
        self.positions.fill_(-1)


def held_parts(layers) -> list:
    """Every per-layer cache and state: a hybrid layer's pair (KV cache, state) as two, and a
    layer that runs a shared block its mixer's state and the block's KV cache (its `parts`,
    nn/shared_blocks.UseCache)."""
    return [part for layer in layers if layer is not None
            for part in (layer if isinstance(layer, tuple) else getattr(layer, "parts", (layer,)))]


class KVCache:
    """Per decoder layer what it keeps (a LayerCache for attention, a constant-size state for
    a state mixer, both as a pair for a hybrid layer, None for an MLP-only layer) and the
    number of tokens seen so far."""

    def __init__(self, layers: list, max_len: int):
        self.layers = layers
        self.max_len = max_len  # the most tokens it was made for (positions 0 .. max_len-1)
        self.length = 0
        self._device_length = None  # see keep_length_on_device

    def nbytes(self) -> int:
        """Bytes the cache tensors and states hold (positions bookkeeping excluded)."""
        return self.kv_nbytes() + self.state_nbytes()

    def kv_nbytes(self) -> int:
        """Bytes of the per-token caches (attention layers)."""
        return sum(layer.nbytes() for layer in held_parts(self.layers) if isinstance(layer, LayerCache))

    def state_nbytes(self) -> int:
        """Bytes of the constant per-sequence states (state-mixer layers)."""
        return sum(layer.nbytes() for layer in held_parts(self.layers)
                   if not isinstance(layer, LayerCache))

    def reset(self) -> None:
        """Empty the cache for a new prompt, keeping its buffers (and so their addresses)."""
        for layer in held_parts(self.layers):
            layer.reset()
        self.length = 0

    def keep_length_on_device(self) -> None:
        """From now on hold `length` as a 0-dim tensor beside the buffers, advanced in place.

        For single-token steps only (a captured or compiled decode step): each layer then writes
        its slot and attends over all slots with a mask, with no shape or value from the host.
        """
        if self._device_length is None:
            kept = next(layer.positions if isinstance(layer, LayerCache) else layer.conv
                        for layer in held_parts(self.layers))  # states: a conv window
            self._device_length = torch.zeros((), dtype=torch.long, device=kept.device)
        # one tensor for the cache's life: a compiled or graph-captured step reads it in place
        self._device_length.fill_(int(self.length))
        self.length = self._device_length


def attention_mask(query_pos: torch.Tensor, key_pos: torch.Tensor, window: int | None,
                   chunk: int | None = None):
    """Boolean [T_q, T_k]: a query sees keys at or before it, within the window if any, and in
    its own chunk if any (positions floor(p/chunk)*chunk .. p; -1 marks an empty slot)."""
    mask = key_pos[None, :] <= query_pos[:, None]
    mask &= key_pos[None, :] >= 0
    if window is not None:
        mask &= key_pos[None, :] > query_pos[:, None] - window
    if chunk is not None:
        mask &= key_pos[None, :] // chunk == query_pos[:, None] // chunk
    return mask
