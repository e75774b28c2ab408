"""Loading HF checkpoints written by transformers: sharded safetensors, tied heads, GPT-2's Conv1D
layout, per-expert MoE files, dtype casts, device maps; and greedy generation against
transformers' own generate, token for token."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

from archscope.errors import CheckpointError, InputError
from archscope.measure.textgen import TokenStream, open_generation
from archscope.weights import load_checkpoint
from archscope.weights.placement import Placement, new_cache
from weights_helpers import family_spec, write_hf_checkpoint


def _prompt(vocab: int, length: int = 7, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, vocab, (2, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("family", ["llama", "gpt2", "mixtral"])
def test_a_sharded_checkpoint_loads_with_the_same_logits(tmp_path, family):
    spec = family_spec(family)
    hf = write_hf_checkpoint(tmp_path, spec)
    assert (tmp_path / "model.safetensors.index.json").is_file()
    assert len(list(tmp_path.glob("model-*.safetensors"))) > 1
    model, loaded = load_checkpoint(tmp_path)
    assert loaded.n_layers == spec.n_layers and loaded.tie_embeddings == spec.tie_embeddings
    ids = _prompt(spec.vocab_size)
    with torch.no_grad():
        assert (model(ids) - hf(ids).logits).abs().max().item() < 1e-4
    assert not any(p.is_meta or p.requires_grad for p in model.parameters())


def test_tied_head_shares_the_embedding(llama_dir):
    spec = family_spec("llama", tie_embeddings=True)
    write_hf_checkpoint(llama_dir.parent / "tied", spec)
    model, _ = load_checkpoint(llama_dir.parent / "tied")
    assert model.lm_head.weight is model.embed_tokens.weight


def test_a_tied_checkpoint_that_also_stores_the_head_loads(tmp_path):
    spec = family_spec("llama", tie_embeddings=True)
    write_hf_checkpoint(tmp_path, spec, shard=None)
    path = tmp_path / "model.safetensors"
    tensors = load_file(path)
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].clone()
    save_file(tensors, path, metadata={"format": "pt"})
    model, _ = load_checkpoint(tmp_path)
    assert model.lm_head.weight is model.embed_tokens.weight


# per-expert names as published: (gate, up, down) projections and the router's old name
PER_EXPERT = {"mixtral": ("block_sparse_moe.experts.{j}.w1", "block_sparse_moe.experts.{j}.w3",
                          "block_sparse_moe.experts.{j}.w2", "block_sparse_moe.gate"),
              "deepseek_v2": ("mlp.experts.{j}.gate_proj", "mlp.experts.{j}.up_proj",
                              "mlp.experts.{j}.down_proj", "mlp.gate")}


def _split_experts(tensors: dict, names: tuple) -> dict:
    """The fused transformers-5 expert tensors written back as one tensor per expert."""
    gate, up, down, router = names
    out = {}
    for name, t in tensors.items():
        prefix, _, rest = name.partition(".mlp.")
        if rest == "experts.gate_up_proj":
            for j, expert in enumerate(t):
                g, u = expert.chunk(2)
                out[f"{prefix}.{gate.format(j=j)}.weight"] = g
                out[f"{prefix}.{up.format(j=j)}.weight"] = u
        elif rest == "experts.down_proj":
            out.update({f"{prefix}.{down.format(j=j)}.weight": e for j, e in enumerate(t)})
        elif rest == "gate.weight":
            out[f"{prefix}.{router}.weight"] = t
        else:
            out[name] = t
    return {k: v.contiguous() for k, v in out.items()}


@pytest.mark.parametrize("family", ["mixtral", "deepseek_v2"])
def test_per_expert_moe_files_are_fused_while_loading(tmp_path, family):
    """Mixtral and DeepSeek-V2 as published store one 2-D tensor per expert."""
    spec = family_spec(family)
    hf = write_hf_checkpoint(tmp_path, spec, shard=None)
    path = tmp_path / "model.safetensors"
    legacy = _split_experts(load_file(path), PER_EXPERT[family])
    assert any(".experts.3." in k for k in legacy)
    save_file(legacy, path, metadata={"format": "pt"})
    model, _ = load_checkpoint(tmp_path)
    ids = _prompt(spec.vocab_size)
    with torch.no_grad():
        assert (model(ids) - hf(ids).logits).abs().max().item() < 1e-4


def test_a_missing_expert_is_named(tmp_path):
    write_hf_checkpoint(tmp_path, family_spec("mixtral"), shard=None)
    path = tmp_path / "model.safetensors"
    legacy = _split_experts(load_file(path), PER_EXPERT["mixtral"])
    del legacy["model.layers.1.block_sparse_moe.experts.2.w3.weight"]
    save_file(legacy, path, metadata={"format": "pt"})
    with pytest.raises(CheckpointError,
                       match=r"layers\.1\.mlp\.experts\.gate_up_proj.*expert 2 \(up\)"):
        load_checkpoint(tmp_path)


def test_weights_are_cast_to_the_requested_dtype(llama_dir):
    model, _ = load_checkpoint(llama_dir, dtype=torch.bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_greedy_generation_equals_transformers_generate(tmp_path, family):
    """The whole path: tokenizer, prompt, loader, decode loop, stop ids vs from_pretrained."""
    write_hf_checkpoint(tmp_path, family_spec(family))
    stream, text, info = open_generation(tmp_path, "Hello, how are you today?",
                                         max_new_tokens=12)
    ours = list(stream)
    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).eval()
    prompt = stream.prompt
    out = hf.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                      max_new_tokens=12, eos_token_id=info["eos_ids"],
                      pad_token_id=info["eos_ids"][0])
    assert ours == out[0, prompt.shape[1]:].tolist()
    assert stream.stop_reason in ("eos", "max_new_tokens")


def test_generation_stops_at_any_of_several_eos_ids(llama_dir):
    model, spec = load_checkpoint(llama_dir)
    prompt = _prompt(spec.vocab_size)[:1]
    free = list(TokenStream(model, prompt, 6))
    stream = TokenStream(model, prompt, 6, eos_ids=[10_000, free[2], 10_001])
    assert list(stream) == free[:3] and stream.stop_reason == "eos"


def test_generation_stops_at_the_context_length(llama_dir):
    model, spec = load_checkpoint(llama_dir)
    prompt = _prompt(spec.vocab_size, length=spec.max_seq_len - 3)[:1]
    stream = TokenStream(model, prompt, 50)
    assert len(list(stream)) == 3 and stream.stop_reason == "context"


def test_a_device_map_keeping_everything_on_cpu_runs_as_the_plain_model(llama_dir,
                                                                       monkeypatch):
    """The device-map path (placement, per-layer cache) on the CPU: `auto` is refused without
    a GPU (test_cli_messages.py), so pretend one is there; accelerate then maps to the CPU."""
    import archscope.weights.placement as placement

    monkeypatch.setattr(placement, "cuda_available", lambda: True)
    model, spec = load_checkpoint(llama_dir, device_map="auto")
    assert model.placement.main == torch.device("cpu")
    assert set(model.hf_device_map.values()) == {"cpu"}
    reference, _ = load_checkpoint(llama_dir)
    prompt = _prompt(spec.vocab_size)[:1]
    cache = new_cache(model, model.placement, 1, prompt.shape[1] + 5)
    assert list(TokenStream(model, prompt, 5, cache=cache)) == list(TokenStream(reference,
                                                                                prompt, 5))


def test_a_device_map_that_would_need_disk_is_refused_before_loading(llama_dir, monkeypatch):
    import archscope.weights.placement as placement

    monkeypatch.setattr(placement, "cuda_available", lambda: True)  # refused earlier otherwise
    with pytest.raises(InputError, match="does not offload to disk"):
        load_checkpoint(llama_dir, device_map="sequential", max_memory={"cpu": 1000})


def test_placement_runs_offloaded_modules_on_the_main_device():
    placement = Placement(torch.device("cuda:0"), {"embed_tokens": 0, "layers.0": 0,
                                                   "layers.1": "cpu", "layers.10": 1,
                                                   "norm": 1, "lm_head": 0})
    assert placement.storage("layers.1.mlp.up_proj.weight") == torch.device("cpu")
    assert placement.execution("layers.1") == torch.device("cuda:0")
    assert placement.execution("layers.10.self_attn") == torch.device("cuda:1")
    assert placement.storage("layers.0.self_attn.q_proj.weight") == torch.device("cuda:0")


def test_a_model_larger_than_memory_is_refused_before_anything_is_read(llama_dir, monkeypatch):
    import archscope.weights.placement as resources

    monkeypatch.setattr(resources, "available_bytes", lambda device: 1000)
    with pytest.raises(InputError, match="nothing was loaded"):
        load_checkpoint(llama_dir)


def test_the_index_total_size_is_not_trusted_but_the_shards_are(llama_dir):
    index = llama_dir / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    data["metadata"]["total_size"] = 1
    index.write_text(json.dumps(data))
    load_checkpoint(llama_dir)
