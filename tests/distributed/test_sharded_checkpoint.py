"""`profile --tp --weights`: two gloo ranks fill their shards from an HF checkpoint written by
transformers' own save_pretrained (several safetensors files), one launch for four layouts.
Each rank's logits equal the whole model's loaded by weights.load_checkpoint; where every file
tensor maps onto one of ours by a rename (or is one expert of a per-expert checkpoint), each rank
reads exactly the bytes it holds."""

from __future__ import annotations

import json

import pytest
import yaml
from safetensors import safe_open

from archscope.distributed.launch import launch
from archscope.distributed.parity import check_checkpoint_ranks
from archscope.spec.loader import spec_from_mapping
from parity import hf_model

from sharded_tiny import DENSE, MLA, MOE

VOCAB = {"vocab_size": 96}
# GPT-2: the fused c_attn (read whole, then split and cut) and Conv1D's transposed weights
# (read as slices along the other dimension)
GPT2 = {**DENSE, **VOCAB, "name": "tiny-gpt2", "norm": {"kind": "layernorm", "eps": 1e-5},
        "position": {"kind": "learned"},
        "attention": {"kind": "gqa", "n_heads": 4, "n_kv_heads": 4, "head_dim": 16, "bias": True},
        "ffn": {"kind": "mlp", "d_ff": 128, "activation": "gelu_tanh", "bias": True}}
CASES = {"dense": (DENSE, 1), "moe": (MOE, 2), "mla": (MLA, 2), "gpt2": (GPT2, 1)}


def _write(folder, raw: dict) -> str:
    spec = spec_from_mapping(raw, f"<{raw['name']}>")
    hf, _ = hf_model(spec, seed=1)
    hf.save_pretrained(folder, max_shard_size="40KB")  # several files, an index
    return str(folder)


def _file_bytes(folder: str) -> int:
    """Bytes of every tensor in the checkpoint's files."""
    from pathlib import Path

    total = 0
    for file in Path(folder).glob("*.safetensors"):
        with safe_open(file, framework="pt") as handle:
            total += sum(handle.get_tensor(k).nbytes for k in handle.keys())
    return total


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    return {key: _write(tmp_path_factory.mktemp(key), raw) for key, (raw, _) in CASES.items()}


@pytest.fixture(scope="module")
def records(checkpoints):
    cases = [(checkpoints[key], 2, ep) for key, (_, ep) in CASES.items()]
    ranks = launch(check_checkpoint_ranks, 2, cases)
    by_folder = {folder: key for key, folder in checkpoints.items()}
    return {(by_folder[r["folder"]], r["rank"]): r for rank in ranks for r in rank}


@pytest.mark.parametrize("key", list(CASES))
@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.slow
def test_each_rank_reads_its_shards_and_agrees_with_the_whole_model(records, checkpoints,
                                                                    key, rank):
    r = records[(key, rank)]
    assert r["max_abs_logit_diff"] < 1e-5
    if key == "gpt2":  # c_attn is read whole by both ranks
        assert r["state_bytes"] < r["checkpoint_bytes_read"] < _file_bytes(checkpoints[key])
    else:  # transformers saves Mixtral's and DeepSeek's experts one tensor per expert
        assert r["checkpoint_bytes_read"] == r["state_bytes"] < _file_bytes(checkpoints[key])


@pytest.mark.slow
def test_profile_tp2_with_weights_runs_from_the_checkpoint(run_cli, checkpoints, tmp_path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump(DENSE))
    code, out, err = run_cli("profile", str(spec), "--weights", checkpoints["dense"], "--tp", "2",
                             "--device", "cpu", "--prompt-len", "4", "--new-tokens", "2",
                             "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert record["weights"] == checkpoints["dense"] and record["agrees"]
    for r in record["ranks"]:
        assert r["checkpoint_bytes_read"] == r["weights_bytes"] == r["weights_bytes_planned"]


def test_a_checkpoint_of_another_model_exits_2_before_any_process_starts(
        run_cli, checkpoints, tmp_path, monkeypatch):
    import archscope.distributed.launch as launch_module

    monkeypatch.setattr(launch_module, "elastic_launch", lambda *a, **k: pytest.fail("launched"))
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump({**DENSE, "d_model": 128}))
    code, out, err = run_cli("profile", str(spec), "--weights", checkpoints["dense"], "--tp", "2")
    assert code == 2 and "d_model" in err and "Traceback" not in err
