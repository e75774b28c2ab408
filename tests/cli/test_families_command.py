"""`archscope families`: every causal LM the installed transformers builds, with what archscope
makes of it; and `show` of a config.json archscope does not read, counted by transformers'
own class on the meta device with the caveat beside it."""

from __future__ import annotations

import json

import pytest
import torch
import transformers

from archscope.spec.families.registry import families

# a causal LM transformers builds that no family module reads (an old decoder-only design: no
# issue asks for it)
UNREAD = "xglm"


@pytest.mark.slow
def test_families_lists_every_causal_lm_and_each_family_archscope_reads(run_cli):
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    code, out, err = run_cli("families", "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert record["transformers"] == transformers.__version__
    rows = {r["model_type"]: r for r in record["rows"]}
    assert set(rows) == set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) | set(families())
    for model_type in families():  # each family module: read, or refused naming a key
        assert rows[model_type]["status"] in ("read exactly", "read without weights", "refused")
    for row in rows.values():
        if row["status"] == "refused":  # "<config key>: <what archscope lacks>"
            assert ": " in row["detail"] and not row["detail"].startswith("unsupported")
    assert rows[UNREAD]["status"] == "not read"
    assert rows["llama"]["status"] == "read exactly"
    code, text, err = run_cli("families")
    assert code == 0 and f"{len(rows)} in all" in text


def test_show_counts_an_unread_config_with_transformers_class(run_cli, tmp_path):
    config = transformers.AutoConfig.for_model(UNREAD, num_layers=2)
    config.save_pretrained(tmp_path)
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(config)
    code, out, err = run_cli("show", str(tmp_path), "--format", "json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["params_total"] == sum(p.numel() for p in theirs.parameters())
    assert shown["params_source"] == "transformers meta" and "no cache, FLOPs" in shown["caveat"]
    assert f"unsupported model type '{UNREAD}'" in shown["refused"]
    code, text, err = run_cli("show", str(tmp_path))
    assert code == 0 and "no cache, FLOPs, state or memory are derived" in text


def test_a_type_transformers_does_not_know_either_is_refused_with_exit_2(run_cli, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "no_such_model"}))
    code, out, err = run_cli("show", str(tmp_path))
    assert code == 2 and out == ""
    assert "unsupported model type 'no_such_model'" in err and "Traceback" not in err
