"""Row labels stay distinct when configs share a folder or a `_name_or_path`: a config file not
called config.json is named after its folder and stem, and `compare` (and `diff`) label models
that would still share a name by their argument, the path; a name already distinct is kept."""

from __future__ import annotations

import json

import pytest

from archscope import api
from archscope.spec import load_spec
from archscope.spec.hf_export import spec_to_hf_config


def _config(path, **changes):
    """gpt2's config.json, without the keys that name it, with `changes`, at `path`."""
    config = {k: v for k, v in spec_to_hf_config(load_spec("gpt2")).items()
              if k not in ("archscope", "_name_or_path")}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**config, **changes}))
    return str(path)


def _labels(run_cli, *args) -> list[str]:
    code, out, err = run_cli("compare", *args, "--format", "json")
    assert code == 0, err
    return [r["model"] for r in json.loads(out)]


def test_two_configs_in_one_folder_get_two_names(run_cli, tmp_path):
    plain = _config(tmp_path / "tiny" / "config.json")
    variant = _config(tmp_path / "tiny" / "config-6l.json", n_layer=6)
    assert load_spec(plain).name == "tiny"  # a config.json: its folder, as before
    assert load_spec(str(tmp_path / "tiny")).name == "tiny"
    assert load_spec(variant).name == "tiny/config-6l"
    assert _labels(run_cli, plain, variant) == ["tiny", "tiny/config-6l"]
    code, out, _ = run_cli("compare", plain, variant, "--columns", "params")
    assert [line.split()[0] for line in out.splitlines()[1:3]] == ["tiny", "tiny/config-6l"]


def test_a_name_or_path_still_names_the_model(tmp_path):
    path = _config(tmp_path / "x" / "other.json", _name_or_path="org/Some-Model")
    assert load_spec(path).name == "Some-Model"


def test_models_sharing_a_name_are_labelled_by_their_path(run_cli, tmp_path):
    a = _config(tmp_path / "a" / "config.json", _name_or_path="org/same")
    b = _config(tmp_path / "b" / "config.json", _name_or_path="org/same", n_layer=6)
    assert _labels(run_cli, a, b, "gpt2") == [a, b, "gpt2"]
    assert _labels(run_cli, f"{a}:ffn.d_ff=512", f"{b}:ffn.d_ff=512", "--set", "n_layers=2") == [
        f"{a}:n_layers=2,ffn.d_ff=512", f"{b}:n_layers=2,ffn.d_ff=512"]
    code, out, _ = run_cli("compare", a, b)
    assert code == 0 and out.splitlines()[1].startswith(a) and out.splitlines()[2].startswith(b)
    d = api.diff(a, b)
    assert (d.a, d.b) == (a, b)


@pytest.mark.parametrize("models", [["gpt2", "gpt2"], ["gpt2", "gpt2:n_layers=2"]])
def test_names_already_settled_are_kept(run_cli, models):
    assert _labels(run_cli, *models) == [api.model_label("gpt2", api.split_model_overrides(m)[1])
                                         for m in models]
