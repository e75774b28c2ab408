"""Phi-3.5-MoE's SparseMixer router (router.method sparsemixer) against transformers' own
`sparsemixer` in eval mode, and its routing free of host synchronisation (what a compiled
decode step needs). The MoE paths are tests/nn/test_moe_sync_free.py's, the model the
phimoe conformance case's."""

from __future__ import annotations

import pytest
import torch
from transformers.models.phimoe.modeling_phimoe import sparsemixer

from archscope.nn.router import Router
from archscope.spec.schema import RouterSpec

N_EXPERTS, D = 8, 16


def _router(eps: float, top_k: int = 2) -> Router:
    router = Router(D, N_EXPERTS, top_k, RouterSpec(method="sparsemixer", jitter_eps=eps,
                                                     normalize=False))
    with torch.no_grad():
        router.weight.copy_(torch.randn(N_EXPERTS, D, generator=torch.Generator().manual_seed(5)))
    return router


@pytest.mark.parametrize("eps", [0.0, 0.01, 0.2, 1.0])
def test_weights_and_experts_equal_transformers_sparsemixer(eps):
    router = _router(eps)
    x = torch.randn(64, D, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        weights, index = router(x)
        theirs, chosen = sparsemixer(x @ router.weight.T, jitter_eps=eps, training=False)
    assert torch.equal(index, chosen)
    torch.testing.assert_close(weights, theirs, rtol=1e-6, atol=1e-7)
    # the masks matter: below 1 a pick's weight is not its plain softmax over every logit
    if eps < 1:
        plain = (x @ router.weight.T).softmax(-1).gather(-1, index)
        assert not torch.allclose(weights, plain)


def test_the_routing_compiles_without_a_graph_break():
    """Every shape comes from top_k: one graph, no data-dependent branch or host read."""
    router = _router(0.01)
    compiled = torch.compile(router, backend="eager", fullgraph=True)
    x = torch.randn(3, D)
    with torch.no_grad():
        got, want = compiled(x), router(x)
    assert torch.equal(got[1], want[1]) and torch.equal(got[0], want[0])
