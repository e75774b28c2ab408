"""The Mamba-1 mixer against transformers' own classes (MambaMixer, FalconMambaMixer,
JambaMambaMixer), one tiny config each, the same weights loaded by name: outputs for a prompt
and 12 cached decode steps, each side with its own cache; the state transformers' own cache
object holds after a prefill (and after decode steps) against ours and against the estimate,
byte for byte and dtype for dtype; parameters against the modules; FLOPs against
FlopCounterMode; and negative controls showing the comparison sees a dropped D skip or a
dropped dt/B/C norm.

The three configs exercise what differs: Mamba with conv and projection biases and a 3-tap
conv; Falcon-Mamba's weightless RMS norms of dt, B and C (mixer_rms_eps); Jamba's weighted
ones (rms_norm_eps), no conv bias and dt_rank away from ceil(d / 16).
"""

import dataclasses

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import DynamicCache, FalconMambaConfig, JambaConfig, MambaConfig
from transformers.models.falcon_mamba.modeling_falcon_mamba import FalconMambaMixer
from transformers.models.jamba.modeling_jamba import JambaMambaMixer
from transformers.models.mamba.modeling_mamba import MambaMixer as HFMambaMixer

from archscope.kinds import mamba1 as formulas
from archscope.nn.mamba1 import MambaMixer
from archscope.spec.fields import from_mapping
from archscope.spec.mamba1 import MambaSpec
from parity import linear_attention_state, prompt_then_steps

TOL = 1e-4  # fp32; measured differences are about 1e-6
D, PROMPT, STEPS, BATCH = 32, 11, 12, 2

FAMILIES = {
    "mamba": (HFMambaMixer, lambda: MambaConfig(
        hidden_size=D, num_hidden_layers=1, state_size=8, expand=2, conv_kernel=3,
        use_bias=True, use_conv_bias=True, time_step_rank=5),
        dict(d_inner=64, dt_rank=5, d_state=8, conv_kernel=3, proj_bias=True)),
    "falcon_mamba": (FalconMambaMixer, lambda: FalconMambaConfig(
        hidden_size=D, num_hidden_layers=1, state_size=6, expand=2, mixer_rms_eps=1e-3),
        dict(d_inner=64, dt_rank=2, d_state=6, dt_bc_norm="unweighted", dt_bc_norm_eps=1e-3)),
    "jamba": (JambaMambaMixer, lambda: JambaConfig(
        hidden_size=D, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        mamba_d_state=10, mamba_d_conv=4, mamba_expand=3, mamba_dt_rank=7,
        mamba_conv_bias=False, rms_norm_eps=1e-5),
        dict(d_inner=96, dt_rank=7, d_state=10, conv_bias=False, dt_bc_norm="weighted",
             dt_bc_norm_eps=1e-5)),
}


def build(cls, config):
    """transformers' mixer for layer 0. FalconMambaMixer's own init reads its dt/B/C norms
    before it makes them (transformers 5.24), so Mamba's and Falcon-Mamba's mixers are built
    as their blocks build them, without it (the test sets every weight anyway)."""
    if cls is JambaMambaMixer:
        return cls(config, layer_idx=0)
    return cls(config, layer_idx=0, initialize_mixer_weights=False)


def spec_of(family: str, **changes) -> MambaSpec:
    return from_mapping(MambaSpec, {"kind": "mamba1", **FAMILIES[family][2], **changes})


def twins(family: str):
    """transformers' mixer with random weights, and ours with the same weights by name.
    Large weights keep every term well above the tolerance."""
    cls, config, _ = FAMILIES[family]
    hf = build(cls, config()).eval()
    hf.cache_config = config()  # what DynamicCache reads to give layer 0 a linear-attention cache
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            special = {"A_log": noise.abs(), "dt_proj.bias": noise - 1.0}
            p.copy_(special.get(name, 1 + 0.1 * noise if "layernorm" in name else 0.3 * noise))
    ours = MambaMixer(D, spec_of(family)).eval()
    ours.load_state_dict(hf.state_dict(), strict=True)
    return hf, ours


def inputs(seed: int = 1) -> torch.Tensor:
    return torch.randn(BATCH, PROMPT + STEPS, D, generator=torch.Generator().manual_seed(seed))


def run_hf(hf, x, cache=None, steps: int = STEPS):
    cache = cache if cache is not None else DynamicCache(config=hf.cache_config)
    return prompt_then_steps(lambda t: hf(t, cache=cache), x, PROMPT, steps), cache


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
    with torch.no_grad():  # one pass over the whole sequence gives the cached result
        assert (ours(x) - mine).abs().max() < TOL


def test_prompt_in_two_calls():
    """A prompt fed in two calls continues from the state (the conv's cached columns and the
    scan's state): the same as one call. (transformers' torch scan restarts from zeros on a
    second multi-token call, so the reference is our own single call.)"""
    _, ours = twins("jamba")
    x = inputs()
    with torch.no_grad():
        whole = ours(x[:, :PROMPT])
        state = ours.new_cache(BATCH)
        parts = torch.cat([ours(x[:, :7], cache=state), ours(x[:, 7:PROMPT], cache=state)], 1)
    assert (whole - parts).abs().max() < TOL


@pytest.mark.parametrize("family", FAMILIES)
def test_negative_controls(family):
    """The comparison sees a dropped D skip and, where the family has them, the dt/B/C norms."""
    hf, ours = twins(family)
    x = inputs()
    theirs, _ = run_hf(hf, x, steps=0)
    with torch.no_grad():
        ours.D.zero_()
        assert (ours(x[:, :PROMPT]) - theirs).abs().max() > 100 * TOL
        if family != "mamba":
            other = MambaMixer(D, spec_of(family, dt_bc_norm="none")).eval()
            other.load_state_dict(hf.state_dict(), strict=False)
            assert (other(x[:, :PROMPT]) - theirs).abs().max() > 100 * TOL


@pytest.mark.parametrize("family", FAMILIES)
def test_params(family):
    m = spec_of(family)
    cls, config, _ = FAMILIES[family]
    with torch.device("meta"):
        theirs = build(cls, config())
        mine = MambaMixer(D, m)
    count = formulas.param_count(m, D)
    assert count == sum(p.numel() for p in theirs.parameters())
    assert count == sum(p.numel() for p in mine.parameters())
    assert {n: p.shape for n, p in mine.named_parameters()} == {
        n: p.shape for n, p in theirs.named_parameters()}  # checkpoints map by name
    shapes = {(f"{w.module}.{w.name}".strip("."), w.shape)
              for p in formulas.parts(m, D) for w in p.weights}
    assert shapes == {(n, tuple(p.shape)) for n, p in mine.named_parameters()}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dtype,conv_bytes", [(torch.float32, 4), (torch.bfloat16, 2)])
def test_state_bytes(family, dtype, conv_bytes):
    """After a real prefill and after decode steps, transformers' own cache object and ours
    hold the formula's bytes: the conv state in the activations' dtype, the SSM state in fp32
    whatever the dtype."""
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
    """Our module runs exactly the formula's matmuls (the projections, the conv, dt_proj and
    the scan's readouts). transformers' torch path runs the same matmuls plus conv outputs it
    throws away: its prefill conv pads K-1 columns on both sides and keeps T of the T+K-1
    outputs; its decode conv runs over the K cached columns and the new one, two outputs of
    which it keeps the last. Those are the whole difference."""
    hf, ours = twins(family)
    m = spec_of(family)
    x = inputs()
    width, k = m.conv_dim, m.conv_kernel
    cache, state = DynamicCache(config=hf.cache_config), ours.new_cache(BATCH)
    prefill = BATCH * sum(formulas.prefill_flops(m, D, PROMPT).values())
    assert prefill == BATCH * PROMPT * sum(formulas.decode_flops(m, D).values())
    assert flops(lambda: ours(x[:, :PROMPT], cache=state)) == prefill
    assert flops(lambda: hf(x[:, :PROMPT], cache=cache)) == (
        prefill + BATCH * 2 * width * k * (k - 1))
    decode = BATCH * sum(formulas.decode_flops(m, D).values())
    assert flops(lambda: ours(x[:, PROMPT:PROMPT + 1], cache=state)) == decode
    assert flops(lambda: hf(x[:, PROMPT:PROMPT + 1], cache=cache)) == (
        decode + BATCH * 2 * width * k)


def test_spec_checks():
    from archscope.errors import SpecError
    with pytest.raises(SpecError, match="dt_rank"):
        spec_of("mamba", dt_rank=0)
    with pytest.raises(SpecError, match="dt_bc_norm"):
        spec_of("mamba", dt_bc_norm="layer")
    assert dataclasses.replace(spec_of("mamba"), d_state=4).d_state == 4


# --- whole models: the cache transformers' own model returns after a prefill ---------------

MODELS = {
    "mamba": dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, state_size=8,
                  conv_kernel=3, time_step_rank=5),
    "falcon_mamba": dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, state_size=6,
                         expand=3, intermediate_size=80),
    "jamba": dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2, attn_layer_period=2,
                  attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=0,
                  num_experts=4, num_experts_per_tok=2, mamba_d_state=8, mamba_dt_rank=3),
}


@pytest.mark.slow
@pytest.mark.parametrize("model_type", MODELS)
@pytest.mark.parametrize("dtype,name", [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_transformers_cache_after_a_prefill_holds_the_estimate(model_type, dtype, name,
                                                                tmp_path):
    """transformers' own model, built from a config.json that archscope reads: after a prefill
    its DynamicCache holds archscope's estimate byte for byte, the attention layers' keys and
    values (kv_cache_bytes) apart from the Mamba layers' conv windows (activations' dtype) and
    SSM states (fp32) (state_bytes). Then archscope's own cache after the same prefill."""
    import transformers

    from archscope.estimate import kv_cache_bytes
    from archscope.estimate.state import state_bytes
    from archscope.measure.reference import returned_cache
    from archscope.nn import build_model
    from archscope.spec import load_spec

    config = transformers.AutoConfig.for_model(model_type, bos_token_id=None,
                                               eos_token_id=None, pad_token_id=None,
                                               **MODELS[model_type])
    config.save_pretrained(tmp_path)
    spec = load_spec(tmp_path)
    hf = transformers.AutoModelForCausalLM.from_config(config).to(dtype).eval()
    ids = torch.randint(0, 97, (BATCH, PROMPT), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        cache = returned_cache(hf(ids, use_cache=True))
    kv = [t for layer in cache.layers for t in (getattr(layer, "keys", None),
                                                 getattr(layer, "values", None))
          if isinstance(t, torch.Tensor)]
    conv = [t for layer in cache.layers for t in getattr(layer, "conv_states", {}).values()
            if isinstance(t, torch.Tensor)]
    ssm = [t for layer in cache.layers for t in getattr(layer, "recurrent_states", {}).values()
           if isinstance(t, torch.Tensor)]
    assert {t.dtype for t in conv} == {dtype} and {t.dtype for t in ssm} == {torch.float32}
    assert len(conv) == len(ssm) == sum(layer.state is not None for layer in spec.plan)
    assert sum(t.nbytes for t in kv) == kv_cache_bytes(spec, PROMPT, BATCH, name)
    assert sum(t.nbytes for t in conv + ssm) == state_bytes(spec, BATCH, name)
    ours = build_model(spec).to(dtype).eval()
    held = ours.new_cache(BATCH, PROMPT)
    with torch.no_grad():
        ours(ids, held)
    assert held.state_nbytes() == state_bytes(spec, BATCH, name)


@pytest.mark.slow
def test_jamba_per_expert_files_load(tmp_path):
    """AI21's files hold one gate_proj, up_proj and down_proj per expert (transformers' own
    conversion fuses them): merged while loading, the logits are transformers' own."""
    import transformers
    from safetensors.torch import load_file, save_file

    from archscope.weights import load_checkpoint
    from parity import max_diff, randomised

    config = transformers.AutoConfig.for_model("jamba", bos_token_id=None, eos_token_id=None,
                                               pad_token_id=None, **MODELS["jamba"])
    hf = randomised(transformers.AutoModelForCausalLM.from_config(
        config, attn_implementation="eager")).eval()
    hf.save_pretrained(tmp_path)
    path = tmp_path / "model.safetensors"
    split = {}
    for name, t in load_file(path).items():
        stem, _, proj = name.rpartition(".experts.")
        if proj == "gate_up_proj":
            for j, e in enumerate(t):
                gate, up = e.chunk(2, dim=0)
                split[f"{stem}.experts.{j}.gate_proj.weight"] = gate.contiguous()
                split[f"{stem}.experts.{j}.up_proj.weight"] = up.contiguous()
        elif proj == "down_proj":
            split.update({f"{stem}.experts.{j}.down_proj.weight": e.contiguous()
                          for j, e in enumerate(t)})
        else:
            split[name] = t
    assert "model.layers.0.feed_forward.experts.3.up_proj.weight" in split
    save_file(split, path, metadata={"format": "pt"})
    ours, _ = load_checkpoint(tmp_path)
    ids = torch.randint(0, 97, (1, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert max_diff(ours(ids), hf(ids).logits) < TOL
