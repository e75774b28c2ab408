"""The dense long-tail families at transformers' class defaults (full size): a config.json that
says only its model_type is read as the class builds it (the count against transformers'
class, and the refusals, are tests/conformance/test_defaults.py's, for every family).

Each default is read twice: from the bare model_type (archscope fills in the class defaults,
its __post_init__ rules included) and from the config.json transformers saves for it (those
rules already applied); the two must describe the same network.
"""

from __future__ import annotations

import json
import warnings

import pytest
import transformers

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.families.registry import families
from hf_configs import network

READ = ["cwm", "ernie4_5", "helium", "ministral", "seed_oss", "gemma", "exaone4", "arcee",
        "granite_swa", "mistral3", "olmo3"]
# the defaults each family's default_fix changes, and the key archscope names without it
UNFIXED = {"ministral": "head_dim", "olmo3": "sliding_window", "exaone4": "sliding_window"}


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


@pytest.mark.slow
@pytest.mark.parametrize("model_type", READ)
def test_the_bare_and_the_saved_default_are_one_network(model_type, tmp_path):
    """(tests/conformance/test_defaults.py counts the saved one against transformers)"""
    fix = dict(families()[model_type].default_fix)
    assert network(_bare(tmp_path, model_type, **fix)) == \
        network(_saved(tmp_path, model_type, **fix))


@pytest.mark.parametrize("model_type", UNFIXED)
def test_an_unfixed_default_is_refused_naming_the_key(model_type, tmp_path):
    with pytest.raises(SpecError) as caught:
        _bare(tmp_path, model_type)
    assert caught.value.key == UNFIXED[model_type]


def test_mistral3_saved_default_ties_ambiguously(tmp_path):
    with pytest.raises(SpecError, match="ambiguous") as caught:
        _saved(tmp_path, "mistral3")
    assert caught.value.key == "tie_word_embeddings"
