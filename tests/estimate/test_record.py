"""The one record of a model (estimate/record.py), and the no-torch rule."""

import json
import subprocess
import sys

import pytest

from archscope.errors import InputError
from archscope.estimate import (count_params, decode_flops, kv_cache_bytes, model_record,
                                prefill_flops)
from archscope.spec import load_spec, preset_names

INT_KEYS = ("params_total", "params_active", "params_embedding", "kv_cache_bytes",
            "state_bytes", "cache_bytes", "flops_per_token", "prefill_flops", "weights_bytes",
            "inference_memory_bytes")


def test_row_keys_and_values(tiny):
    spec = tiny()
    row = model_record(spec, 32, batch=2, weight_format="fp16").row()
    for key in INT_KEYS:
        assert type(row[key]) is int, key
    assert row["model"] == "tiny" and row["exceeds_context"] is False
    assert row["params_total"] == count_params(spec).total
    assert row["kv_cache_bytes"] == kv_cache_bytes(spec, 32, 2, "fp16")
    assert row["flops_per_token"] == decode_flops(spec, 32).total  # one sequence
    assert row["prefill_flops"] == prefill_flops(spec, 32, batch=2).total  # the whole batch
    assert row["weights_bytes"] == 2 * row["params_total"]
    assert row["cache_bytes"] == row["kv_cache_bytes"] + row["state_bytes"]
    json.dumps(row)


def test_exceeds_context(tiny):
    assert model_record(tiny(), 65).row()["exceeds_context"] is True


def test_contexts_are_looked_up_by_length(tiny):
    record = model_record(tiny(), (16, 32, 64))
    assert [c.seq_len for c in record.contexts] == [16, 32, 64]
    assert record.row(32)["seq_len"] == 32 and record.row()["seq_len"] == 16
    with pytest.raises(InputError, match="no context 48"):
        record.at(48)


def test_every_preset_has_a_record():
    for name in preset_names():
        spec = load_spec(name)
        row = model_record(spec).row()
        assert row["params_active"] <= row["params_total"], name
        # a model without attention layers (a pure Mamba stack): a state, no KV cache
        held = "kv_cache_bytes" if any(layer.attention for layer in spec.plan) else "state_bytes"
        assert row["flops_per_token"] > 0 and row[held] > 0, name


@pytest.mark.parametrize("weights", ["int8", "int4", "fp8"])
def test_weight_only_formats_keep_a_bf16_cache(weights):
    """int4 weights do not shrink the cache: the cache and activations stay in bf16, and the
    KV cache `show` prints is the one inference memory adds (they disagreed before)."""
    spec = load_spec("llama-3.1-8b")
    quantized = model_record(spec, 8192, weight_format=weights)
    bf16 = model_record(spec, 8192)
    c, ref = quantized.at(8192), bf16.at(8192)
    assert quantized.conventions.cache_dtype == "bf16"
    assert c.cache.bytes == ref.cache.bytes == c.memory.kv_cache
    assert c.memory.activations == ref.memory.activations
    assert c.memory.total == quantized.weights_bytes + c.cache.bytes + c.memory.activations
    # An explicit cache dtype is honoured, the activations stay in the compute dtype.
    fp8_cache = model_record(spec, 8192, cache_dtype="fp8").at(8192)
    assert fp8_cache.cache.bytes * 2 == ref.cache.bytes
    assert fp8_cache.memory.activations == ref.memory.activations


def test_deepseek_v2_absorbed_decode_by_hand():
    """`compare deepseek-v2 --format json` at 4,096 tokens: the MLA convention is named and its
    decode FLOPs are the hand count below (multiply-adds per token, x2 for FLOPs).

    DeepSeek-V2: d 5120, 60 layers, 128 heads, q_lora 1536, kv_lora 512, qk 128 nope + 64 rope,
    v 128, vocab 102400; layer 0 dense SwiGLU 12288, layers 1-59 MoE: router 160 experts, top-6
    + 2 shared experts of 1536.
    """
    d, h, layers, n = 5120, 128, 60, 4096
    projections = (d * 1536  # q_a_proj
                   + 1536 * h * (128 + 64)  # q_b_proj
                   + d * (512 + 64)  # kv_a_proj_with_mqa
                   + 512 * h * (128 + 128)  # kv_b_proj, absorbed: its key half into the query,
                   #                          its value half into the output, once per token
                   + h * 128 * d)  # o_proj
    # Absorbed attention runs on the cached latent: per head and key, q.k over 512 + 64 and
    # the weighted sum over the 512-wide latent.
    scores = h * n * ((512 + 64) + 512)
    dense_ffn = 3 * d * 12288
    moe_ffn = d * 160 + (6 + 2) * 3 * d * 1536
    lm_head = d * 102400
    macs = layers * (projections + scores) + dense_ffn + (layers - 1) * moe_ffn + lm_head
    assert macs == 55_076_290_560

    from click.testing import CliRunner

    from archscope.cli import cli

    result = CliRunner().invoke(cli, ["compare", "deepseek-v2", "--format", "json"])
    row = json.loads(result.output)[0]
    assert row["mla_flops"] == "absorbed" and row["seq_len"] == n
    assert row["flops_per_token"] == 2 * macs
    # The other conventions stay selectable and differ as their docstrings say.
    assert model_record(load_spec("deepseek-v2"), n, mla_flops="recompute").row()[
        "flops_per_token"] - 2 * macs == 2 * layers * (512 * h * 256 * (n - 1)  # re-expand
                                                       + h * n * ((192 + 128) - (576 + 512)))


def test_bad_conventions_name_the_argument(tiny):
    with pytest.raises(InputError, match="mla_flops"):
        model_record(tiny(), 32, mla_flops="fast")
    with pytest.raises(InputError, match="attention_flops"):
        model_record(tiny(), 32, attention_flops="half")
    with pytest.raises(InputError, match="context lengths"):
        model_record(tiny(), (32, 0))


def test_importing_the_estimators_does_not_import_torch():
    code = "import archscope.estimate, sys; assert 'torch' not in sys.modules, 'torch imported'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_cache_groups_gather_equal_attention_specs_built_apart(tiny):
    # layers 1 and 3 restate the model's attention through overrides (objects apart from the
    # model's, equal in value): they cache alike, so one group with layer 0; layer 2 windowed
    spec = tiny(n_layers=4, layers=[{"select": "1:2", "attention": {"n_kv_heads": 2}},
                                    {"select": "2:4", "attention": {"window": 4}},
                                    {"select": "3:4", "attention": {"window": None}}])
    groups = model_record(spec, 10).cache_groups
    assert [(g.layers, g.window) for g in groups] == [((0, 1, 3), None), ((2,), 4)]
    assert model_record(spec, 10).attention == "GQA"
