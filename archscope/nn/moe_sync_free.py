"""Routed experts with fixed shapes and no host synchronisation: what a compiled or
CUDA-graph-captured decode step runs.

The sorted path (moe.experts_batched) sizes its groups from the routing itself (bincount,
nonzero, `.max()`), so on a GPU the host waits for every MoE layer of every step, and a graph
cannot be captured. These two forms take every shape from x and top_k alone:

- `experts_gathered`: each (token, slot) pair fetches its expert's weights with index_select
  and runs a batched matrix-vector product. It reads only the routed experts (N * top_k of them,
  copied once), which is the decode case: use it while N * top_k <= n_experts.
- `experts_dense`: every expert over every token, and a [N, n_experts] mix that is zero
  outside each token's top_k. It reads each expert once and computes n_experts / top_k times
  the routed work: for many tokens, where nearly every expert is touched anyway.

Both compute the same sum as experts_reference (tests/nn/test_moe_sync_free.py).
"""

from __future__ import annotations

import torch


def experts_gathered(experts, x, weights, index) -> torch.Tensor:
    """x [N, d], weights [N, k] (fp32), index [N, k] -> [N, d]; reads the N*k routed experts."""
    gate_up_proj, down_proj, gate_up_bias, down_bias = experts.held()
    n, k = index.shape
    flat = index.reshape(-1)
    rows = x[:, None].expand(n, k, x.shape[1]).reshape(n * k, 1, x.shape[1])
    w = weights.reshape(n * k, 1, 1)
    if experts.weigh_input:
        rows = (rows * w).to(x.dtype)
    h = torch.bmm(rows, gate_up_proj.index_select(0, flat).transpose(1, 2))
    if gate_up_bias is not None:
        h = h + gate_up_bias.index_select(0, flat)[:, None]
    y = torch.bmm(experts.unit(h), down_proj.index_select(0, flat).transpose(1, 2))
    if down_bias is not None:
        y = y + down_bias.index_select(0, flat)[:, None]
    y = (y if experts.weigh_input else y * w).to(x.dtype)
    return y.view(n, k, -1).sum(dim=1)


def experts_dense(experts, x, weights, index) -> torch.Tensor:
    """The same sum with every expert run on every token, weighted 0 where not routed."""
    gate_up_proj, down_proj, gate_up_bias, down_bias = experts.held()
    n_experts = gate_up_proj.shape[0]
    # [n_experts, N, 1]: each expert's weight for each token (0 where not routed), and where routed
    mix = weights.new_zeros(x.shape[0], n_experts).scatter_(1, index, weights).t()[..., None]
    routed = torch.zeros(x.shape[0], n_experts, dtype=torch.bool, device=x.device).scatter_(
        1, index, True).t()[..., None]
    rows = (mix * x).to(x.dtype) if experts.weigh_input else x.expand(n_experts, *x.shape)
    h = torch.bmm(rows, gate_up_proj.transpose(1, 2))
    if gate_up_bias is not None:
        h = h + gate_up_bias[:, None]
    y = torch.bmm(experts.unit(h), down_proj.transpose(1, 2))
    if down_bias is not None:
        y = y + down_bias[:, None]
    # an expert not routed to a token adds nothing, even where its bias would make it nonzero
    y = torch.where(routed, y if experts.weigh_input else y * mix, 0.0).to(x.dtype)
    return y.sum(dim=0)
