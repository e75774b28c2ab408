"""Hostile config.json files: each bad key gets a short message naming the file and the key,
exit code 2 and no traceback; missing keys are reported with the transformers default taken.

The fuzz test's budget: ARCHSCOPE_FUZZ_EXAMPLES (default 200), e.g.
`ARCHSCOPE_FUZZ_EXAMPLES=20000 python -m pytest -q tests/spec/test_hf_hostile.py -k fuzz`.
"""

import copy
import json
import math
import os
import tempfile
import time
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archscope.errors import InputError, SpecError
from archscope.spec import load_spec, preset_names
from archscope.spec.hf import write_hf_config
from archscope.spec.families.registry import families
from archscope.spec.hf_import import DefaultedKeyWarning, read_hf_config

QWEN2 = ("mistral-7b-v0.1", ("attention.bias=true", "attention.out_bias=false"))  # no preset
BASES = {  # name: (preset, what-if) exported to config.json by archscope itself
    "llama": ("llama-3.2-1b", ()), "gpt2": ("gpt2", ()), "mixtral": ("mixtral-8x7b", ()),
    "deepseek_v2": ("deepseek-v2", ()), "qwen2": QWEN2, "granitemoe": ("granite-3.0-3b-a800m", ()),
    "granite": ("granite-3.0-2b", ()), "mistral": ("mistral-7b-v0.1", ()),
    "deepseek_lite": ("deepseek-v2-lite", ()), "gpt3": ("gpt3-175b", ()),
}


def _config(name: str) -> dict:
    preset, changes = BASES[name]
    if preset not in preset_names():
        pytest.skip(f"preset {preset} not shipped")
    with tempfile.TemporaryDirectory() as folder:
        write_hf_config(load_spec(preset, changes), folder)
        return json.loads((Path(folder) / "config.json").read_text())


@pytest.fixture(scope="module")
def configs():
    return {}


def base(configs, name):
    if name not in configs:
        configs[name] = _config(name)
    return copy.deepcopy(configs[name])


DROP = object()


def mutate(config: dict, key: str, value) -> dict:
    """Set (or with DROP, delete) a dotted key."""
    *parents, last = key.split(".")
    node = config
    for part in parents:
        node = node[part]
    if value is DROP:
        del node[last]
    else:
        node[last] = value
    return config


LONG = "x" * 1000
# id: (base, [(dotted key, value or DROP)], the key the message must name, words it must hold)
CASES = {
    "act-list": ("llama", [("hidden_act", ["silu"])], "hidden_act", "got ['silu']"),
    "act-unknown": ("llama", [("hidden_act", "mish")], "hidden_act", "unsupported activation"),
    "width-string": ("llama", [("hidden_size", "2048")], "hidden_size", "expected an integer"),
    "width-float": ("llama", [("hidden_size", 2048.0)], "hidden_size", "got 2048.0"),
    "width-negative": ("llama", [("hidden_size", -2048)], "hidden_size", "must be positive"),
    "width-zero": ("llama", [("hidden_size", 0)], "hidden_size", "must be positive"),
    "width-huge": ("llama", [("hidden_size", 10**400)], "hidden_size",
                   "bits> is beyond the limit"),
    "heads-null": ("llama", [("num_attention_heads", None)], "num_attention_heads", "got None"),
    "heads-zero": ("llama", [("num_attention_heads", 0)], "num_attention_heads",
                   "must be positive"),
    "heads-indivisible": ("llama", [("num_attention_heads", 24)], "num_attention_heads",
                          "not a multiple"),
    "kv-heads-indivisible": ("llama", [("num_key_value_heads", 5)], "num_key_value_heads",
                             "must be a multiple"),
    "layers-1e12-float": ("llama", [("num_hidden_layers", 1e12)], "num_hidden_layers",
                          "expected an integer"),
    "layers-1e12-int": ("llama", [("num_hidden_layers", 10**12)], "num_hidden_layers",
                        "beyond the limit 1,024 (archscope/spec/limits.py)"),
    "layers-bool": ("llama", [("num_hidden_layers", True)], "num_hidden_layers", "got True"),
    "eps-string": ("llama", [("rms_norm_eps", "1e-5")], "rms_norm_eps", "expected a number"),
    "eps-nan": ("llama", [("rms_norm_eps", math.nan)], "rms_norm_eps", "finite"),
    "eps-negative": ("llama", [("rms_norm_eps", -1e-5)], "rms_norm_eps", "must be positive"),
    "tie-string": ("llama", [("tie_word_embeddings", "yes")], "tie_word_embeddings",
                   "expected true/false"),
    "context-long-string": ("llama", [("max_position_embeddings", LONG)],
                            "max_position_embeddings", "..."),
    "width-beyond-limit": ("llama", [("hidden_size", 100_000)], "hidden_size",
                           "100000 is beyond the limit 65,536 (archscope/spec/limits.py)"),
    "act-misspelt": ("llama", [("hidden_act", "sillu")], "hidden_act", "did you mean 'silu'"),
    "head-dim-zero": ("llama", [("head_dim", 0)], "head_dim", "must be positive (or null)"),
    "ffn-mapping": ("llama", [("intermediate_size", {"a": 1})], "intermediate_size",
                    "expected an integer"),
    "rope-list": ("llama", [("rope_parameters", [1, 2])], "rope_parameters", "mapping"),
    "rope-legacy-list": ("llama", [("rope_parameters", DROP), ("rope_theta", 5e5),
                                   ("rope_scaling", ["llama3"])], "rope_scaling", "mapping"),
    "rope-type": ("llama", [("rope_parameters.rope_type", "ntk")], "rope_parameters.rope_type",
                  "unsupported RoPE type"),
    "rope-factor-string": ("llama", [("rope_parameters.factor", "8")], "rope_parameters.factor",
                           "expected a number"),
    "rope-theta-null": ("llama", [("rope_parameters.rope_theta", None)],
                        "rope_parameters.rope_theta", "got None"),
    "rope-freqs-crossed": ("llama", [("rope_parameters.high_freq_factor", 0.5)],
                           "rope_parameters.high_freq_factor", "larger than low_freq_factor"),
    "rope-unknown-key": ("llama", [("rope_parameters.attention_factor", 1)],
                         "rope_parameters.attention_factor", "does not read"),
    "rope-truncate-not-bool": ("llama", [("rope_parameters.truncate", 1)],
                               "rope_parameters.truncate", "expected true/false"),
    "model-type-list": ("llama", [("model_type", ["llama"])], "model_type", "unsupported"),
    "extra-not-mapping": ("llama", [("archscope", 5)], "archscope", "expected a mapping"),
    "extra-layers-huge": ("llama", [("archscope.n_layers", 10**12)], "archscope.n_layers",
                          "beyond the limit"),
    "extra-bad-spec-key": ("llama", [("archscope.attention", {"n_heads": "x"})],
                           "archscope.attention.n_heads", "expected an integer"),
    "name-not-string": ("llama", [("_name_or_path", 5)], "_name_or_path", "expected a string"),
    "gpt2-heads-7": ("gpt2", [("n_head", 7)], "n_head",
                     "n_embd (768) is not a multiple of n_head (7)"),
    "gpt2-inner-negative": ("gpt2", [("n_inner", -1)], "n_inner", "must be positive"),
    "gpt2-activation": ("gpt2", [("activation_function", "tanh")], "activation_function",
                        "unsupported activation"),
    "gpt2-fixed-int": ("gpt2", [("scale_attn_weights", 1)], "scale_attn_weights",
                       "only models true"),
    "gpt2-eps-inf": ("gpt2", [("layer_norm_epsilon", math.inf)], "layer_norm_epsilon", "finite"),
    "mixtral-top-k": ("mixtral", [("num_experts_per_tok", 9)], "num_experts_per_tok",
                      "cannot exceed"),
    "mixtral-experts-null": ("mixtral", [("num_local_experts", None)], "num_local_experts",
                             "got None"),
    "mixtral-window-negative": ("mixtral", [("sliding_window", -1)], "sliding_window",
                                "must be positive"),
    "mixtral-window-beyond-context": ("mixtral", [("sliding_window", 10**6)], "sliding_window",
                                      "larger than the context"),
    "deepseek-topk-method": ("deepseek_v2", [("topk_method", "noaux_tc")], "topk_method",
                             "expected one of greedy, group_limited_greedy"),
    "deepseek-odd-rope-dim": ("deepseek_v2", [("qk_rope_head_dim", 63)], "qk_rope_head_dim",
                              "even"),
    "deepseek-groups": ("deepseek_v2", [("n_group", 7)], "n_group", "divide into"),
    "deepseek-dense-negative": ("deepseek_v2", [("first_k_dense_replace", -1)],
                                "first_k_dense_replace", "must be 0 or more"),
    "deepseek-heads-indivisible": ("deepseek_v2", [("num_attention_heads", 100)],
                                   "num_attention_heads", "DeepseekV2Config refuses it"),
    "deepseek-shared-string": ("deepseek_v2", [("n_shared_experts", "2")], "n_shared_experts",
                               "expected an integer"),
    "deepseek-q-rank-zero": ("deepseek_v2", [("q_lora_rank", 0)], "q_lora_rank", "or null"),
    "deepseek-layer-freq-zero": ("deepseek_v2", [("moe_layer_freq", 0)], "moe_layer_freq",
                                 "must be positive"),
    "qwen2-layer-types-int": ("qwen2", [("layer_types", 5)], "layer_types", "expected a list"),
    "qwen2-layer-types-short": ("qwen2", [("layer_types", ["full_attention"])], "layer_types",
                                "has 1 entry"),
    "qwen2-layer-type-unknown": ("qwen2", [("layer_types.1", "chunked_attention")],
                                 "layer_types[1]", "full_attention or sliding_attention"),
    "qwen2-flag-string": ("qwen2", [("use_sliding_window", "true")], "use_sliding_window",
                          "expected true/false"),
    "qwen2-window-layers": ("qwen2", [("layer_types", DROP), ("max_window_layers", -1)],
                            "max_window_layers", "must be 0 or more"),
    "granitemoe-multiplier-bool": ("granitemoe", [("embedding_multiplier", True)],
                                   "embedding_multiplier", "expected a number"),
    "granitemoe-logits-zero": ("granitemoe", [("logits_scaling", 0)], "logits_scaling",
                               "must be positive"),
}


def test_cases_cover_the_families():
    assert len(CASES) >= 25
    assert {case[0] for case in CASES.values()} >= {"llama", "gpt2", "mixtral", "deepseek_v2",
                                                    "qwen2", "granitemoe"}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_bad_config_exits_2_naming_the_key(case, configs, tmp_path, run_cli):
    name, changes, key, words = CASES[case]
    config = base(configs, name)
    for dotted, value in changes:
        if dotted.startswith("layer_types.") and isinstance(config.get("layer_types"), list):
            config["layer_types"][int(dotted.split(".")[1])] = value
        else:
            mutate(config, dotted, value)
    file = tmp_path / "config.json"
    file.write_text(json.dumps(config))
    code, out, err = run_cli("show", str(file), "--format", "json")
    assert code == 2, (out, err)
    assert out == ""
    message = err.strip()
    assert message.startswith(f"error: {file}: {key}: "), message
    assert words in message, message
    assert len(message) < 400, message
    assert "Traceback" not in err


@pytest.mark.parametrize("text, words", [
    ('{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}", "not valid JSON"),
    ("[" * 100_000, "not valid JSON"),
    ('{"model_type": "llama"', "not valid JSON"),
    ("\ud800", "not valid JSON"),
])
def test_unreadable_json_exits_2(text, words, tmp_path, run_cli):
    file = tmp_path / "config.json"
    file.write_text(text, errors="surrogatepass")
    code, _, err = run_cli("show", str(file))
    assert code == 2 and str(file) in err and "Traceback" not in err and len(err) < 400, err


def test_gpt2_heads_must_divide_the_width_as_transformers_demands(configs, tmp_path):
    write_config(tmp_path, mutate(base(configs, "gpt2"), "n_head", 7))
    with pytest.raises(SpecError) as err:
        load_spec(tmp_path)
    assert err.value.key == "n_head" and "GPT2Attention refuses it" in str(err.value)
    write_config(tmp_path, mutate(base(configs, "gpt2"), "n_head", 8))  # 768 / 8 = 96: fine
    assert load_spec(tmp_path).attention.head_dim == 96


def test_mistral_derives_a_floored_head_dim_as_transformers_does(configs, tmp_path):
    """MistralAttention floors hidden_size / heads (q_proj 4096 -> 30 * 136); it does not
    refuse it, so neither does the import."""
    config = mutate(mutate(base(configs, "mistral"), "head_dim", DROP), "num_attention_heads", 30)
    config["num_key_value_heads"] = 10
    spec = load_spec(write_config(tmp_path, config))
    assert spec.attention.head_dim == 4096 // 30


def write_config(folder, config):
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_missing_key_reports_the_default_taken(configs, tmp_path):
    write_config(tmp_path, mutate(base(configs, "llama"), "hidden_size", DROP))
    result = read_hf_config(tmp_path)
    assert [(d.key, d.value) for d in result.defaulted] == [("hidden_size", 4096)]
    note = str(result.defaulted[0])
    assert note == (f"{tmp_path / 'config.json'} has no hidden_size; took transformers' "
                    "default 4096")
    with pytest.warns(DefaultedKeyWarning) as caught:
        spec = load_spec(tmp_path)
    assert spec.d_model == 4096 and [str(w.message) for w in caught] == [note]


def test_a_complete_config_reports_nothing(configs, tmp_path):
    for name in ("llama", "deepseek_v2", "gpt2"):
        write_config(tmp_path, base(configs, name))
        assert read_hf_config(tmp_path).defaulted == ()


def test_a_sparse_config_reports_each_default(tmp_path):
    write_config(tmp_path, {"model_type": "mistral"})
    keys = {d.key: d.value for d in read_hf_config(tmp_path).defaulted}
    assert keys["hidden_size"] == 4096 and keys["sliding_window"] == 4096
    assert keys["num_key_value_heads"] == 8 and keys["rope_theta"] == 10000.0


# ---------------------------------------------------------------------------------------------
# Fuzz: mutate valid config.json mappings; only InputError may escape, quickly.

FUZZ_EXAMPLES = int(os.environ.get("ARCHSCOPE_FUZZ_EXAMPLES", "200"))
# a bound against hangs, not a timing: a loaded 2-core run took 5.7 s for one fit case
FUZZ_SECONDS = float(os.environ.get("ARCHSCOPE_FUZZ_SECONDS", "10"))
WORDS = ["silu", "gelu_new", "yarn", "llama3", "linear", "default", "greedy",
         "group_limited_greedy", "full_attention", "sliding_attention", "llama", "gpt2", "",
         "rope_type", "factor", "1e12"]
json_scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(-10, 10**4), st.integers(-(10**30), 10**30),
    st.sampled_from([0, -1, 1, 2, 3, 7, 10**12, 2**31, 2**63, -(2**63), 10**300]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e12, 0.5, -0.0, 4096.0]),
    st.text(max_size=12), st.sampled_from(WORDS), st.sampled_from(sorted(families())))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
        st.sampled_from(["rope_type", "type", "factor", "rope_theta", "n_layers", "attention",
                         "n_heads", "kind", "select", "x"]) | st.text(max_size=6), inner,
        max_size=4),
    max_leaves=8)


@st.composite
def mutated_configs(draw):
    config = copy.deepcopy(draw(st.sampled_from(sorted(FUZZ_BASES.items())))[1])
    for _ in range(draw(st.integers(1, 3))):
        # a key of the config, or of one of its mappings (rope_parameters, archscope, ...)
        nested = [v for v in config.values() if isinstance(v, dict)]
        node = draw(st.sampled_from([config] * 4 + nested))  # mostly the top level
        op = draw(st.sampled_from(["set", "set", "set", "delete", "junk"]))
        keys = sorted(node)
        if op == "junk" or not keys:
            node[draw(st.text(min_size=1, max_size=10))] = draw(json_values)
        elif op == "delete":
            del node[draw(st.sampled_from(keys))]
        else:
            node[draw(st.sampled_from(keys))] = draw(json_values)
    return config


FUZZ_BASES: dict = {}


@pytest.fixture(scope="module")
def fuzz_bases(configs):
    for name in BASES:
        try:
            FUZZ_BASES[name] = base(configs, name)
        except pytest.skip.Exception:
            pass
    from transformers import CONFIG_MAPPING  # warm: the first default looked up imports torch

    for model_type, family in families().items():
        CONFIG_MAPPING[family.class_of or model_type]  # noqa: B018 - imports it
    return FUZZ_BASES


def test_fuzz_only_input_errors_escape_and_quickly(fuzz_bases, tmp_path):
    file = tmp_path / "config.json"  # one file, rewritten per example

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutated_configs())
    def check(config):
        file.write_text(json.dumps(config))
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DefaultedKeyWarning)
                load_spec(file)
        except InputError as err:
            message = str(err)
            assert len(message) < 400, message
            assert str(file) in message, message
        elapsed = time.perf_counter() - start
        assert elapsed < FUZZ_SECONDS, f"took {elapsed:.2f} s"

    check()


def test_the_cli_prints_each_defaulted_key_as_a_note(tmp_path, run_cli):
    (tmp_path / "config.json").write_text('{"model_type": "mistral", "num_hidden_layers": 2}')
    code, _, err = run_cli("show", str(tmp_path), "--format", "json")
    assert code == 0
    notes = [line for line in err.splitlines() if line.startswith("note: ")]
    assert any("has no hidden_size; took transformers' default 4096" in n for n in notes)
    assert "Warning" not in err  # not Python's raw warning format
