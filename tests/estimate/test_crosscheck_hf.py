"""The estimators against transformers' own classes: parameters of every full-size preset on the
meta device, and FLOPs of a tiny variant of every preset under torch's FlopCounterMode.

The HF configs come from archscope's exporter; transformers' classes are the reference.
"""

from __future__ import annotations

import pytest

from archscope.estimate import count_params, prefill_flops
from archscope.spec import ModelSpec, load_spec, preset_names
from archscope.spec.hf import spec_to_hf_config

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def hf_config(spec: ModelSpec) -> transformers.PretrainedConfig:
    """transformers' config for the spec, through archscope's exporter: if the export dropped or
    changed anything that shapes the network, transformers' class would count differently."""
    return transformers.AutoConfig.for_model(**spec_to_hf_config(spec))


@pytest.mark.parametrize("name", preset_names())
def test_params_match_transformers_on_meta(name):
    spec = load_spec(name)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config(spec))
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", preset_names())
def test_full_prefill_flops_match_transformers_on_a_tiny_variant(name, tiny_variant):
    from torch.utils.flop_counter import FlopCounterMode

    spec = tiny_variant(load_spec(name))
    cfg = hf_config(spec)
    model = transformers.AutoModelForCausalLM.from_config(
        cfg, attn_implementation="eager", experts_implementation="eager").eval()
    # frozen: DbrxExperts hands parameter views to a submodule, which FlopCounterMode would
    # otherwise hook for backward ("Expected gradient function to be set")
    model.requires_grad_(False)
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    ids = torch.randint(0, spec.vocab_size, (2, 10))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(ids)
    estimate = prefill_flops(spec, 10, batch=2, attention="full").total
    expected = estimate + dense_dispatch_flops(spec, 2 * 10) + 2 * state_mixer_difference(spec, 10)
    assert expected == counter.get_total_flops()


def state_mixer_difference(spec: ModelSpec, tokens: int) -> int:
    """What transformers' torch path of a state mixer counts beyond the estimate, one sequence.
    Its causal conv pads both ends by K - 1 and computes K - 1 outputs per channel it then
    slices off (2 (K-1) K conv_dim FLOPs a layer, counted); the Gated DeltaNet's chunked delta
    rule solves its unit-triangular systems by a row loop of elementwise products, which the
    counter does not see, though the estimate counts them (`ut_solve`)."""
    from archscope.kinds import mixer_kind

    extra = 0
    for layer in spec.plan:
        m = layer.state
        if m is not None and hasattr(m, "conv_kernel"):  # lightning has no conv
            extra += 2 * (m.conv_kernel - 1) * m.conv_kernel * m.conv_dim
        if m is not None:
            extra -= mixer_kind(m.kind).scan_flops(m, tokens).get("ut_solve", 0)
    return extra


def dense_dispatch_flops(spec: ModelSpec, tokens: int) -> int:
    """What transformers computes beyond the top_k experts: its Llama 4 experts (the router
    weight on the input, routing.weights "input") run every expert on every token, the
    unchosen ones on an input scaled by 0. The estimate counts the top_k chosen (its convention);
    here the other experts' three matmuls are added back, exactly."""
    extra = 0
    for layer in spec.plan:
        f = layer.ffn
        if layer.is_moe and f.routing.weights == "input":
            extra += (f.n_experts - f.top_k) * tokens * 2 * 3 * spec.d_model * f.d_expert
    return extra
