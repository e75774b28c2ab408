"""Fuzz checkpoint folders: a tiny sharded checkpoint with its config.json, index,
generation_config.json, tokenizer files and chat template mutated (values of every JSON type
and depth, junk text, cut or flipped bytes in a safetensors header, entries that are no regular
file), then opened as `generate` opens it and run for two tokens. Whatever the folder holds,
this succeeds or raises an InputError with a short message; nothing else escapes, quickly.

The budget, as in tests/spec/test_fuzz.py: ARCHSCOPE_FUZZ_EXAMPLES examples per target (default
200) and ARCHSCOPE_FUZZ_SECONDS per case (default 10)."""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from archscope.errors import InputError
from archscope.measure.textgen import open_generation
from hostile import within
from weights_helpers import family_spec

FUZZ_EXAMPLES = int(os.environ.get("ARCHSCOPE_FUZZ_EXAMPLES", "200"))
# a bound against hangs, not a timing: a loaded 2-core run took 5.7 s for one fit case
FUZZ_SECONDS = float(os.environ.get("ARCHSCOPE_FUZZ_SECONDS", "10"))
JSON_FILES = ["config.json", "model.safetensors.index.json", "generation_config.json",
              "tokenizer_config.json"]
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20),
              st.sampled_from([0, 1, -1, 2**63, 10**400, 1e308, 0.5]),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10),
              st.sampled_from(["model.safetensors", "../x", "", "llama", "silu", "config.json",
                               "model-00001-of-00002.safetensors", "<|eot|>", "{{ x }}"])),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=8)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A tiny fp32 checkpoint in two shards with an index, and every file's bytes."""
    from archscope.weights.writer import write_checkpoint

    folder = tmp_path_factory.mktemp("fuzz") / "tiny"
    write_checkpoint(family_spec("llama", vocab_size=512), folder, dtype=torch.float32,
                     shard_size=60_000)
    assert (folder / "model.safetensors.index.json").exists()
    stream, _, _ = open_generation(folder, "Hi", max_new_tokens=2, chat=True)  # imports, once
    assert len(list(stream)) >= 1
    return folder, {p.name: p.read_bytes() for p in folder.iterdir()}


def _mutate_json(draw, data):
    for _ in range(draw(st.integers(1, 3))):
        nested = [v for v in (data.values() if isinstance(data, dict) else []) if isinstance(v, dict)]
        node = draw(st.sampled_from([data] * 3 + nested)) if isinstance(data, dict) else None
        if node is None:
            return draw(json_values)
        keys = sorted(node)
        op = draw(st.sampled_from(["set", "set", "delete", "add", "replace"]))
        if op == "replace":
            return draw(json_values)
        if op == "delete" and keys:
            del node[draw(st.sampled_from(keys))]
        elif op == "set" and keys:
            node[draw(st.sampled_from(keys))] = draw(json_values)
        else:
            node[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
    return data


@st.composite
def mutations(draw, names: list[str]) -> dict:
    """{file name: new bytes or an action}: 1-3 files of the folder changed."""
    out = {}
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(JSON_FILES + ["chat_template.jinja", "tokenizer.json",
                                                  "weights", "entry"]))
        if name in JSON_FILES:
            text = draw(st.one_of(st.just(None), st.sampled_from(
                ["", "[" * 5000, '{"weight_map": ', "\ud800", "null", "[]", "1e999"])))
            out[name] = text if text is not None else "MUTATE"
        elif name == "chat_template.jinja":
            out[name] = draw(st.sampled_from(
                ["{% for %}", "{{ raise_exception('x') }}", "{{ messages[9] }}", "", "{{ 1/0 }}",
                 "{% for m in messages %}{{ m['content'] }}{% endfor %}"]))
        elif name == "tokenizer.json":
            out[name] = draw(st.sampled_from(["", "{}", '{"model": 5}', "[" * 3000]))
        elif name == "weights":
            out[draw(st.sampled_from(sorted(n for n in names if n.endswith(".safetensors"))))] = \
                ("BYTES", draw(st.integers(0, 200)), draw(st.integers(0, 255)),
                 draw(st.booleans()))
        else:
            out[draw(st.sampled_from(["extra.safetensors", "generation_config.json",
                                      "tokenizer.json"]))] = draw(st.sampled_from(
                ["FIFO", "DEVICE-LINK", "FOLDER", "EMPTY"]))
    return out


def _apply(folder, files: dict, changes: dict, draw_json) -> None:
    for entry in folder.iterdir():  # back to the pristine folder
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        elif entry.name not in files or entry.is_symlink() or not entry.is_file():
            entry.unlink()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    for name, change in changes.items():
        path = folder / name
        if isinstance(change, tuple):  # a safetensors file: cut, or a byte of its header flipped
            _, at, byte, cut = change
            data = bytearray(files[name])
            data = data[:at] if cut else data[:at] + bytes([byte]) + data[at + 1:]
            path.write_bytes(bytes(data))
        elif change == "MUTATE":
            original = json.loads(files[name]) if name in files else {}
            path.write_text(json.dumps(draw_json(original)))
        elif change in ("FIFO", "DEVICE-LINK", "FOLDER", "EMPTY"):
            path.unlink(missing_ok=True)
            {"FIFO": lambda: os.mkfifo(path), "DEVICE-LINK": lambda: path.symlink_to("/dev/zero"),
             "FOLDER": path.mkdir, "EMPTY": path.touch}[change]()
        else:
            path.write_text(change, errors="surrogatepass")


@pytest.mark.slow  # ~0.1 s an example (a tokenizer and a model loaded each time), in CI too
def test_fuzz_checkpoint_folders(pristine):
    folder, files = pristine

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutations(sorted(files)), st.data())
    @example({"model.safetensors.index.json": '{"weight_map": {"lm_head.weight": null}}'}, None)
    @example({"generation_config.json": '{"eos_token_id": "x"}'}, None)
    @example({"config.json": "FIFO"}, None)
    def check(changes, data):
        _apply(folder, files, changes, lambda d: _mutate_json(data.draw, d))
        start = time.perf_counter()
        try:
            with within(30), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stream, text, _ = open_generation(folder, "Hi", max_new_tokens=2, chat=True)
                for token in stream:
                    text.push(token)
        except InputError as err:
            message = str(err)
            assert "\n" not in message and len(message) < 1000, message
        elapsed = time.perf_counter() - start
        assert elapsed < FUZZ_SECONDS, f"took {elapsed:.2f} s: {changes}"

    check()
