"""The MoE long tail's checkpoints as transformers saves them load here: save_pretrained writes
the published layouts back (one tensor per expert for Qwen2-MoE, OLMoE, FlexOlmo, dots.llm1,
K-EXAONE, Solar Open and GLM-4.7-Flash; Mixtral's block_sparse_moe names and the correction bias
beside the router for MiniMax-M2; GraniteMoe's input_linear; the wrapper's vision tower for
Qwen3-VL), so archscope's per-expert merging, renames and skips are checked against the
files, and the loaded model gives transformers' logits. (Not covered: Qwen3-VL-MoE's published
files hold the fused experts transposed, [E, d, 2 * d_expert], which transformers' loader
transposes by shape; its save_pretrained writes its own layout, which is what is read here.)"""

from __future__ import annotations

import warnings

import pytest
import torch
import transformers

from family_cases import FAMILY_CASES
from parity import theirs_loads_here

TYPES = ("qwen2_moe", "olmoe", "flex_olmo", "granitemoeshared", "granitemoe_swa", "dots1",
         "exaone_moe", "glm4_moe_lite", "minimax_m2", "solar_open", "qwen3_vl", "qwen3_vl_moe")
CASES = [case for case in FAMILY_CASES if case.model_type in TYPES]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_transformers_save_pretrained_loads_here(case, tmp_path):
    config = transformers.AutoConfig.for_model(case.model_type, **case.config)
    auto = (transformers.AutoModelForImageTextToText if case.multimodal_only
            else transformers.AutoModelForCausalLM)
    hf = auto.from_config(config, attn_implementation="eager").eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in hf.parameters():
            p.copy_(0.2 * torch.randn(p.shape, generator=generator))
        if case.prepare is not None:
            case.prepare(hf)
    ids = torch.randint(0, config.get_text_config().vocab_size, (2, 7), generator=generator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # defaulted keys, skipped vision tensors
        ours, spec, diff = theirs_loads_here(hf, tmp_path / "ckpt", ids)
    assert diff < case.tolerance
    assert spec.vocab_size == config.get_text_config().vocab_size
