"""Hostile checkpoint folders and generate inputs (issue 35): an index whose values are null,
integers or paths out of the folder, a deeply nested index, an int16 tensor, a junk
generation_config.json; a temperature of 1e-320, a NUL byte or undecodable bytes in the
prompt, a broken or endless chat template, a prompt longer than the context, and generation
that reaches the context. Each refusal names the file, key or option, exit 2, no traceback,
before any weight is read where it can be."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from archscope.weights import tokenizer as tokenizer_module
from hostile import refused
from weights_helpers import family_spec

INDEX = "model.safetensors.index.json"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A tiny fp32 checkpoint of archscope's own writer (tokenizer and chat template too),
    its context 24 tokens; each test copies it."""
    from archscope.weights.writer import write_checkpoint

    folder = tmp_path_factory.mktemp("made") / "tiny"
    write_checkpoint(family_spec("llama", max_seq_len=24, vocab_size=512), folder,
                     dtype=torch.float32)
    return folder


@pytest.fixture
def ckpt(made, tmp_path):
    folder = tmp_path / "tiny"
    shutil.copytree(made, folder)
    return folder


def generate(run_cli, folder, *extra, prompt="Hi", words=()):
    return refused(run_cli, "generate", "--weights", folder, "--new-tokens", "2", *extra,
                   prompt, words=words, seconds=20)


def index(folder, weight_map):
    names = list(load_file(folder / "model.safetensors"))
    (folder / INDEX).write_text(json.dumps({"weight_map": {n: "model.safetensors" for n in names}
                                            | weight_map}))


# --- the folder ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value, words", [
    (None, "expected the name of a file in the folder, got None"),
    (5, "got 5"), ("../x.safetensors", "got '../x.safetensors'"), ("", "got ''"),
])
def test_an_index_value_that_is_no_file_name_is_refused(value, words, ckpt, run_cli):
    index(ckpt, {"model.embed_tokens.weight": value})
    generate(run_cli, ckpt, words=(INDEX, "weight_map['model.embed_tokens.weight']", words))


@pytest.mark.parametrize("text, words", [
    ('{"weight_map": [1, 2]}', "expected a JSON object with a 'weight_map'"),
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
    ('{"weight_map": ', "not valid JSON"),
])
def test_an_index_that_is_no_index_is_refused(text, words, ckpt, run_cli):
    (ckpt / INDEX).write_text(text)
    generate(run_cli, ckpt, words=(INDEX, words))


def test_an_integer_tensor_is_refused_naming_it(ckpt, run_cli):
    tensors = load_file(ckpt / "model.safetensors")
    name = "model.layers.0.mlp.up_proj.weight"
    tensors[name] = tensors[name].to(torch.int16)
    save_file(tensors, ckpt / "model.safetensors", metadata={"format": "pt"})
    generate(run_cli, ckpt, words=("1 not floating-point", f"{name} is I16 in model.safetensors"))


@pytest.mark.parametrize("file, text, words", [
    ("generation_config.json", '{"eos_token_id": "x", "temperature": "hot"}',
     "eos_token_id: expected a token id or a list of them, got 'x'"),
    ("generation_config.json", '{"eos_token_id": [1, true]}', "got [1, True]"),
    ("generation_config.json", '{"eos_token_id": -3}', "got -3"),
    ("generation_config.json", "[1, 2, 3]", "expected a JSON object"),
    ("generation_config.json", "[" * 50_000, "nested deeper than 64 levels"),
    ("generation_config.json", '{"eos_token_id": ', "not valid JSON"),
])
def test_a_junk_generation_config_is_refused(file, text, words, ckpt, run_cli):
    (ckpt / file).write_text(text)
    generate(run_cli, ckpt, words=(file, words))


def test_a_junk_eos_in_config_json_is_refused(ckpt, run_cli):
    config = json.loads((ckpt / "config.json").read_text())
    (ckpt / "config.json").write_text(json.dumps({**config, "eos_token_id": {"a": 1}}))
    generate(run_cli, ckpt, words=("config.json: eos_token_id",))


# --- generate -------------------------------------------------------------------------------------

def test_a_tiny_temperature_samples_the_most_likely_token(ckpt, run_cli):
    greedy = run_cli("generate", "--weights", str(ckpt), "--new-tokens", "4", "Hi")
    tiny = run_cli("generate", "--weights", str(ckpt), "--new-tokens", "4", "--temperature",
                   "1e-320", "--seed", "3", "Hi")
    assert greedy[0] == tiny[0] == 0 and greedy[1] == tiny[1], (greedy, tiny)


@pytest.mark.parametrize("prompt, words", [
    ("a\x00b", "holds a NUL byte at character 1"),
    ("a\udcffb", "holds bytes that are not UTF-8 at character 1"),  # argv that was not UTF-8
])
def test_a_prompt_that_is_no_text_is_refused(prompt, words, ckpt, run_cli):
    generate(run_cli, ckpt, prompt=prompt, words=("the prompt", words))
    generate(run_cli, ckpt, "--chat", "--system", prompt, words=("the system message", words))


@pytest.mark.parametrize("template, words", [
    ("{% for %}", "TemplateSyntaxError"),
    ("{{ raise_exception('no system turns') }}", "no system turns"),
    ("{{ undefined_function() }}", "UndefinedError"),
    ("{{ 1 / 0 }}", "ZeroDivisionError"),
    ("{{ messages[7] }}", "the chat template's prompt gives no token"),
])
def test_a_broken_chat_template_is_named(template, words, ckpt, run_cli):
    (ckpt / "chat_template.jinja").write_text(template)
    generate(run_cli, ckpt, "--chat", words=("chat template", words))


@pytest.mark.parametrize("value", [[], {"a": 1}, "long"])
def test_a_tokenizer_config_value_of_the_wrong_type_is_named(value, ckpt, run_cli):
    # found by tests/weights/test_fuzz_checkpoints.py: transformers compares the prompt's
    # length with model_max_length and raised TypeError for a list
    config = json.loads((ckpt / "tokenizer_config.json").read_text())
    (ckpt / "tokenizer_config.json").write_text(json.dumps(config | {"model_max_length": value}))
    generate(run_cli, ckpt, words=("tokenizer_config.json", "fails on the prompt"))


def test_an_endless_chat_template_is_stopped(ckpt, run_cli, monkeypatch):
    monkeypatch.setattr(tokenizer_module, "CHAT_TEMPLATE_SECONDS", 0.5)
    (ckpt / "chat_template.jinja").write_text(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
    generate(run_cli, ckpt, "--chat", words=("chat template ran past 0.5 s",))


def test_a_prompt_past_the_context_is_refused_before_the_weights(ckpt, run_cli, monkeypatch):
    import archscope.weights.loader as loader

    monkeypatch.setattr(loader, "load_checkpoint", lambda *a, **k: pytest.fail("loaded"))
    generate(run_cli, ckpt, prompt="word " * 200, words=("holds at most 24", "max_seq_len"))


def test_generation_that_reaches_the_context_says_so(ckpt, run_cli):
    code, out, err = run_cli("generate", "--weights", str(ckpt), "--new-tokens", "100",
                             "--no-stats", "Hi")
    assert code == 0, err
    assert "note: stopped at tiny's context of 24 tokens" in err and "asked for 100" in err
