"""Modules that use a weight as a tensor, not through its Linear, read it through `local`.

Under tensor or expert parallelism (archscope.distributed) a parameter is a DTensor whose
local shard is what this rank computes with; MLA's absorbed decode (kv_b_proj's weight split
per head) and the fused routed experts index the weight directly, so they take the shard
explicitly. Whole (unsharded) models pass through unchanged: one code path for both.
"""

from __future__ import annotations

import torch


def local(t: torch.Tensor) -> torch.Tensor:
    """The part of `t` this process holds: a DTensor's local shard, or `t` itself."""
    return t.to_local() if hasattr(t, "to_local") else t
