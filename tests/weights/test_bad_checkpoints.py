"""Bad checkpoints through the CLI: a clear message naming the tensor, key or file, exit code 2,
no traceback, and nothing loaded. Pickles are refused unless asked for."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from weights_helpers import family_spec, rewrite_weights, write_spec_yaml


def _generate(run_cli, folder, *extra):
    return run_cli("generate", "--weights", str(folder), "--new-tokens", "2", *extra, "Hi")


def _refused(result, *needles):
    code, out, err = result
    assert code == 2, (code, out, err)
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("error: ")  # one message (after setup's logs)
    for needle in needles:
        assert needle in err, err
    return err


def test_a_missing_tensor_is_named(run_cli, single_file_llama):
    name = "model.layers.1.self_attn.k_proj.weight"
    rewrite_weights(single_file_llama, lambda t: {k: v for k, v in t.items() if k != name})
    _refused(_generate(run_cli, single_file_llama), "1 missing", name)


def test_a_wrong_shape_is_named_with_both_shapes(run_cli, single_file_llama):
    name = "model.layers.0.mlp.up_proj.weight"
    rewrite_weights(single_file_llama, lambda t: {**t, name: t[name][:-1].contiguous()})
    _refused(_generate(run_cli, single_file_llama), "mis-shaped", name, "[95, 64]", "[96, 64]")


def test_an_unexpected_tensor_is_named(run_cli, single_file_llama):
    rewrite_weights(single_file_llama, lambda t: {**t, "model.extra.weight": torch.zeros(3)})
    _refused(_generate(run_cli, single_file_llama), "unexpected", "model.extra.weight")


@pytest.mark.parametrize("keep", [0.5, 0.001])
def test_a_truncated_file_is_named(run_cli, llama_dir, keep):
    shard = sorted(llama_dir.glob("model-*.safetensors"))[1]
    data = shard.read_bytes()
    shard.write_bytes(data[:max(int(len(data) * keep), 4)])
    _refused(_generate(run_cli, llama_dir), shard.name, "truncated or corrupt")


def test_an_index_naming_an_absent_shard_is_refused(run_cli, llama_dir):
    shard = sorted(llama_dir.glob("model-*.safetensors"))[0]
    shard.unlink()
    _refused(_generate(run_cli, llama_dir), "model.safetensors.index.json", shard.name)


def test_a_config_that_disagrees_with_the_given_model_names_the_key(run_cli, llama_dir,
                                                                     tmp_path):
    spec = write_spec_yaml(tmp_path / "tiny.yaml", family_spec("llama", attention=dict(
        n_kv_heads=4)))
    err = _refused(_generate(run_cli, llama_dir, "--model", str(spec)), "attention.n_kv_heads",
                   "has 4", "has 2")
    assert "config.json" in err


def test_the_matching_model_is_accepted(run_cli, llama_dir, tmp_path):
    spec = write_spec_yaml(tmp_path / "tiny.yaml", family_spec("llama"))
    code, _, err = _generate(run_cli, llama_dir, "--model", str(spec))
    assert code == 0, err


@pytest.mark.slow
def test_profile_checks_the_preset_against_the_checkpoint(run_cli, llama_dir):
    _refused(run_cli("profile", "llama-3.2-1b", "--weights", str(llama_dir), "--format", "json"),
             "vocab_size", "d_model")


def test_a_pickle_is_refused_by_default_and_read_safely_when_allowed(run_cli, single_file_llama):
    tensors = load_file(single_file_llama / "model.safetensors")
    torch.save(tensors, single_file_llama / "pytorch_model.bin")
    (single_file_llama / "model.safetensors").unlink()
    _refused(_generate(run_cli, single_file_llama), "pytorch_model.bin", "allow_pickle=True")
    code, _, err = _generate(run_cli, single_file_llama, "--allow-pickle")
    assert code == 0, err


def test_a_pickle_with_code_is_refused_even_when_allowed(run_cli, single_file_llama):
    (single_file_llama / "model.safetensors").unlink()
    torch.save({"weights": object()}, single_file_llama / "pytorch_model.bin")
    _refused(_generate(run_cli, single_file_llama, "--allow-pickle"), "pytorch_model.bin")


def test_no_weights_and_no_tokenizer_are_clear_errors(run_cli, tmp_path, single_file_llama):
    (single_file_llama / "model.safetensors").unlink()
    _refused(_generate(run_cli, single_file_llama), "no weights found")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text(json.dumps({"model_type": "llama"}))
    _refused(_generate(run_cli, empty), "no tokenizer")


def test_chat_without_a_template_is_refused(run_cli, single_file_llama):
    config = single_file_llama / "tokenizer_config.json"
    data = json.loads(config.read_text())
    data.pop("chat_template", None)
    config.write_text(json.dumps(data))
    (single_file_llama / "chat_template.jinja").unlink(missing_ok=True)
    _refused(_generate(run_cli, single_file_llama, "--chat"), "chat=True", "chat template")
