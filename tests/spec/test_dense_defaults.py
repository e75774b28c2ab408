"""The dense long-tail families at transformers' class defaults (full size): a config.json that
says only its model_type is read as the class builds it, and counted exactly against
transformers' class on the meta device; the refused ones name the key and the component.

Each default is read twice: from the bare model_type (archscope fills in the class defaults,
its __post_init__ rules included) and from the config.json transformers saves for it (those
rules already applied); the two must describe the same network.
"""

from __future__ import annotations

import json
import warnings

import pytest
import torch
import transformers

from archscope.errors import SpecError
from archscope.estimate import count_params
from archscope.spec import load_spec
from hf_configs import network

READ = ["cwm", "ernie4_5", "helium", "ministral", "seed_oss", "gemma", "exaone4", "arcee",
        "granite_swa", "mistral3", "olmo3"]
# model_type -> the config key its refusal names (the component is in the module's doc)
REFUSED = {"hunyuan_v1_dense": "use_qk_norm",  # weighted per-head QK-norm after RoPE
           "minicpm3": "qk_rope_head_dim",  # MLA with half-split RoPE pairs
           "ministral3": "rope_parameters.llama_4_scaling_beta",  # a query scale by position
           "apertus": "hidden_act"}  # xIELU
# The smallest change that makes a default readable, why, and the key archscope names without it
FIXES = {
    # transformers' own default is broken: MinistralConfig does not derive head_dim (its
    # __post_init__ skips Mistral's), and MinistralAttention fails on head_dim None
    "ministral": ({"head_dim": 128}, "head_dim"),
    # the defaults slide a 4,096-token window over a 2,048-token context
    # (max_position_embeddings); archscope refuses a window larger than the context
    "olmo3": ({"max_position_embeddings": 4096}, "sliding_window"),
    "exaone4": ({"max_position_embeddings": 4096}, "sliding_window"),
    # Mistral3Config ties by its own flag (class default true) and saves it beside its text
    # model's (Mistral's default, false): refused as ambiguous (transformers itself unties
    # when a checkpoint ships both tensors); a bare model_type reads the text model's
    "mistral3": ({"tie_word_embeddings": False}, None),
}


def _quiet_load(folder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every key took transformers' default: noted
        return load_spec(folder)


def _bare(tmp_path, model_type: str, **keys):
    folder = tmp_path / "bare"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": model_type, **keys}))
    return _quiet_load(folder)


def _saved(tmp_path, model_type: str, **keys):
    transformers.AutoConfig.for_model(model_type, **keys).save_pretrained(tmp_path / "saved")
    return _quiet_load(tmp_path / "saved")


def _theirs(model_type: str, **keys) -> int:
    config = transformers.AutoConfig.for_model(model_type, **keys)
    text = config.get_text_config()  # a wrapper's text model (Mistral 3's), else the config
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(text)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.slow
@pytest.mark.parametrize("model_type", READ)
def test_the_default_config_is_counted_exactly(model_type, tmp_path):
    fix = FIXES.get(model_type, ({}, None))[0]
    spec = _bare(tmp_path, model_type, **fix)
    assert network(spec) == network(_saved(tmp_path, model_type, **fix))
    assert count_params(spec).total == _theirs(model_type, **fix)


@pytest.mark.parametrize("model_type", REFUSED)
def test_a_refused_default_names_its_key(model_type, tmp_path):
    with pytest.raises(SpecError) as caught:
        _bare(tmp_path, model_type)
    assert caught.value.key == REFUSED[model_type]


@pytest.mark.parametrize("model_type", [t for t, (_, key) in FIXES.items() if key])
def test_an_unfixed_default_is_refused_naming_the_key(model_type, tmp_path):
    with pytest.raises(SpecError) as caught:
        _bare(tmp_path, model_type)
    assert caught.value.key == FIXES[model_type][1]


def test_mistral3_saved_default_ties_ambiguously(tmp_path):
    with pytest.raises(SpecError, match="ambiguous") as caught:
        _saved(tmp_path, "mistral3")
    assert caught.value.key == "tie_word_embeddings"
