"""Fixtures: tiny HF checkpoints (see weights_helpers)."""

from __future__ import annotations

import pytest

from weights_helpers import family_spec, write_hf_checkpoint


@pytest.fixture
def llama_dir(tmp_path):
    """A sharded tiny llama checkpoint (several safetensors files and an index)."""
    folder = tmp_path / "llama"
    write_hf_checkpoint(folder, family_spec("llama"))
    return folder


@pytest.fixture
def single_file_llama(tmp_path):
    folder = tmp_path / "single"
    write_hf_checkpoint(folder, family_spec("llama"), shard=None)
    return folder
