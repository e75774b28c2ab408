"""Fuzz the spec loader: mutated preset YAML (as a mapping and as text) and random `--set`
what-ifs. Whatever comes in, `load_spec` returns a ModelSpec (whose record then builds, or
refuses with an InputError) or raises an InputError with a short message naming the file or
"overrides"; nothing else escapes, and each case is quick.

The budget, as in tests/spec/test_hf_hostile.py: ARCHSCOPE_FUZZ_EXAMPLES examples per target
(default 200) and ARCHSCOPE_FUZZ_SECONDS per case (default 10), e.g.
`ARCHSCOPE_FUZZ_EXAMPLES=20000 python -m pytest -q tests/spec/test_fuzz.py -k fuzz`.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import time
import types
import typing
import warnings
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from archscope.errors import InputError, SpecError
from archscope.estimate import model_record
from archscope.spec import ModelSpec, load_spec, preset_names
from archscope.spec.fields import to_mapping
from archscope.spec.loader import PRESETS_DIR, parse_yaml
from archscope.spec.schema import AttentionSpec, FFNSpec, LayerOverride

FUZZ_EXAMPLES = int(os.environ.get("ARCHSCOPE_FUZZ_EXAMPLES", "200"))
# a bound against hangs, not a timing: a loaded 2-core run took 5.7 s for one fit case
FUZZ_SECONDS = float(os.environ.get("ARCHSCOPE_FUZZ_SECONDS", "10"))
MESSAGE_LIMIT = 400  # "a clear one-paragraph message (< 400 characters)"

FUZZ_SETTINGS = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
                         suppress_health_check=[HealthCheck.too_slow,
                                                HealthCheck.data_too_large])

PRESETS = preset_names()
TEXTS = {name: (PRESETS_DIR / f"{name}.yaml").read_text() for name in PRESETS}
MAPPINGS = {name: parse_yaml(text, name) for name, text in TEXTS.items()}
SET_BASES = [name for name in ("llama-3.2-1b", "deepseek-v2") if name in PRESETS]


# ---------------------------------------------------------------------------------------------
# The keys a spec can have: every field of every spec dataclass, at its dotted path.

def _unwrap(tp):
    """`X | None` -> X; `tuple[X, ...]` -> X (as a list's item)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        dataclass_args = [a for a in args if dataclasses.is_dataclass(a)]
        return dataclass_args[0] if dataclass_args else args[0]
    return tp


def _schema_paths(cls, prefix: tuple = ()) -> list[tuple]:
    out = []
    for name, tp in typing.get_type_hints(cls).items():
        if name not in {f.name for f in dataclasses.fields(cls)}:
            continue
        path = prefix + (name,)
        out.append(path)
        tp = _unwrap(tp)
        if typing.get_origin(tp) is tuple:  # layers: a list of LayerOverride
            out += _schema_paths(LayerOverride, path + (0,))
        elif dataclasses.is_dataclass(tp):
            out += _schema_paths(tp, path)
    if cls is LayerOverride:  # its attention/ffn are plain mappings patched onto the spec's
        out += _schema_paths(AttentionSpec, prefix + ("attention",))
        out += _schema_paths(FFNSpec, prefix + ("ffn",))
    return out


SCHEMA_PATHS = sorted(set(_schema_paths(ModelSpec)), key=str)
FIELD_NAMES = sorted({path[-1] for path in SCHEMA_PATHS if isinstance(path[-1], str)})


def _dotted(path: tuple) -> str:
    """The --set spelling: `layers.0.ffn` (archscope has no `[0]` syntax: also fuzzed)."""
    return ".".join(str(p) for p in path)


def _bracketed(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def existing_paths(node, prefix: tuple = ()) -> list[tuple]:
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for key, value in items:
        out.append(prefix + (key,))
        out += existing_paths(value, prefix + (key,))
    return out


# ---------------------------------------------------------------------------------------------
# Values: anything YAML can represent.

WORDS = ["gqa", "mla", "moe", "mlp", "swiglu", "geglu", "relu2", "rope", "learned", "none",
         "yarn", "llama3", "linear", "rmsnorm", "layernorm", "pre", "post", "silu", "gelu",
         "gelu_tanh", "relu", "greedy", "group_limited_greedy", "0:1", "1::2", "::-1", "0:0",
         "::0", "0", "-1", "1:2:3:4", "", " ", "null", "~", "true", "1e5", "1e-5", ".nan",
         "llama-3.2-1b", "deepseek-v2", "gpt2", "no-such-preset", "../x", "/", "\x00"]
LONG_TEXTS = ["x" * 1000, "é" * 500, "\u202e" * 50 + "abc", "🦙" * 300, "a\nb\n" * 200,
              "9" * 5000, "[" * 300, "{a: " * 100]
scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(-10, 10**5), st.integers(-(10**40), 10**40),
    st.sampled_from([0, -1, 1, 2, 3, 7, 63, 64, 1023, 1024, 1025, 65536, 65537, 2**31 - 1,
                     2**31, 2**63, -(2**63), 10**12, 10**300, -(10**400)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 5e-324, 1e-308, 0.0, -0.0, 0.5, 1e12, 4096.0,
                     float("nan"), float("inf"), float("-inf")]),
    st.text(max_size=16), st.sampled_from(WORDS), st.sampled_from(LONG_TEXTS),
    st.sampled_from(FIELD_NAMES))
keys = st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=8),
                 st.sampled_from(["kind", "select", "x", 0, 1, None, True, 1.5]))
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=10)


COMPONENTS = {part: [m[part] for m in MAPPINGS.values() if isinstance(m.get(part), dict)]
              for part in ("attention", "ffn")}
COMPONENT_FIELDS = {"attention": [f.name for f in dataclasses.fields(AttentionSpec)],
                    "ffn": [f.name for f in dataclasses.fields(FFNSpec)]}


@st.composite
def components(draw, part: str):
    """A preset's attention or ffn mapping with 0-2 edits: a field set or dropped, a key added."""
    out = copy.deepcopy(draw(st.sampled_from(COMPONENTS[part])))
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["set", "drop", "add"]))
        if op == "set":
            out[draw(st.sampled_from(COMPONENT_FIELDS[part]))] = draw(values)
        elif op == "drop" and out:
            del out[draw(st.sampled_from(sorted(out, key=repr)))]
        else:
            out[draw(keys)] = draw(values)
    return out


@st.composite
def layer_overrides(draw):
    """A `layers` list: 1-3 overrides, each selecting layers and patching attention/ffn."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        override = {"select": draw(st.one_of(
            st.sampled_from(["0", "1", "0:1", "1::2", "::-1", "-1:", "0:0", "::0", "5:2",
                             "0:2:1", "a:b", " 1 ", "0,1", "99999999999999999999"]),
            st.lists(st.integers(-2, 64), max_size=4), st.integers(-1, 3), values))}
        for part in ("attention", "ffn"):
            if draw(st.booleans()):
                override[part] = draw(components(part))
        if draw(st.integers(0, 3)) == 0:
            override["note"] = draw(values)
        out.append(override)
    return out


YAML_TAGS = ["str", "int", "float", "bool", "null", "timestamp", "binary", "set", "omap",
             "pairs", "seq", "map", "merge", "value", "python/name:os.system", "custom"]
TAGGED_TEXTS = ["x", "1", "0x", "0b", "1:2", "2001-02-03", "2001-02-30", "2001-02-03 25:00:00",
                "2001-02-03T10:00:00+99:00", "1e5", "1e99999", ".inf", "-", "", "''", " ", "yes",
                "é", "aGVsbG8=", "@@", "[1]", "{a: 1}", "[{a: 1, b: 2}]", "9" * 5000]


@st.composite
def tagged(draw) -> str:
    """An explicitly tagged value, often one that does not fit its tag (`!!bool x`)."""
    text = draw(st.one_of(st.sampled_from(TAGGED_TEXTS), st.text(max_size=8)))
    return f"!!{draw(st.sampled_from(YAML_TAGS))} {text}"


def misspelt(draw, word: str) -> str:
    """One random edit: drop, double, swap or replace a character."""
    if not word:
        return draw(st.text(min_size=1, max_size=4))
    i = draw(st.integers(0, len(word) - 1))
    edit = draw(st.sampled_from(["drop", "double", "swap", "replace", "case"]))
    if edit == "drop":
        return word[:i] + word[i + 1:]
    if edit == "double":
        return word[:i] + word[i] + word[i:]
    if edit == "swap" and i + 1 < len(word):
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if edit == "case":
        return word.upper()
    return word[:i] + draw(st.characters()) + word[i + 1:]


# ---------------------------------------------------------------------------------------------
# The check every target shares.

def check_outcome(load, names=()):
    """Run `load()`: a ModelSpec (whose record must build or refuse with an InputError) or an
    InputError whose message is short and names each of `names`; quick either way."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            spec = load()
        except InputError as err:
            message = str(err)
            assert len(message) < MESSAGE_LIMIT, (len(message), message)
            assert "\n" not in message, message
            for name in names:
                assert name in message, (name, message)
        else:
            assert isinstance(spec, ModelSpec), spec
            try:
                model_record(spec)
            except InputError as err:
                assert len(str(err)) < MESSAGE_LIMIT, str(err)
    elapsed = time.perf_counter() - start
    assert elapsed < FUZZ_SECONDS, f"took {elapsed:.2f} s"


# ---------------------------------------------------------------------------------------------
# 1a. A preset's parsed mapping, mutated, dumped back to YAML.

def _child(node, part):
    if isinstance(node, dict):
        return node.get(part)
    return node[part] if isinstance(part, int) and part < len(node) else None


def _put(node, part, value):
    if isinstance(node, dict):
        node[part] = value
    elif part < len(node):
        node[part] = value
    else:
        node.append(value)


def set_path(doc: dict, path: tuple, value) -> None:
    """Set `path` (keys and list indices) to `value`, making the mappings and lists on the way."""
    node = doc
    for part, following in zip(path, path[1:]):
        child = _child(node, part)
        want = list if isinstance(following, int) else dict
        if not isinstance(child, want):
            child = want()
            _put(node, part, child)
        node = child
    _put(node, path[-1], value)


def delete_path(doc: dict, path: tuple) -> None:
    node = doc
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]


@st.composite
def mutated_mappings(draw):
    name = draw(st.sampled_from(PRESETS))
    doc = copy.deepcopy(MAPPINGS[name])
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["set", "set", "set", "set-new", "delete", "unknown",
                                   "layers"]))
        present = existing_paths(doc)
        if op == "layers":  # per-layer overrides: the plan's code path
            doc["layers"] = draw(layer_overrides())
        elif op == "set" and present:
            set_path(doc, draw(st.sampled_from(present)), draw(values))
        elif op in ("set", "set-new"):
            set_path(doc, draw(st.sampled_from(SCHEMA_PATHS)), draw(values))
        elif op == "delete" and present:
            delete_path(doc, draw(st.sampled_from(present)))
        else:  # an unknown key in some mapping (a misspelt field, a random word, an integer)
            mappings = [doc] + [v for v in _walk(doc) if isinstance(v, dict)]
            node = draw(st.sampled_from(mappings))
            key = draw(st.one_of(st.sampled_from(FIELD_NAMES).map(lambda w: w + "s"), keys))
            node[key] = draw(values)
    flow = draw(st.sampled_from([False, None, True]))
    return name, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True,
                                default_flow_style=flow)


def _walk(node):
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        yield child
        yield from _walk(child)


def test_fuzz_mutated_preset_mappings(tmp_path):
    file = tmp_path / "mutated.yaml"

    @FUZZ_SETTINGS
    @given(mutated_mappings())
    @example(("deepseek-v2", "name: x\nextends: deepseek-v2\n"
                             "layers: [{select: '0:1', ffn: {1: 2, kind: swiglu}}]\n"))
    @example(("llama-3.2-1b", "extends: llama-3.2-1b\nlayers: [{select: '0', attention: "
                              "{null: 1, n_heads: 2}}]\n"))
    def check(case):
        _, text = case
        file.write_text(text, encoding="utf-8")
        check_outcome(lambda: load_spec(file), names=(file.name,))
        ran[0] += 1

    ran = [0]
    check()
    print(f"{ran[0]} examples")  # shown with -rA: the long campaign reports it


# ---------------------------------------------------------------------------------------------
# 1b. A preset's YAML text, mutated as text (lines, characters, anchors, aliases, tabs, bytes).

SPECIALS = [":", "-", "- ", "[", "]", "{", "}", ",", "&", "*", "!", "|", ">", "'", '"', "#",
            "%", "@", "`", "?", "\t", "\n", " ", "  ", "<<", "~", "\\", "\x00", "\ufeff"]
ODD_LINES = [
    "---", "...", "%YAML 1.1", "%TAG ! tag:x,2000:", "? [a, b]", ": 1", "? name",
    "<<: *a", "<<: [*a, *b]", "<<: 5", "x: &a {kind: gqa, n_heads: 4}", "y: *a", "*a: 1",
    "z: &b [*b]", "name: !!binary aGVsbG8=", "name: !!set {a, b}", "name: !!omap [a: 1]",
    "name: !!timestamp 2001-12-14", "name: !!float abc", "n_layers: !!int 0x", "n_layers: 0x10",
    "n_layers: 0o17", "n_layers: 1_000", "n_layers: 1:20", "d_model: !!str 64",
    "name: !!python/object/apply:os.system [echo]", "name: !custom x", "vocab_size: 9" + "9" * 5000,
    "name: |", "name: >-", "  indented: 1", "\tn_layers: 4", "n_layers:\t4", "- 1", "[1, 2]",
    "layers: [{select: '0', ffn: {1: 2}}]", "layers: [{select: '0', attention: {~: 1}}]",
    "layers: [{select: [0, 0, 0], note: x}]", "layers: {select: 0}", "extends: gpt2",
    "extends: deepseek-v2", "extends: [gpt2]", "extends: mutated", "extends: ../model_specs/gpt2",
    "position: {kind: rope, theta: 1e308, scaling: {kind: yarn, factor: 1e308}}",
    "attention: {kind: mla, n_heads: 1}", "ffn: {kind: moe}", "multipliers: {logits: 1e-308}",
    "d_model: 1e308", "max_seq_len: .inf", "norm: {kind: rmsnorm, eps: .nan}", "'",
]


@st.composite
def yaml_lines(draw):
    """A line for a spec: `key: value` with a YAML-flow value, indented 0-4 spaces."""
    key = draw(st.one_of(st.sampled_from(FIELD_NAMES), st.text(min_size=1, max_size=6)))
    value = draw(values)
    try:
        flow = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True,
                              width=float("inf")).rstrip("\n").removesuffix("\n...")
    except Exception:  # noqa: BLE001 - an unrepresentable draw: some text instead
        flow = "x"
    flow = flow.replace("\n", " ")
    if draw(st.integers(0, 4)) == 0:
        flow = draw(tagged())
    return " " * draw(st.integers(0, 4)) + f"{key}: {flow}"


@st.composite
def mutated_texts(draw):
    name = draw(st.sampled_from(PRESETS))
    text = TEXTS[name]
    for _ in range(draw(st.integers(1, 4))):
        lines = text.split("\n")
        op = draw(st.sampled_from(["insert-line", "insert-line", "delete-line", "dup-line",
                                   "swap-lines", "insert-chars", "delete-chars", "anchor",
                                   "tabs", "bytes"]))
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        j = draw(st.integers(0, max(len(lines) - 1, 0)))
        if op == "insert-line":
            line = draw(st.one_of(yaml_lines(), st.sampled_from(ODD_LINES), st.text(max_size=20),
                                  st.sampled_from(list(lines))))
            lines.insert(i, line)
        elif op == "delete-line" and lines:
            del lines[i]
        elif op == "dup-line" and lines:
            lines.insert(j, lines[i])
        elif op == "swap-lines" and lines:
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "tabs" and lines:
            stripped = lines[i].lstrip(" ")
            lines[i] = "\t" * draw(st.integers(1, 2)) + stripped
        elif op == "anchor" and lines:
            lines = _anchor(draw, lines, i, j)
        if op in ("insert-chars", "delete-chars", "bytes"):
            at = draw(st.integers(0, len(text)))
            if op == "insert-chars":
                chars = draw(st.one_of(st.sampled_from(SPECIALS), st.text(min_size=1, max_size=4)))
                text = text[:at] + chars + text[at:]
            elif op == "delete-chars":
                text = text[:at] + text[at + draw(st.integers(1, 40)):]
            else:  # undecodable bytes, kept as surrogates until written
                text = text[:at] + draw(st.sampled_from(["\udcff", "\udcc3", "\udc80"])) + text[at:]
        else:
            text = "\n".join(lines)
    return name, text


def _anchor(draw, lines: list[str], i: int, j: int) -> list[str]:
    """Put an anchor on line i's value and an alias to it at line j (or a new key there)."""
    line = lines[i]
    if ":" not in line:
        return lines
    anchor = draw(st.sampled_from(["a", "b", "x1", "é"]))
    key, _, rest = line.partition(":")
    lines[i] = f"{key}: &{anchor}{rest}" if rest.strip() else f"{key}: &{anchor}"
    target = lines[j]
    if ":" in target and draw(st.booleans()):
        tkey, _, _ = target.partition(":")
        lines[j] = f"{tkey}: *{anchor}"
    else:
        indent = " " * draw(st.sampled_from([0, 2, 4]))
        lines.insert(j, f"{indent}{draw(st.sampled_from(FIELD_NAMES))}: *{anchor}")
    return lines


def test_fuzz_mutated_preset_texts(tmp_path):
    file = tmp_path / "mutated.yaml"

    @FUZZ_SETTINGS
    @given(mutated_texts())
    @example(("gpt2", TEXTS.get("gpt2", "") + "\nnote: [!!bool x, !!float , !!timestamp x]\n"))
    @example(("deepseek-v2", TEXTS.get("deepseek-v2", "") +
              "\nlayers: [{select: '0:1', ffn: {1: 2, kind: swiglu}}]\n"))
    def check(case):
        _, text = case
        file.write_bytes(text.encode("utf-8", errors="surrogateescape"))
        check_outcome(lambda: load_spec(file), names=(file.name,))
        ran[0] += 1

    ran = [0]
    check()
    print(f"{ran[0]} examples")


# ---------------------------------------------------------------------------------------------
# 2. --set what-ifs on a preset (and on one with per-layer overrides: deepseek-v2).

SET_PATHS = {name: existing_paths(to_mapping(load_spec(name))) for name in SET_BASES}
ALIASES = ["&a [*a]", "&a [1, *a]", "[&a 1, *a]", "[&a [1, 2], *a, *a]", "*a", "&a", "&a 1",
           "{<<: *a}", "{<<: {kind: gqa}}", "{<<: 1}", "&a {n_heads: *a}", "[*b, &b 1]",
           "!!binary aGVsbG8=", "!!set {a, b}", "!!omap [a: 1]", "!!python/name:os.system",
           "!!float x", "2001-12-14", "0x10", "1_000", "1:20", "'", '"', "[", "{", "}", "- 1",
           "a: 1", "a: 1\nb: 2", "? a", "|\n x", "--- 1", "1\n---\n2", "%YAML 1.2\n--- 1",
           "\t1", "1e400", "-1e400", ".inf", ".nan", "9" * 5000, "1" + "0" * 400]


@st.composite
def set_keys(draw, preset: str):
    path = draw(st.sampled_from(SET_PATHS[preset] + SCHEMA_PATHS))
    how = draw(st.sampled_from(["dotted", "dotted", "dotted", "bracketed", "misspelt", "deep",
                                "random", "odd"]))
    if how == "dotted":
        return _dotted(path)
    if how == "bracketed":
        return _bracketed(path)
    if how == "misspelt":
        parts = [str(p) for p in path]
        k = draw(st.integers(0, len(parts) - 1))
        parts[k] = misspelt(draw, parts[k])
        return ".".join(parts)
    if how == "deep":
        return _dotted(path) + "." + ".".join(
            draw(st.lists(st.sampled_from(FIELD_NAMES + ["x", "0"]), min_size=1, max_size=80)))
    if how == "random":
        return draw(st.text(max_size=30))
    return draw(st.sampled_from(["", " ", ".", "a..b", "layers[0]", "layers[-1].ffn.d_ff",
                                 "layers.0", "layers.999.ffn", "x" * 1000, "é" * 300,
                                 "attention.", ".attention", "=", "a=b", "name.x", "\x00"]))


@st.composite
def set_values(draw):
    how = draw(st.sampled_from(["flow", "flow", "text", "long", "alias", "layers", "tagged"]))
    if how == "tagged":
        return draw(tagged())
    if how in ("flow", "layers"):
        value = draw(layer_overrides() if how == "layers" else values)
        style = draw(st.sampled_from([True, None]))
        try:
            text = yaml.safe_dump(value, default_flow_style=style, allow_unicode=True,
                                  width=float("inf"))
        except Exception:  # noqa: BLE001 - an unrepresentable draw
            text = "x"
        return text.rstrip("\n").removesuffix("\n...")
    if how == "text":
        return draw(st.text(max_size=30))
    if how == "long":
        return draw(st.sampled_from(LONG_TEXTS))
    return draw(st.sampled_from(ALIASES))


@st.composite
def set_cases(draw):
    preset = draw(st.sampled_from(SET_BASES))
    items = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 19)) == 0:  # no `=` at all
            items.append(draw(st.text(max_size=20)))
        else:
            key = "layers" if draw(st.integers(0, 5)) == 0 else draw(set_keys(preset))
            items.append(f"{key}={draw(set_values())}")
    return preset, items


@pytest.mark.skipif(not SET_BASES, reason="no llama-3.2-1b or deepseek-v2 preset")
def test_fuzz_set_overrides():
    @FUZZ_SETTINGS
    @given(set_cases())
    @example(("deepseek-v2", ["layers=[{select: '0:1', ffn: {1: 2, kind: swiglu}}]"]))
    @example(("llama-3.2-1b", ["layers=[{select: '0', attention: {~: 1, n_heads: 2}}]"]))
    @example(("deepseek-v2", ["layers.0.ffn={0: 1}", "layers[0].ffn.d_ff=&a [*a]"]))
    @example(("llama-3.2-1b", ["attention.bias=!!bool x"]))
    @example(("llama-3.2-1b", ["name=!!timestamp x", "n_layers=!!int "]))
    def check(case):
        preset, items = case
        check_outcome(lambda: load_spec(preset, items), names=("overrides",))
        ran[0] += 1

    ran = [0]
    check()
    print(f"{ran[0]} examples")


# ---------------------------------------------------------------------------------------------
# What the fuzzer found, by hand.

@pytest.mark.parametrize("ffn", ["{1: 2, kind: swiglu}", "{~: 2, d_ff: 3}", "{1.5: 1, d_ff: 3}"])
def test_a_layer_override_with_a_non_string_key_is_refused(ffn):
    """Keys of an override's ffn/attention mapping of mixed types (an integer or null beside
    strings) crashed the per-layer plan's cache with a TypeError; now: unknown key."""
    with pytest.raises(SpecError) as err:
        load_spec("deepseek-v2", [f"layers=[{{select: '0:1', ffn: {ffn}}}]"])
    message = str(err.value)
    assert message.startswith("overrides: layers") and "unknown key" in message, message
    assert len(message) < MESSAGE_LIMIT


@pytest.mark.parametrize("value", ["!!bool x", "!!bool ''", "!!int", "!!int ''", "!!float",
                                   "!!timestamp x", "!!timestamp 0o8", "[1, !!bool no-way]"])
def test_a_value_that_does_not_fit_its_tag_is_refused(value, tmp_path):
    """PyYAML's tag constructors raise KeyError (`!!bool x`), IndexError (`!!int ''`) or
    AttributeError (`!!timestamp x`); each escaped parse_yaml as a traceback."""
    with pytest.raises(SpecError) as err:
        load_spec("llama-3.2-1b", [f"attention.bias={value}"])
    assert str(err.value).startswith("overrides: attention.bias: a value cannot be read: a value "
                                     "that does not fit its tag"), str(err.value)
    file = tmp_path / "tagged.yaml"
    file.write_text(f"extends: llama-3.2-1b\nname: {value}\n")
    with pytest.raises(SpecError) as err:
        load_spec(file)
    assert str(err.value).startswith(f"{file}: a value cannot be read"), str(err.value)


def test_the_paths_cover_nested_keys():
    for path in [("attention", "n_kv_heads"), ("layers", 0, "ffn", "d_ff"),
                 ("position", "scaling", "factor"), ("ffn", "router", "n_group"),
                 ("layers", 0, "select"), ("multipliers", "logits")]:
        assert path in SCHEMA_PATHS, path
    doc: dict = {"layers": "x"}
    set_path(doc, ("layers", 0, "ffn", "d_ff"), 5)
    assert doc == {"layers": [{"ffn": {"d_ff": 5}}]}
    set_path(doc, ("layers", 3, "select"), "0")
    assert doc["layers"][1] == {"select": "0"}
    assert Path(PRESETS_DIR).is_dir()
