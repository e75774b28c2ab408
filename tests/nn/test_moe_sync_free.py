"""The fixed-shape MoE forms (archscope.nn.moe_sync_free) against the reference loop and the
sorted path, for each router and expert variant, and the router's fp32 weight kept once."""

from __future__ import annotations

import pytest
import torch

from archscope.nn.moe import EXPERT_PATHS, MoE, pick_path
from parity import tiny_spec

MOE = dict(kind="moe", n_experts=4, top_k=2, d_expert=16)
VARIANTS = {
    "mixtral": dict(MOE, router=dict(normalize=True)),
    "deepseek-shared-scaled": dict(MOE, n_shared_experts=1,
                                   router=dict(normalize=False, scaling_factor=2.5)),
    "gpt-oss-biases-limit": dict(MOE, bias=True, limit=1.5, activation="quick_gelu",
                                 router=dict(bias=True)),
    "llama4-input-weights": dict(MOE, top_k=1, router=dict(scoring="sigmoid", normalize=False,
                                                           weights="input")),
    "phimoe-sparsemixer": dict(MOE, router=dict(method="sparsemixer", jitter_eps=0.3,
                                                normalize=False)),
    # Nemotron-H: ungated squared-ReLU experts and shared expert
    "nemotron-h-relu2-experts": dict(MOE, expert="relu2", n_shared_experts=1, d_shared=24,
                                     router=dict(method="noaux_tc", scoring="sigmoid",
                                                 n_group=2, topk_group=1,
                                                 correction_bias=True)),
    "nemotron-h-latent": dict(MOE, expert="relu2", d_latent=24, n_shared_experts=1),
}


def random_moe(ffn: dict, dtype=torch.float32) -> MoE:
    spec = tiny_spec(ffn=ffn)
    moe = MoE(spec, spec.ffn)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in moe.parameters():  # biases too: a bias is where a dropped expert would show
            p.copy_(0.3 * torch.randn(p.shape, generator=generator))
    return moe.to(dtype).eval()


@pytest.mark.parametrize("tokens", [1, 2, 9], ids=["decode", "decode-batch", "prefill"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_path_gives_the_reference_sum(variant, tokens):
    moe = random_moe(VARIANTS[variant])
    x = torch.randn(1, tokens, moe.gate.weight.shape[1], generator=torch.Generator().manual_seed(4))
    out = {}
    with torch.no_grad():
        for path in EXPERT_PATHS:
            moe.experts.path = path
            out[path] = moe(x)
    assert out["reference"].abs().max() > 0.1  # far from trivially zero
    for path in ("sorted", "gathered", "dense"):
        # fp32 rounding only: the same products, summed in another order
        torch.testing.assert_close(out[path], out["reference"], rtol=1e-5, atol=1e-5)


def test_auto_path_sorts_on_the_cpu_and_never_reads_the_routing():
    """On the CPU, outside compilation, the sorted path; the choice uses shapes only."""
    index = torch.zeros(2, 2, dtype=torch.long)
    assert pick_path(torch.zeros(2, 8), index, n_experts=4) == "sorted"


def test_router_weight_cast_once_gives_the_same_routing():
    moe = random_moe(VARIANTS["gpt-oss-biases-limit"], dtype=torch.bfloat16)
    x = torch.randn(5, moe.gate.weight.shape[1], dtype=torch.bfloat16)
    with torch.no_grad():
        per_call = moe.gate(x)
        moe.gate.keep_fp32_copy()
        assert moe.gate.weight_fp32[0].dtype == torch.float32
        once = moe.gate(x)
    assert torch.equal(once[0], per_call[0]) and torch.equal(once[1], per_call[1])
