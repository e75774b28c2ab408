"""Every family archscope reads, at transformers' own default config (full size, on the meta
device): the estimate counts exactly the parameters transformers' class builds (the text model
of a multimodal wrapper). This is `archscope compare`'s count against transformers' class for
every model_type the registry declares (a default transformers cannot run itself gets the
smallest fix, its family's `default_fix`)."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
import transformers

from archscope.errors import SpecError
from archscope.estimate import count_params
from archscope.spec import load_spec
from archscope.spec.families.registry import families

# defaults archscope refuses, and a word the refusal must name (the component it lacks)
REFUSED = {"jetmoe": "mixture of attention heads",
           "longcat_flash": "zero-computation experts", "deepseek_v4": "hyper-connections",
           "gemma3n": "AltUp", "gemma3n_text": "AltUp", "gemma4": "per-layer input embeddings",
           "gemma4_text": "per-layer input embeddings",
           "mimo_v2_flash": "value heads", "afmoe": "output gate", "xlstm": "mLSTM",
           "olmo_hybrid": "norm placement per layer type"}


def _config(model_type: str):
    family = families()[model_type]
    return transformers.AutoConfig.for_model(family.class_of or model_type,
                                             **family.default_fix)


@pytest.mark.slow
@pytest.mark.parametrize("model_type", list(families()))
def test_the_default_config_is_counted_exactly(model_type, tmp_path):
    config = _config(model_type)
    config.save_pretrained(tmp_path)
    data = json.loads((tmp_path / "config.json").read_text())
    data["model_type"] = model_type
    (tmp_path / "config.json").write_text(json.dumps(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if model_type in REFUSED:  # refused naming the key and the component, not the type
            with pytest.raises(SpecError) as err:
                load_spec(tmp_path)
            assert err.value.key and REFUSED[model_type] in str(err.value)
            return
        spec = load_spec(tmp_path)
    assert count_params(spec).total == _their_count(model_type, config)


def _their_count(model_type: str, config) -> int:
    """transformers' class on meta: the text model of a wrapper, or, where transformers
    registers no causal LM for the text model, the multimodal class less its vision tower."""
    skipped = families()[model_type].skipped_prefixes
    text = config.get_text_config() if hasattr(config, "text_config") else config
    with torch.device("meta"):
        try:
            theirs = transformers.AutoModelForCausalLM.from_config(text)
        except ValueError:  # multimodal only: Qwen3-VL's text config has no causal LM
            theirs = transformers.AutoModelForImageTextToText.from_config(config)
    return sum(p.numel() for name, p in theirs.named_parameters()
               if not (skipped and name.startswith(skipped)))
