"""A multimodal wrapper's vision tensors are skipped by prefix, per model type, and nothing else
is: Llama 4's vision_model/multi_modal_projector (Gemma 3's full round trip through
Gemma3ForConditionalGeneration.save_pretrained is in tests/nn/test_gemma3.py)."""

from pathlib import Path

import pytest

from archscope.weights.files import CheckpointFiles
from archscope.weights.validate import SkippedVisionWarning, without_vision

NAMES = ["language_model.model.layers.0.self_attn.q_proj.weight", "language_model.lm_head.weight",
         "vision_model.patch_embedding.linear.weight", "multi_modal_projector.linear_1.weight",
         "vision_model_extra.weight"]


def _ckpt() -> CheckpointFiles:
    return CheckpointFiles(Path("/ckpt"), "safetensors", (), {n: None for n in NAMES})


def test_llama4_vision_tensors_are_skipped_and_the_rest_kept():
    with pytest.warns(SkippedVisionWarning, match="skipped 2 tensors of the llama4"):
        kept = without_vision(_ckpt(), "llama4")
    # "vision_model_extra." is not under "vision_model.": it stays, to be refused as unexpected
    assert sorted(kept.tensors) == sorted(n for n in NAMES if not n.startswith(
        ("vision_model.", "multi_modal_projector.")))


def test_text_model_types_skip_nothing():
    ckpt = _ckpt()
    assert without_vision(ckpt, "llama4_text") is ckpt
