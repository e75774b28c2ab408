"""make-checkpoint writes a folder transformers itself loads (config, shards + index, tokenizer,
generation config), atomically; and the round trip make-checkpoint -> generate works."""

from __future__ import annotations

import errno
import json
import os

import pytest
import torch
import transformers

from archscope.weights import load_checkpoint
from weights_helpers import family_spec, write_spec_yaml


@pytest.fixture
def spec_file(tmp_path):
    return write_spec_yaml(tmp_path / "tiny.yaml", family_spec("llama"))


def _make(run_cli, spec_file, folder, *extra):
    return run_cli("make-checkpoint", str(spec_file), "--weights", str(folder), "--dtype", "fp32",
                   *extra)


def test_transformers_loads_what_make_checkpoint_writes(run_cli, spec_file, tmp_path):
    folder = tmp_path / "ckpt"
    code, out, err = _make(run_cli, spec_file, folder, "--shard-size", "30KB")
    assert code == 0, err
    assert "wrote" in out
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ours, _ = load_checkpoint(folder)
    ids = torch.randint(0, 300, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert (ours(ids) - hf(ids).logits).abs().max().item() < 1e-4
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    assert len(tokenizer) <= 300 and tokenizer.chat_template
    generation = json.loads((folder / "generation_config.json").read_text())
    assert len(generation["eos_token_id"]) == 2


def test_a_non_empty_folder_is_kept_unless_forced(run_cli, spec_file, tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    code, _, err = _make(run_cli, spec_file, folder)
    assert code == 2 and "not empty" in err and "force=True" in err
    assert (folder / "keep.txt").read_text() == "mine"
    code, _, err = _make(run_cli, spec_file, folder, "--force")
    assert code == 0, err
    assert not (folder / "keep.txt").exists() and (folder / "model.safetensors").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_full_disk_leaves_nothing_half_written(run_cli, spec_file, tmp_path, monkeypatch):
    import archscope.weights.writer as writer

    def fail(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writer, "write_shards", fail)
    code, _, err = _make(run_cli, spec_file, tmp_path / "new" / "ckpt")
    assert code == 2 and "Traceback" not in err
    assert f"cannot write {tmp_path / 'new' / 'ckpt'}: No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yaml"]  # nor the folder "new"


def test_ctrl_c_leaves_nothing_half_written(run_cli, spec_file, tmp_path, monkeypatch):
    import archscope.weights.writer as writer

    def interrupted(tensors, out, shard_size, tick=None):
        (out / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(writer, "write_shards", interrupted)
    code, _, err = _make(run_cli, spec_file, tmp_path / "ckpt")
    assert code == 1 and "aborted" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yaml"]


def test_a_failed_swap_puts_the_old_checkpoint_back(run_cli, spec_file, tmp_path, monkeypatch):
    import archscope.weights.writer as writer

    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    real = os.rename

    def rename(src, dst):
        if str(src).endswith(".partial"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(src, dst)

    monkeypatch.setattr(writer.os, "rename", rename)
    code, _, err = _make(run_cli, spec_file, folder, "--force")
    assert code == 2 and "Input/output error" in err
    assert [p.name for p in folder.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt", "tiny.yaml"]


def test_a_bad_shard_size_is_bad_input(run_cli, spec_file, tmp_path):
    code, _, err = _make(run_cli, spec_file, tmp_path / "ckpt", "--shard-size", "lots")
    assert code == 2 and "shard_size 'lots'" in err


def test_a_vocabulary_too_small_for_the_tokenizer_is_bad_input(run_cli, tmp_path):
    spec = write_spec_yaml(tmp_path / "small.yaml", family_spec("llama", vocab_size=100))
    code, _, err = run_cli("make-checkpoint", str(spec), "--weights", str(tmp_path / "ckpt"))
    assert code == 2 and "vocab_size" in err
    assert not (tmp_path / "ckpt").exists()


def test_make_checkpoint_then_generate_round_trip(run_cli, tmp_path):
    """The README's path on a cut-down Llama 3.2 1B (one layer, a small vocabulary), in bf16."""
    folder = tmp_path / "llama"
    code, _, err = run_cli("make-checkpoint", "llama-3.2-1b", "--weights", str(folder), "--set", "n_layers=1",
                           "--set", "vocab_size=512")
    assert code == 0, err
    code, out, err = run_cli("generate", "--weights", str(folder), "--device", "cpu",
                             "--new-tokens", "4", "Hello")
    assert code == 0, err
    assert "llama-3.2-1b on cpu" in err and "4 new" in err
    code, out, err = run_cli("generate", "--weights", str(folder), "--chat", "--temperature",
                             "0.7", "--top-p", "0.9", "--seed", "3", "--new-tokens", "3",
                             "--no-stats", "Hello")
    assert code == 0, err
    code, out, err = run_cli("show", str(folder), "--format", "json")
    assert code == 0 and json.loads(out)["spec"]["n_layers"] == 1


def test_progress_is_reported_per_step(spec_file, tmp_path):
    """make-checkpoint's progress bar counts, as counted beforehand: each layer's weights
    drawn, each shard, the tokenizer; and the weights drawn with progress are those drawn
    without."""
    from safetensors.torch import load_file

    from archscope.spec import load_spec
    from archscope.weights.writer import progress_units, write_checkpoint

    spec, labels = load_spec(str(spec_file)), []
    write_checkpoint(spec, tmp_path / "ckpt", shard_size=10**5, progress=labels.append)
    write_checkpoint(spec, tmp_path / "quiet", shard_size=10**5)
    shards = sorted(p.name for p in (tmp_path / "ckpt").glob("*.safetensors"))
    assert len(shards) > 1
    n = spec.n_layers
    assert labels == [*(f"layer {k}/{n}" for k in range(1, n + 1)), *shards, "tokenizer"]
    assert progress_units(spec, torch.bfloat16, 10**5) == len(labels)  # the bar's total
    for shard in shards:
        ours, quiet = load_file(tmp_path / "ckpt" / shard), load_file(tmp_path / "quiet" / shard)
        assert ours.keys() == quiet.keys()
        assert all(torch.equal(ours[k], quiet[k]) for k in ours)
