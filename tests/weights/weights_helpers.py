"""Tiny HF checkpoints written by transformers' own save_pretrained, with a tokenizer trained here
by the `tokenizers` library: nothing comes from a hub."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from safetensors.torch import load_file, save_file

from archscope.spec.fields import to_mapping
from archscope.weights.tokenizer_train import end_ids, train_tokenizer
from parity import TINY_MLA_MOE, TINY_MOE, hf_model, tiny_spec

VOCAB = 300  # a byte-level tokenizer needs 262 ids; the model's vocabulary holds them all

FAMILIES = {
    "llama": {},
    "gpt2": dict(norm=dict(kind="layernorm", eps=1e-5), position=dict(kind="learned"),
                 attention=dict(kind="gqa", n_heads=4, n_kv_heads=4, head_dim=16, bias=True),
                 ffn=dict(kind="mlp", d_ff=128, activation="gelu_tanh", bias=True),
                 tie_embeddings=True),
    "mixtral": TINY_MOE,
    "deepseek_v2": TINY_MLA_MOE,
}


def family_spec(family: str, **changes):
    return tiny_spec(**{"vocab_size": VOCAB, **FAMILIES[family], **changes})


def write_hf_checkpoint(folder: Path, spec, shard: str | None = "20KB", seed: int = 0):
    """transformers' model for `spec` (random, std 0.2) saved with save_pretrained, plus a
    trained tokenizer and end-of-sequence ids; returns the transformers model."""
    hf, _ = hf_model(spec, seed)
    hf.save_pretrained(folder, **({"max_shard_size": shard} if shard else {}))
    tokenizer = train_tokenizer(spec.vocab_size)
    tokenizer.save_pretrained(folder)
    generation = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": end_ids(tokenizer)}
    (folder / "generation_config.json").write_text(json.dumps(generation))
    return hf


def rewrite_weights(folder: Path, change) -> None:
    """Apply `change(tensors) -> tensors` to a single-file checkpoint's model.safetensors."""
    path = folder / "model.safetensors"
    tensors = change(load_file(path))
    save_file(tensors, path, metadata={"format": "pt"})


def write_spec_yaml(path: Path, spec) -> Path:
    path.write_text(yaml.safe_dump(to_mapping(spec), sort_keys=False))
    return path
