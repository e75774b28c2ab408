"""Falcon-H1 (attention and Mamba-2 side by side in every layer, µP multipliers) against
transformers' FalconH1ForCausalLM, beyond the conformance cases: the KV cache AND the Mamba-2
state that transformers' own cache object holds after a prefill equal archscope's estimates, in
fp32 and bf16 (the SSM state stays fp32); a prompt over several scan chunks then cached steps;
negative controls (each multiplier, and either mixer of a hybrid layer, changes the logits);
the presets on the meta device."""

import pytest
import torch

from archscope.estimate import count_params, kv_cache_bytes
from archscope.estimate.state import state_bytes
from archscope.measure.reference import returned_cache
from parity import checked_preset, load_same_weights, max_diff, tiny_spec, twin_case

T, PREFILL = 40, 27  # chunks of 8: 27 = 3 whole chunks and 3 tokens
MIXER = dict(kind="mamba2", n_heads=8, head_dim=8, d_state=8, n_groups=2, conv_kernel=4,
             chunk_size=8, gated_norm=True, norm_before_gate=True,
             proj_multipliers=[0.5, 1.5, 0.75, 1.25, 2.0])
MULTS = dict(embedding=2.0, logits=2.0, attention=0.125, attention_in=2.0, attention_out=0.5,
             mixer_in=0.5, mixer_out=2.0, ffn_gate=1.5, ffn_out=0.75)


def falcon_h1(**changes):
    base = dict(n_layers=3, mixer=MIXER, multipliers=MULTS,
                layers=[dict(select="0:3", mixer="hybrid")])
    return tiny_spec(**{**base, **changes})


@pytest.fixture(scope="module")
def setup():
    return twin_case(falcon_h1(), T)


def test_transformers_builds_hybrid_layers(setup):
    spec, hf, ours, _, _ = setup
    assert type(hf).__name__ == "FalconH1ForCausalLM"
    assert [layer.layer_type for layer in spec.plan] == hf.config.layers_block_type
    assert all(b.hybrid and b.mixer_name == "self_attn" for b in ours.layers)


def test_a_long_prefill_then_cached_steps_match(setup):
    _, _, ours, ids, reference = setup
    assert reference.abs().max() > 1
    cache = ours.new_cache(2, T)
    with torch.no_grad():
        outs = [ours(ids[:, :PREFILL], cache)]
        outs += [ours(ids[:, i:i + 1], cache) for i in range(PREFILL, T)]
    assert max_diff(torch.cat(outs, 1), reference) < 1e-4


@pytest.mark.parametrize("changed", [
    dict(multipliers={**MULTS, "attention_in": 1.0}), dict(multipliers={**MULTS, "mixer_in": 1.0}),
    dict(multipliers={**MULTS, "mixer_out": 1.0}), dict(multipliers={**MULTS, "ffn_gate": 1.0}),
    dict(multipliers={**MULTS, "attention": None}),
    dict(mixer={**MIXER, "proj_multipliers": None}),
    dict(mixer={**MIXER, "norm_before_gate": False})])
def test_negative_controls_each_multiplier_changes_the_logits(setup, changed):
    _, hf, _, ids, reference = setup
    other = load_same_weights(falcon_h1(**changed), hf, "falcon_h1")
    with torch.no_grad():
        assert max_diff(other(ids), reference) > 1e-2


def test_negative_control_a_hybrid_layer_runs_both_mixers(setup):
    """The same weights with each hybrid block's attention output scaled by 1e-5 (the mixer
    alone) give other logits: both mixers contribute."""
    spec, hf, _, ids, reference = setup
    alone = load_same_weights(falcon_h1(multipliers={**MULTS, "attention_out": 1e-5}), hf,
                              "falcon_h1")
    with torch.no_grad():
        assert max_diff(alone(ids), reference) > 1e-2


@pytest.mark.parametrize("dtype,name", [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_transformers_cache_holds_the_estimated_kv_and_state(setup, dtype, name):
    """After a 27-token prefill, transformers' DynamicCache holds per layer keys and values
    [B, kv_heads, 27, head_dim] in the model's dtype AND conv_states [B, conv_dim, K] (model's
    dtype) and recurrent_states [B, H, P, N] (fp32): kv_cache_bytes and state_bytes, byte for
    byte; archscope's cache after the same prefill holds the same."""
    spec, hf, ours, ids, _ = setup
    model = hf.to(dtype)
    try:
        with torch.no_grad():
            cache = returned_cache(model(ids[:, :PREFILL], use_cache=True))
    finally:
        hf.to(torch.float32)
    kv = [t for layer in cache.layers for t in (layer.keys, layer.values)]
    conv = [t for layer in cache.layers for t in layer.conv_states.values()]
    ssm = [t for layer in cache.layers for t in layer.recurrent_states.values()]
    assert len(kv) == 2 * spec.n_layers and len(conv) == len(ssm) == spec.n_layers
    assert {t.dtype for t in kv + conv} == {dtype} and {t.dtype for t in ssm} == {torch.float32}
    nbytes = lambda ts: sum(t.numel() * t.element_size() for t in ts)  # noqa: E731
    assert nbytes(kv) == kv_cache_bytes(spec, PREFILL, 2, name)
    assert nbytes(conv + ssm) == state_bytes(spec, 2, name)
    mine = ours.to(dtype).new_cache(2, PREFILL)
    try:
        with torch.no_grad():
            ours(ids[:, :PREFILL], mine)
    finally:
        ours.to(torch.float32)
    assert (mine.kv_nbytes(), mine.state_nbytes()) == (nbytes(kv), nbytes(conv + ssm))


def test_the_estimate_counts_both_mixers():
    """A hybrid layer's parameters are its attention's, its FFN's and norms' plus a whole
    Mamba-2 mixer's: the same model with attention layers instead holds exactly n_layers
    mixers fewer (estimate and built modules agree in the conformance cases)."""
    from archscope.kinds import mamba2

    spec = falcon_h1()
    attention_only = spec.replace(mixer=None, layers=())
    per_mixer = mamba2.param_count(spec.mixer, spec.d_model)
    assert count_params(spec).total - count_params(attention_only).total == \
        spec.n_layers * per_mixer


@pytest.mark.parametrize("name,total", [("falcon-h1-7b", 7_585_513_568),
                                        ("falcon-h1-34b", 31_445_270_272)])
def test_the_presets_on_meta_equal_transformers(name, total):
    """Each preset exported and built by FalconH1ForCausalLM on the meta device holds the
    estimate's parameters (the 7B: "7.59B" on its card; the 34B's vocabulary is uncertain,
    see its header)."""
    spec, p, theirs = checked_preset(name, "FalconH1ForCausalLM")
    assert p.total == total
    assert theirs.config.layers_block_type == ["hybrid"] * spec.n_layers


# tiiuae/Falcon-H1-0.5B-Instruct's config.json as NVIDIA Megatron-Bridge's tests copy it (its
# mamba_d_ssm, which that copy leaves out, is mamba_n_heads * mamba_d_head: FalconH1Config
# refuses the file otherwise), with every key transformers reads and some it does not
PUBLISHED_05B = {
    "model_type": "falcon_h1", "attention_bias": False, "attention_in_multiplier": 1.0,
    "attention_out_multiplier": 0.9375, "attn_layer_indices": None,
    "embedding_multiplier": 5.656854249492381, "head_dim": 64, "hidden_act": "silu",
    "hidden_size": 1024, "intermediate_size": 2048, "key_multiplier": 0.39062499999999994,
    "lm_head_multiplier": 0.0390625, "mamba_chunk_size": 128, "mamba_conv_bias": True,
    "mamba_d_conv": 4, "mamba_d_head": 64, "mamba_d_ssm": 1536, "mamba_d_state": 128,
    "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 24, "mamba_norm_before_gate": False,
    "mamba_proj_bias": False, "mamba_rms_norm": False, "mamba_use_mlp": True,
    "max_position_embeddings": 16384, "mlp_bias": False,
    "mlp_multipliers": [0.8838834764831844, 0.5859375], "num_attention_heads": 8,
    "num_hidden_layers": 36, "num_key_value_heads": 2, "projectors_bias": False,
    "rms_norm_eps": 1e-5, "rope_scaling": None, "rope_theta": 100000000000.0,
    "ssm_in_multiplier": 1.25,
    "ssm_multipliers": [0.3535533905932738, 0.25, 0.3535533905932738, 0.5, 0.3535533905932738],
    "ssm_out_multiplier": 0.23570226039551587, "tie_word_embeddings": False, "vocab_size": 32784}


def test_a_published_config_reads_counts_and_writes_back(tmp_path):
    """Its µP multipliers land where the spec keeps them, transformers' class counts what the
    estimate counts on meta, and the config written back holds the same multipliers."""
    import json

    import transformers

    from archscope.spec import load_spec
    from archscope.spec.hf import spec_to_hf_config

    (tmp_path / "config.json").write_text(json.dumps(PUBLISHED_05B))
    spec = load_spec(tmp_path)
    assert spec.mults.mixer_in == 1.25 and spec.mults.ffn_out == 0.5859375
    assert spec.mixer.proj_multipliers == tuple(PUBLISHED_05B["ssm_multipliers"])
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.from_pretrained(tmp_path))
    assert count_params(spec).total == sum(p.numel() for p in theirs.parameters()) == 521_411_104
    back = spec_to_hf_config(spec)
    for key in ("key_multiplier", "lm_head_multiplier", "ssm_in_multiplier", "mlp_multipliers",
                "ssm_multipliers", "attention_out_multiplier", "embedding_multiplier"):
        assert back[key] == PUBLISHED_05B[key], key
