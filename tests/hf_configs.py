"""Helpers the config.json tests share: write a config, read it back through transformers, and
compare the network a spec describes (its name and source left out)."""

from __future__ import annotations

import json

from transformers import AutoConfig

from archscope.spec import load_spec
from archscope.spec.fields import to_mapping
from archscope.spec.hf import write_hf_config


def network(spec) -> dict:
    """The spec as a mapping, without the keys that name it rather than describe the network,
    nor how its model card counts active parameters (no config.json says)."""
    return {k: v for k, v in to_mapping(spec).items()
            if k not in ("name", "source", "extends", "active_convention")}


def without_format(mapping: dict) -> dict:
    """`network(spec)` less the checkpoint's weight format (a config.json's quantization_config),
    for copies of a published file that left that key out."""
    return {k: v for k, v in mapping.items() if k != "weight_format"}


def write_config(folder, config: dict):
    """`folder/config.json` holding `config` (the folder is made); returns the folder."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def through_transformers(spec, tmp_path):
    """Our config.json, loaded and saved by transformers, read back."""
    write_hf_config(spec, tmp_path / "ours")
    AutoConfig.from_pretrained(tmp_path / "ours").save_pretrained(tmp_path / "hf")
    return load_spec(tmp_path / "hf")
