"""The flat record behind `compare --format json`, and the no-torch rule."""

import json
import subprocess
import sys

from archscope.estimate import count_params, decode_flops, kv_cache_bytes, prefill_flops, summary

INT_KEYS = ("params_total", "params_active", "params_embedding", "kv_cache_bytes",
            "flops_per_token", "prefill_flops", "weights_bytes")


def test_summary_keys(tiny):
    spec = tiny()
    s = summary(spec, seq_len=32, batch=2, dtype="fp16")
    for key in INT_KEYS:
        assert type(s[key]) is int, key
    assert s["model"] == "tiny" and s["exceeds_context"] is False
    assert s["params_total"] == count_params(spec).total
    assert s["kv_cache_bytes"] == kv_cache_bytes(spec, 32, 2, "fp16")
    assert s["flops_per_token"] == decode_flops(spec, 32).total  # one sequence
    assert s["prefill_flops"] == prefill_flops(spec, 32, batch=2).total  # the whole batch
    assert s["weights_bytes"] == 2 * s["params_total"]
    json.dumps(s)


def test_exceeds_context(tiny):
    assert summary(tiny(), seq_len=65)["exceeds_context"] is True


def test_every_preset_summarises():
    from archscope.spec import load_spec, preset_names

    for name in preset_names():
        s = summary(load_spec(name))
        assert s["params_active"] <= s["params_total"], name
        assert s["flops_per_token"] > 0 and s["kv_cache_bytes"] > 0, name


def test_importing_the_estimators_does_not_import_torch():
    code = "import archscope.estimate, sys; assert 'torch' not in sys.modules, 'torch imported'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
