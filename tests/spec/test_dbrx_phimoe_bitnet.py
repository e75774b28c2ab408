"""What no other family has, for dbrx, phimoe and bitnet (their standard checks are the
conformance cases'): DBRX's published config.json and the dbrx preset, its nested sections'
defaults and its RoPE theta; the refusals, each naming its key; Phi-3.5-MoE's published
per-expert checkpoint names; BitNet's packed checkpoint refused, and the ternary format priced
as transformers' own packing stores it."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
import transformers
from safetensors.torch import save_file

from archscope.errors import CheckpointError, SpecError
from archscope.estimate import count_params, kv_cache_bytes
from archscope.estimate.formats import weights_in_format
from archscope.nn import build_model
from archscope.spec import load_spec, with_overrides
from archscope.spec.hf_import import read_hf_config
from archscope.weights import load_checkpoint
from archscope.weights.writer import write_checkpoint
from hf_configs import network, write_config
from parity import active_params_from_modules, held_cache_bytes, max_diff

# databricks/dbrx-instruct's config.json, its architecture keys (source: model_specs/dbrx.yaml),
# as published: the theta only under attn_config, the p-norm an int
DBRX_PUBLISHED = {
    "architectures": ["DbrxForCausalLM"], "model_type": "dbrx", "d_model": 6144, "n_heads": 48,
    "n_layers": 40, "max_seq_len": 32768, "vocab_size": 100352, "tie_word_embeddings": False,
    "attn_config": {"attn_pdrop": 0, "clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000},
    "ffn_config": {"ffn_act_fn": {"name": "silu"}, "ffn_hidden_size": 10752,
                   "moe_jitter_eps": 0, "moe_loss_weight": 0.05, "moe_num_experts": 16,
                   "moe_top_k": 4, "moe_normalize_expert_weights": 1}}
DBRX_TINY = {"model_type": "dbrx", "d_model": 64, "n_heads": 4, "n_layers": 2,
             "max_seq_len": 64, "vocab_size": 97,
             "attn_config": {"kv_n_heads": 2, "clip_qkv": 0.5, "rope_theta": 10000.0},
             "ffn_config": {"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2}}
PHIMOE_TINY = {"model_type": "phimoe", "vocab_size": 300, "hidden_size": 64,
               "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 2, "max_position_embeddings": 64,
               "num_local_experts": 4, "num_experts_per_tok": 2, "router_jitter_noise": 0.3,
               "attention_bias": True, "bos_token_id": None, "eos_token_id": None}
BITNET_TINY = {"model_type": "bitnet", "vocab_size": 300, "hidden_size": 64,
               "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 2, "max_position_embeddings": 64, "bos_token_id": None,
               "eos_token_id": None}


def _read(tmp_path, config: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # keys the file lacks: transformers' defaults
        return load_spec(write_config(tmp_path / "c", config))


def _nested(config: dict, section: str, **keys) -> dict:
    return {**config, section: {**config[section], **keys}}


# --- DBRX ------------------------------------------------------------------------------------

def test_the_published_dbrx_config_reads_as_the_preset(tmp_path):
    spec = _read(tmp_path, DBRX_PUBLISHED)
    assert network(spec) == network(load_spec("dbrx"))
    assert spec.position.theta == 500000  # attn_config's, the model's own (module doc)


@pytest.mark.slow
def test_the_dbrx_preset_counts_what_transformers_builds_on_meta():
    spec = load_spec("dbrx")
    config = {**DBRX_PUBLISHED, "ffn_config": {**DBRX_PUBLISHED["ffn_config"],
                                               "moe_normalize_expert_weights": 1.0}}
    config.pop("architectures")
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**config))
    params = count_params(spec)
    assert params.total == sum(p.numel() for p in theirs.parameters()) == 131_596_523_520
    assert params.active == active_params_from_modules(build_model(spec, device="meta")) \
        == 36_469_708_800  # the card's "132B total, 36B active"


def test_a_dbrx_of_two_small_layers_caches_what_the_estimate_says():
    """The preset's attention (8 KV heads of 128) over two layers, the rest made small."""
    spec = with_overrides(load_spec("dbrx"), ["n_layers=2", "d_model=256", "vocab_size=300",
                                              "ffn.n_experts=4", "ffn.top_k=2",
                                              "ffn.d_expert=16"])
    model = build_model(spec).eval()
    ids = torch.randint(0, 300, (2, 9), generator=torch.Generator().manual_seed(0))
    assert held_cache_bytes(model, ids, 20) == kv_cache_bytes(spec, 9, 2, "fp32") \
        == 2 * 2 * 9 * 2 * 8 * 128 * 4


def test_dbrx_sections_take_their_sub_config_defaults(tmp_path):
    config = {**DBRX_TINY, "attn_config": {"rope_theta": 10000.0}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read = read_hf_config(write_config(tmp_path / "c", config))
    assert read.mapping["attention"]["n_kv_heads"] == 1  # DbrxAttentionConfig's kv_n_heads
    assert read.mapping["attention"].get("clip_qkv") is None
    assert {d.key for d in read.defaulted} >= {"attn_config.kv_n_heads", "attn_config.clip_qkv"}


@pytest.mark.parametrize("config, key, words", [
    (_nested(DBRX_TINY, "attn_config", rope_theta=5e5), "attn_config.rope_theta", "ambiguity"),
    ({**DBRX_TINY, "attn_config": {"kv_n_heads": 2}}, "attn_config.rope_theta", "fails"),
    (_nested(DBRX_TINY, "ffn_config", moe_normalize_expert_weights=2.0),
     "ffn_config.moe_normalize_expert_weights", "2.0-norm"),
    (_nested(DBRX_TINY, "ffn_config", ffn_act_fn={"name": "gelu", "approximate": "tanh"}),
     "ffn_config.ffn_act_fn", "name only"),
    (_nested(DBRX_TINY, "ffn_config", moe_top_k=5), "ffn_config.moe_top_k", "exceed"),
    ({**DBRX_TINY, "tie_word_embeddings": True}, "tie_word_embeddings", "refuses"),
    ({**DBRX_TINY, "n_heads": 5}, "n_heads", "multiple"),
    ({**DBRX_TINY, "attn_config": "eight"}, "attn_config", "mapping"),
])
def test_what_dbrx_cannot_be_is_refused_naming_the_key(config, key, words, tmp_path):
    config = {**config, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}
    with pytest.raises(SpecError) as err:
        _read(tmp_path, config)
    assert err.value.key == key and words in err.value.detail


# --- Phi-3.5-MoE -----------------------------------------------------------------------------

@pytest.mark.parametrize("change, key, words", [
    ({"num_experts_per_tok": 3}, "num_experts_per_tok", "picks 2"),
    ({"rope_scaling": {"type": "longrope", "short_factor": [1.0] * 8, "long_factor": [1.0] * 8,
                       "short_mscale": 1.2, "long_mscale": 1.2,
                       "original_max_position_embeddings": 16}},
     "rope_scaling.type", "longrope"),
    ({"router_jitter_noise": -0.1}, "router_jitter_noise", "0 or more"),
])
def test_what_phimoe_cannot_be_is_refused_naming_the_key(change, key, words, tmp_path):
    with pytest.raises(SpecError) as err:
        _read(tmp_path, {**PHIMOE_TINY, **change})
    assert err.value.key == key and words in err.value.detail


@pytest.mark.slow
def test_phimoe_published_per_expert_names_load_with_transformers_logits(tmp_path):
    """Phi-3.5-MoE's files: block_sparse_moe.gate and experts.{j}.w1/w2/w3, as Mixtral's."""
    spec = _read(tmp_path, PHIMOE_TINY)
    write_checkpoint(spec, tmp_path / "ours", dtype=torch.float32)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "ours").eval()
    published, d_expert = {}, spec.ffn.d_expert
    for name, tensor in theirs.state_dict().items():
        moe = name.replace(".mlp.", ".block_sparse_moe.")
        if name.endswith("mlp.router.weight"):
            published[moe.replace("router", "gate")] = tensor
        elif name.endswith("experts.gate_up_proj"):
            for j, expert in enumerate(tensor):
                published[moe.replace("gate_up_proj", f"{j}.w1.weight")] = expert[:d_expert]
                published[moe.replace("gate_up_proj", f"{j}.w3.weight")] = expert[d_expert:]
        elif name.endswith("experts.down_proj"):
            for j, expert in enumerate(tensor):
                published[moe.replace("down_proj", f"{j}.w2.weight")] = expert
        else:
            published[name] = tensor
    folder = tmp_path / "published"
    folder.mkdir()
    (folder / "config.json").write_text((tmp_path / "ours" / "config.json").read_text())
    save_file({k: v.contiguous() for k, v in published.items()}, folder / "model.safetensors")
    ours, _ = load_checkpoint(folder)
    ids = torch.randint(0, spec.vocab_size, (2, 8), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert max_diff(ours(ids), theirs(ids).logits) < 1e-4


# --- BitNet ----------------------------------------------------------------------------------

def test_bitnet_attention_must_be_as_wide_as_its_sub_norm(tmp_path):
    with pytest.raises(SpecError) as err:
        _read(tmp_path, {**BITNET_TINY, "head_dim": 8})
    assert err.value.key == "head_dim" and "attn_sub_norm" in err.value.detail


def test_a_packed_bitnet_checkpoint_is_refused_naming_the_key(tmp_path):
    spec = _read(tmp_path, BITNET_TINY)
    folder = tmp_path / "ckpt"
    write_checkpoint(spec, folder, dtype=torch.float32)
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "bitnet", "linear_class": "bitlinear",
                                     "quantization_mode": "offline"}
    (folder / "config.json").write_text(json.dumps(config))
    assert load_spec(folder / "config.json").plan[0].ffn.sub_norm  # still read: the network
    with pytest.raises(CheckpointError, match="quantization_config.quant_method"):
        load_checkpoint(folder)


@pytest.mark.slow
def test_ternary_bytes_are_transformers_packing_of_the_same_linears(tmp_path):
    """Every nn.Linear transformers' BitNet quantizer converts, packed by its own pack_weights
    (four ternary rows a byte) plus its bf16 weight_scale; everything else in bf16."""
    from transformers.integrations.bitnet import pack_weights

    config = {**BITNET_TINY, "intermediate_size": 90, "num_attention_heads": 2,
              "num_key_value_heads": 1}  # rows not a multiple of 4: packing pads them
    spec = _read(tmp_path, config)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**config))
    linears = {f"{n}.weight" for n, m in model.named_modules()
               if isinstance(m, torch.nn.Linear) and n != "lm_head"}
    expected = 0
    for name, p in model.named_parameters():
        if name in linears:
            ternary = torch.randint(-1, 2, p.shape, dtype=torch.int8)
            expected += pack_weights(ternary).numel() + 2  # uint8 bytes + the bf16 scale
        else:
            expected += 2 * p.numel()
    assert weights_in_format(spec, "ternary").total_bytes == expected
