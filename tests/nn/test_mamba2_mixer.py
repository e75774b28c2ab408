"""The Mamba-2 mixer against transformers' own classes (GraniteMoeHybridMambaLayer,
NemotronHMamba2Mixer, BambaMixer), one tiny config each, the same weights loaded by name:
outputs for a prompt of three chunks (the last one padded) and 12 cached decode steps, each
side with its own cache; the states both hold; the formulas for parameters, state bytes and
FLOPs against the modules, the caches and FlopCounterMode; and negative controls showing the
comparison sees a dropped D skip or a dropped dt clamp.

The three configs exercise what differs between the families: Granite groups B/C in 2 groups;
Nemotron-H sets the width apart from expand (6 heads x 8 = 48, not 2 x 32), 3 groups, a
3-tap conv without bias, projection biases from `use_bias`, P != N, and clamps dt from below at
time_step_min; Bamba has one group, 16-wide heads and an upper clamp (time_step_limit).
"""

import dataclasses

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode
from transformers import BambaConfig, DynamicCache, GraniteMoeHybridConfig, NemotronHConfig
from transformers.models.bamba.modeling_bamba import BambaMixer
from transformers.models.granitemoehybrid.modeling_granitemoehybrid import (
    GraniteMoeHybridMambaLayer)
from transformers.models.nemotron_h.modeling_nemotron_h import NemotronHMamba2Mixer

from archscope.errors import SpecError
from archscope.kinds import mamba2 as formulas
from archscope.nn.mamba2 import GatedRMSNorm, Mamba2Mixer
from archscope.spec.fields import from_mapping
from archscope.spec.mamba2 import Mamba2Spec
from parity import linear_attention_state, prompt_then_steps

TOL = 1e-4  # fp32; measured differences are about 1e-6 (see test_outputs_match)
D, PROMPT, STEPS, BATCH, EPS = 32, 11, 12, 2, 1e-5  # 11 tokens = chunks of 4, 4 and 3 (+1 pad)
COMMON = dict(hidden_size=D, num_attention_heads=4, num_key_value_heads=2, vocab_size=50)

FAMILIES = {
    "granite": (GraniteMoeHybridMambaLayer, lambda: GraniteMoeHybridConfig(
        **COMMON, num_hidden_layers=1, layer_types=["mamba"], rms_norm_eps=EPS, mamba_n_heads=8,
        mamba_n_groups=2, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=4),
        dict(n_heads=8, head_dim=8, d_state=8, n_groups=2, conv_kernel=4, chunk_size=4), 0.0),
    "nemotron_h": (NemotronHMamba2Mixer, lambda: NemotronHConfig(
        **COMMON, head_dim=8, layers_block_type=["mamba"], layer_norm_epsilon=EPS,
        mamba_num_heads=6, mamba_head_dim=8, n_groups=3, ssm_state_size=10, conv_kernel=3,
        chunk_size=4, use_bias=True, use_conv_bias=False, time_step_min=0.05),
        dict(n_heads=6, head_dim=8, d_state=10, n_groups=3, conv_kernel=3, chunk_size=4,
             proj_bias=True, conv_bias=False, dt_limit_min=0.05), -2.5),
    "bamba": (BambaMixer, lambda: BambaConfig(
        **COMMON, num_hidden_layers=1, rms_norm_eps=EPS, mamba_n_heads=4, mamba_n_groups=1,
        mamba_d_state=6, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=4,
        mamba_proj_bias=True, time_step_limit=(0.0, 0.5)),
        dict(n_heads=4, head_dim=16, d_state=6, chunk_size=4, proj_bias=True,
             dt_limit_max=0.5), 0.0),
}


def spec_of(family: str) -> Mamba2Spec:
    return from_mapping(Mamba2Spec, {"kind": "mamba2", **FAMILIES[family][2]})


def twins(family: str):
    """transformers' mixer with random weights, and ours with the same weights by name.

    Large weights keep every term well above the tolerance; dt_bias is shifted per family so
    that a clamp, where the family has one, bites on some heads and steps (test_dt_clamp)."""
    cls, config, _, dt_shift = FAMILIES[family]
    hf = cls(config(), layer_idx=0).eval()
    hf.cache_config = config()  # what DynamicCache reads to give layer 0 a linear-attention cache
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            special = {"norm.weight": 1 + 0.1 * noise, "dt_bias": noise + dt_shift}
            p.copy_(special.get(name, 0.3 * noise))
    ours = Mamba2Mixer(D, spec_of(family), EPS).eval()
    ours.load_state_dict(hf.state_dict(), strict=True)
    return hf, ours


def inputs(seed: int = 1) -> torch.Tensor:
    return torch.randn(BATCH, PROMPT + STEPS, D, generator=torch.Generator().manual_seed(seed))


def run_hf(hf, x, cache=None, steps: int = STEPS):
    cache = cache if cache is not None else DynamicCache(config=hf.cache_config)
    return prompt_then_steps(lambda t: hf(t, cache_params=cache), x, PROMPT, steps), cache


def run_ours(ours, x, state=None, steps: int = STEPS):
    state = state if state is not None else ours.new_cache(BATCH)
    return prompt_then_steps(lambda t: ours(t, cache=state), x, PROMPT, steps), state


@pytest.mark.parametrize("family", FAMILIES)
def test_outputs_match(family):
    hf, ours = twins(family)
    x = inputs()
    theirs, cache = run_hf(hf, x)
    mine, state = run_ours(ours, x)
    prefill = (theirs[:, :PROMPT] - mine[:, :PROMPT]).abs().max().item()
    decode = (theirs[:, PROMPT:] - mine[:, PROMPT:]).abs().max().item()
    assert theirs.abs().max() > 1  # outputs of size ~1..10: the tolerance is a relative 1e-5
    assert prefill < TOL and decode < TOL, (prefill, decode)
    conv, ssm = linear_attention_state(cache)
    assert torch.equal(state.conv, conv)  # the same K columns of the same inputs
    assert (state.ssm - ssm).abs().max() < TOL
    # one pass over the whole sequence (the scan from a fresh state) gives the cached result,
    # unless a dt clamp bites: the scan clamps every step, the cached steps are not clamped
    m = spec_of(family)
    if m.dt_limit_min == 0 and m.dt_limit_max is None:
        with torch.no_grad():
            assert (ours(x) - mine).abs().max() < TOL


def test_prompt_in_two_calls():
    """A prompt fed in two calls (7 tokens, then 4 from the state: the scan's initial state and
    the conv's cached columns) then decode steps: the same as transformers, call for call."""
    hf, ours = twins("granite")
    x = inputs()
    cache, state = DynamicCache(config=hf.cache_config), ours.new_cache(BATCH)
    with torch.no_grad():
        for lo, hi in ((0, 7), (7, PROMPT), (PROMPT, PROMPT + 1), (PROMPT + 1, PROMPT + 2)):
            diff = hf(x[:, lo:hi], cache_params=cache) - ours(x[:, lo:hi], cache=state)
            assert diff.abs().max() < TOL, (lo, hi)


@pytest.mark.parametrize("family", FAMILIES)
def test_params(family):
    m = spec_of(family)
    cls, config, *_ = FAMILIES[family]
    with torch.device("meta"):
        theirs = cls(config(), layer_idx=0)
        mine = Mamba2Mixer(D, m, EPS)
    count = formulas.param_count(m, D)
    assert count == sum(p.numel() for p in theirs.parameters())
    assert count == sum(p.numel() for p in mine.parameters())
    assert {n: p.shape for n, p in mine.named_parameters()} == {
        n: p.shape for n, p in theirs.named_parameters()}  # checkpoints map by name
    assert {p.name.split(".", 1)[1] for p in formulas.parts(m, D)} == {
        n.split(".")[0] for n, _ in mine.named_parameters()}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dtype,conv_bytes", [(torch.float32, 4), (torch.bfloat16, 2)])
def test_state_bytes(family, dtype, conv_bytes):
    """After a real prefill and after decode steps, both sides hold the formula's bytes: the
    conv state in the activations' dtype, the SSM state in fp32 whatever the dtype."""
    hf, ours = twins(family)
    hf, ours = hf.to(dtype), ours.to(dtype)
    x = inputs().to(dtype)
    m = spec_of(family)
    expected = BATCH * formulas.state_bytes(m, conv_bytes)
    for steps in (0, 3):
        _, cache = run_hf(hf, x, steps=steps)
        _, state = run_ours(ours, x, steps=steps)
        conv, ssm = linear_attention_state(cache)
        assert (conv.dtype, ssm.dtype) == (dtype, torch.float32)
        assert (state.conv.dtype, state.ssm.dtype) == (dtype, torch.float32)
        assert state.conv.shape == conv.shape and state.ssm.shape == ssm.shape
        assert conv.nbytes + ssm.nbytes == state.nbytes() == expected


def flops(fn) -> int:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.mark.parametrize("family", FAMILIES)
def test_flops(family):
    """Our module runs exactly the formula's matmuls. transformers' torch path runs the same
    matmuls (in_proj, out_proj, the five einsums of the scan, the decode readout bmm) plus conv
    outputs it throws away: its prefill conv pads K-1 columns on both sides and keeps T of
    the T+K-1 outputs; its decode conv runs over the K cached columns and the new one, two
    outputs of which it keeps the last. Those are the whole difference."""
    hf, ours = twins(family)
    m = spec_of(family)
    x = inputs()
    width, k = m.conv_dim, m.conv_kernel
    cache, state = DynamicCache(config=hf.cache_config), ours.new_cache(BATCH)
    prefill = BATCH * sum(formulas.prefill_flops(m, D, PROMPT).values())
    assert flops(lambda: ours(x[:, :PROMPT], cache=state)) == prefill
    assert flops(lambda: hf(x[:, :PROMPT], cache_params=cache)) == (
        prefill + BATCH * 2 * width * k * (k - 1))
    decode = BATCH * sum(formulas.decode_flops(m, D).values())
    assert flops(lambda: ours(x[:, PROMPT:PROMPT + 1], cache=state)) == decode
    assert flops(lambda: hf(x[:, PROMPT:PROMPT + 1], cache_params=cache)) == (
        decode + BATCH * 2 * width * k)


def test_prefill_flops_terms():
    """The scan's terms by hand for one shape: T = 11, Q = 4 -> c = 3 chunks."""
    m = spec_of("granite")  # H = 8, P = 8, N = 8, G = 2, K = 4, W = 64 + 32 = 96
    f = formulas.prefill_flops(m, D, 11)
    assert f["mixer.ssd.scores"] == 2 * 3 * 4 * 4 * 8 * 8
    assert f["mixer.ssd.state_passing"] == 2 * 4 * 4 * 8 * 8 * 8
    assert f["mixer.in_proj"] == 2 * 11 * D * (64 + 96 + 8)
    assert f["mixer.conv1d"] == 2 * 11 * 96 * 4
    assert formulas.prefill_flops(m, D, 0) == {}
    assert formulas.decode_flops(m, D)["mixer.ssm.readout"] == 2 * 8 * 8 * 8


def test_negative_control_d_skip():
    """Leaving out the D skip moves the outputs far past the tolerance."""
    hf, ours = twins("granite")
    x = inputs()
    theirs, _ = run_hf(hf, x)
    with torch.no_grad():
        ours.D.zero_()
    mine, _ = run_ours(ours, x)
    assert (theirs - mine).abs().max() > 100 * TOL


@pytest.mark.parametrize("family,change", [("nemotron_h", dict(dt_limit_min=0.0)),
                                           ("bamba", dict(dt_limit_max=None))])
def test_dt_clamp(family, change):
    """The clamp bites in these configs: without it the prefill moves past the tolerance, while
    the decode steps (which transformers does not clamp) would agree on their own inputs."""
    hf, ours = twins(family)
    unclamped = Mamba2Mixer(D, dataclasses.replace(spec_of(family), **change), EPS).eval()
    unclamped.load_state_dict(ours.state_dict())
    x = inputs()
    with torch.no_grad():
        theirs = hf(x[:, :PROMPT])
        assert (theirs - ours(x[:, :PROMPT])).abs().max() < TOL
        assert (theirs - unclamped(x[:, :PROMPT])).abs().max() > 100 * TOL


def test_norm_before_gate():
    """norm_before_gate (mamba_ssm's option, no family here uses it): normalise each group of y,
    weight, then gate; the default gates first. Both against the formula written out."""
    g = torch.Generator().manual_seed(0)
    y, z = torch.randn(2, 3, 12, generator=g), torch.randn(2, 3, 12, generator=g)
    w = 1 + 0.1 * torch.randn(12, generator=g)

    def rms_groups(t):  # RMS over each group of 4 channels
        t = t.unflatten(-1, (3, 4))
        return (t / (t.pow(2).mean(-1, keepdim=True) + EPS).sqrt()).flatten(-2)

    for before, expected in ((True, rms_groups(y) * w * F.silu(z)),
                             (False, rms_groups(y * F.silu(z)) * w)):
        norm = GatedRMSNorm(12, 4, EPS, before)
        with torch.no_grad():
            norm.weight.copy_(w)
            assert (norm(y, z) - expected).abs().max() < 1e-5


@pytest.mark.parametrize("change,key", [
    (dict(n_groups=3), "n_groups"),  # 8 heads in 3 groups
    (dict(head_dim=0), "head_dim"),
    (dict(dt_limit_min=-0.1), "dt_limit_min"),
    (dict(dt_limit_min=0.5, dt_limit_max=0.5), "dt_limit_max"),
    (dict(kind="mamba"), "kind"),
    (dict(d_sate=8), "d_sate"),
])
def test_spec_refuses(change, key):
    with pytest.raises(SpecError) as err:
        from_mapping(Mamba2Spec, {"kind": "mamba2", **FAMILIES["granite"][2], **change})
    assert err.value.key == key
    if key == "d_sate":
        assert "did you mean 'd_state'" in str(err.value)


def test_spec_widths():
    m = spec_of("nemotron_h")
    assert (m.d_inner, m.conv_dim, m.in_proj_width) == (48, 48 + 2 * 3 * 10, 48 + 108 + 6)
    assert (m.heads_per_group, m.norm_group_size) == (2, 16)
