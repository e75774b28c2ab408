"""Hostile specs (what a fuzzer found): each gets exit 2 and a short one-line message naming the
file and the key, fast, with no traceback, hang or crash. The limits are archscope/spec/limits.py.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
import time
import typing
from pathlib import Path

import pytest
import yaml

from archscope.errors import MESSAGE_MAX, SpecError, quote
from archscope.spec import ModelSpec, load_spec, preset_names
from archscope.spec import limits, yaml_shape
from archscope.spec.fields import to_mapping
from archscope.spec.loader import PRESETS_DIR, parse_yaml

SECONDS = 2.0  # each refusal, in-process (the work before it is bounded by the limits)
LIMIT_WORDS = f"beyond the limit {limits.INT_LIMITS['n_layers']:,} ({limits.WHERE})"

GOOD = textwrap.dedent("""\
    name: tiny
    source: test
    vocab_size: 100
    d_model: 64
    n_layers: 4
    max_seq_len: 128
    norm: {kind: rmsnorm, eps: 1e-5}
    position: {kind: rope, theta: 10000.0}
    attention: {kind: gqa, n_heads: 4, n_kv_heads: 2, head_dim: 16}
    ffn: {kind: swiglu, d_ff: 128}
""")


def refused(run_cli, *args, words=(), seconds=SECONDS) -> str:
    """Run the CLI in-process; assert a quick exit 2 with one short line; return the message."""
    start = time.perf_counter()
    code, out, err = run_cli(*args)
    elapsed = time.perf_counter() - start
    assert code == 2, (code, err[:500])
    assert out == ""
    assert "Traceback" not in err
    assert err.startswith("error: ") and err.count("\n") == 1, err[:500]
    assert len(err) <= MESSAGE_MAX + len("error: \n"), len(err)
    assert elapsed < seconds, f"{elapsed:.1f} s: {err}"
    for word in words:
        assert word in err, err
    return err


def spec_file(tmp_path: Path, text: str, name: str = "hostile.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def block_nest(key: str, depth: int) -> str:
    lines = [f"{key}:"] + ["  " * (i + 1) + "a:" for i in range(depth)]
    return "\n".join(lines) + " 1\n"


def alias_bomb(levels: int) -> str:
    """A "billion laughs": 9 ** levels nodes once aliases are expanded (levels 9: 327 bytes)."""
    names = "abcdefghijkl"[:levels]
    rows = ["a: &a [x,x,x,x,x,x,x,x,x]"]
    rows += [f"{n}: &{n} [{','.join(['*' + p] * 9)}]" for p, n in zip(names, names[1:])]
    return "\n".join(rows) + "\n"


def inline_bomb(levels: int) -> str:
    """The same, as one flow value: [&a0 [x, ...], &a1 [*a0, ...], ...]."""
    parts = ["&a0 [" + ",".join("x" * 9) + "]"]
    parts += [f"&a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


# --- nesting --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, key", [
    (GOOD.replace("n_layers: 4", f"n_layers: {nested(1000)}"), "n_layers[0][0]"),
    (GOOD + block_nest("layers", 1000), "layers.a.a.a"),
    (GOOD + block_nest("extends", 1000), "extends.a.a.a"),
    (GOOD.replace("n_layers: 4", "n_layers: " + "{a: " * 1000 + "1" + "}" * 1000),
     "n_layers.a.a"),
], ids=["flow-lists", "block-mappings-under-layers", "block-mappings-under-extends",
        "flow-mappings"])
def test_deep_nesting_is_refused_before_it_is_built(text, key, tmp_path, run_cli):
    path = spec_file(tmp_path, text)
    refused(run_cli, "show", path,
            words=(path, key, f"nested deeper than {limits.YAML_DEPTH_MAX} levels", limits.WHERE))


def test_forty_thousand_levels_do_not_crash_the_process(tmp_path):
    """libyaml's composer recursed in C and overflowed the stack (exit 139) at this depth: in a
    subprocess, so that a crash shows as a bad return code rather than killing pytest."""
    path = spec_file(tmp_path, GOOD.replace("n_layers: 4", f"n_layers: {nested(40_000)}"))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "from archscope.cli import main; main()",
                           "show", path], capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert path in proc.stderr and "n_layers[0]" in proc.stderr and "nested deeper" in proc.stderr
    assert len(proc.stderr) < MESSAGE_MAX + 10
    assert elapsed < 20  # the interpreter's start and imports; the refusal itself is instant


class _ScannerWithADepthLimit(yaml.SafeLoader):
    """Refuses flow nesting past 1,000 levels in the scanner, as libyaml 0.2.6 does (PyYAML
    6.0.4's wheels), with its words: whatever PyYAML this machine has, the path runs."""

    def fetch_flow_collection_start(self, token_class):
        if self.flow_level >= 1_000:
            mark = self.get_mark()
            raise yaml.scanner.ScannerError("while increasing flow level", mark,
                                            "exceeded maximum nesting depth", mark)
        super().fetch_flow_collection_start(token_class)


def test_a_scanner_that_refuses_the_depth_itself_still_names_the_key():
    text = GOOD.replace("n_layers: 4", f"n_layers: {nested(5_000)}")
    with pytest.raises(yaml.scanner.ScannerError):  # what the scanner alone would say
        for _ in yaml.parse(text, Loader=_ScannerWithADepthLimit):
            pass
    with pytest.raises(SpecError, match="nested deeper") as err:
        yaml_shape.check_yaml(text, _ScannerWithADepthLimit, "deep.yaml", None)
    assert err.value.key.startswith("n_layers[0][0]")
    other = yaml.scanner.ScannerError("while scanning", None, "found a tab", None)

    class _OtherComplaint(yaml.SafeLoader):
        def fetch_more_tokens(self):
            raise other
    with pytest.raises(yaml.scanner.ScannerError) as err:  # any other complaint stays as it is
        yaml_shape.check_yaml(text, _OtherComplaint, "deep.yaml", None)
    assert err.value is other


def test_the_depth_limit_admits_its_own_depth():
    ok = "x: " + nested(limits.YAML_DEPTH_MAX - 1) + "\n"  # the mapping is level 1
    assert parse_yaml(ok, "ok.yaml")["x"] is not None
    with pytest.raises(SpecError, match="nested deeper"):
        parse_yaml("x: " + nested(limits.YAML_DEPTH_MAX) + "\n", "deep.yaml")


# --- aliases --------------------------------------------------------------------------------

@pytest.mark.parametrize("levels", [9, 10])
def test_billion_laughs_file(levels, tmp_path, run_cli):
    text = alias_bomb(levels)
    assert len(text) < 400
    path = spec_file(tmp_path, text)
    refused(run_cli, "show", path, words=(path, ": f[", "100,000 YAML nodes once aliases are "
                                                        "expanded", limits.WHERE))


def test_billion_laughs_in_a_spec_value(tmp_path, run_cli):
    path = spec_file(tmp_path, GOOD.replace("n_layers: 4", f"n_layers: {inline_bomb(9)}"))
    refused(run_cli, "show", path, words=(path, "n_layers[", "100,000 YAML nodes"))


def test_a_300_byte_set_value_gives_a_short_message(run_cli):
    """Seven levels (4.8M nodes) used to print a 28 MB message quoting the expanded value."""
    value = inline_bomb(7)
    assert len(value) < 300
    refused(run_cli, "show", "llama-3.2-1b", "--set", f"n_layers={value}",
            words=("overrides: n_layers", "100,000 YAML nodes"))


def test_a_small_expansion_still_quotes_shortly(run_cli):
    """Under the node limit (9**5 = 59,049 nodes) the value is refused as a type, quoted short."""
    err = refused(run_cli, "show", "llama-3.2-1b", "--set", f"n_layers={inline_bomb(5)}",
                  words=("overrides: n_layers: expected an integer, got [",))
    assert "..." in err


@pytest.mark.parametrize("value", ["&a [*a]", "&a {x: *a}"])
def test_an_alias_inside_what_it_names(value, run_cli):
    refused(run_cli, "show", "llama-3.2-1b", "--set", f"n_layers={value}",
            words=("overrides: n_layers", "alias *a is inside the node it names"))


# --- integers, floats -----------------------------------------------------------------------

@pytest.mark.parametrize("override, key, words", [
    ("n_layers=1000000000000", "n_layers", f"1000000000000 is {LIMIT_WORDS}"),
    ("n_layers=1000000000000000000000000000000", "n_layers", LIMIT_WORDS),
    ("n_layers=1000000", "n_layers", LIMIT_WORDS),  # the eager per-layer plan ran past a minute
    ("n_layers=-100000000000000000000", "n_layers", "beyond the limit -1,024"),
    ("n_layers=1e30", "n_layers", "expected an integer, got 1e+30"),
    ("n_layers=" + "9" * 5000, "n_layers", "an integer too long to read"),
    ("d_model=10000000000000", "d_model", "beyond the limit 65,536"),
    ("attention.n_heads=4294967296", "attention.n_heads", "beyond the limit 1,024"),
    ("ffn.d_ff=1099511627776", "ffn.d_ff", "beyond the limit 1,048,576"),
    ("max_seq_len=1000000000000", "max_seq_len", "beyond the limit 134,217,728"),
    ("layers=[{select: [99999999999], note: x}]", "layers[0].select[0]", "beyond the limit"),
    ("norm.eps=.inf", "norm.eps", "expected a finite number, got inf"),
    ("position.theta=.nan", "position.theta", "expected a finite number, got nan"),
    ("position.theta=1e400", "position.theta", "expected a finite number"),
    ("position.scaling.factor=" + "9" * 400, "position.scaling.factor",
     "expected a finite number, got <an integer of"),
])
def test_numbers_out_of_range(override, key, words, run_cli):
    refused(run_cli, "show", "llama-3.2-1b", "--set", override,
            words=(f"overrides: {key}: ", words))


@pytest.mark.parametrize("override", ["vocab_size=10000000000000000000",
                                      "d_model=10000000000000"])
def test_huge_sizes_never_reach_torch(override, run_cli):
    """`show --verify` builds the model: these crashed inside torch."""
    refused(run_cli, "show", "llama-3.2-1b", "--verify", "--set", override,
            words=("overrides: ", "beyond the limit", limits.WHERE))


def test_a_file_names_the_limit(tmp_path, run_cli):
    path = spec_file(tmp_path, GOOD.replace("n_layers: 4", "n_layers: 1000000000000"))
    refused(run_cli, "show", path, words=(f"{path}: n_layers: 1000000000000 is {LIMIT_WORDS}",))


# --- layer overrides ------------------------------------------------------------------------

@pytest.mark.parametrize("select", ["'5:5'", "'10:'", "'2:1'", "[]"])
def test_an_empty_select_is_an_error(select, tmp_path, run_cli):
    path = spec_file(tmp_path, GOOD + f"layers:\n  - select: {select}\n    note: x\n"
                                      f"  - select: '0:1'\n    note: y\n")
    refused(run_cli, "show", path, words=(path, "layers[0].select", "selects no layer",
                                          "0..3"))


def test_the_second_override_is_named(tmp_path, run_cli):
    path = spec_file(tmp_path, GOOD + "layers:\n  - {select: '0:1', note: y}\n"
                                      "  - {select: '4:', note: x}\n")
    refused(run_cli, "show", path, words=(path, "layers[1].select", "selects no layer"))


def test_overrides_that_pick_too_many_layers(run_cli):
    n = limits.INT_LIMITS["n_layers"]
    times = limits.LAYER_PICKS_MAX // n + 1
    value = "[" + ", ".join(["{select: ':', note: x}"] * times) + "]"
    refused(run_cli, "show", "llama-3.2-1b", "--set", f"n_layers={n}", "--set", f"layers={value}",
            words=("overrides: layers: ", f"{limits.LAYER_PICKS_MAX:,} layers"))


def test_too_many_overrides(run_cli):
    value = "[" + ", ".join(["{select: '0', note: x}"] * (limits.LIST_LIMITS["layers"] + 1)) + "]"
    refused(run_cli, "show", "llama-3.2-1b", "--set", f"layers={value}",
            words=("overrides: layers: ", "entries is beyond the limit"))


# --- duplicate keys, sizes, quoting ---------------------------------------------------------

def test_a_duplicate_key_is_refused(tmp_path, run_cli):
    path = spec_file(tmp_path, GOOD + "n_layers: 8\n")
    refused(run_cli, "show", path, words=(f"{path}: n_layers: given twice", "lines 5 and 11"))


def test_a_duplicate_nested_key(tmp_path, run_cli):
    path = spec_file(tmp_path, GOOD.replace("eps: 1e-5}", "eps: 1e-5, eps: 1e-6}"))
    refused(run_cli, "show", path, words=(path, "eps: given twice", "both on line 7"))


def test_a_duplicate_key_in_a_set_value(run_cli):
    refused(run_cli, "show", "llama-3.2-1b", "--set", "attention={kind: gqa, kind: mla}",
            words=("overrides: attention.kind: given twice",))


def test_merge_keys_are_not_duplicates():
    data = parse_yaml("base: &b {x: 1, y: 2}\nc: {<<: *b, y: 3}\n", "merge.yaml")
    assert data["c"] == {"x": 1, "y": 3}


def test_a_file_over_the_size_limit(tmp_path, run_cli):
    path = spec_file(tmp_path, GOOD + "# " + "x" * limits.YAML_BYTES_MAX + "\n")
    refused(run_cli, "show", path, words=(path, "beyond the limit", "1,048,576"))


def test_too_many_nodes_without_aliases(tmp_path, run_cli):
    path = spec_file(tmp_path, GOOD.replace(
        "n_layers: 4", "n_layers: [" + ", ".join(["1"] * (limits.YAML_NODES_MAX + 1)) + "]"))
    refused(run_cli, "show", path, words=(path, "n_layers[", "100,000 YAML nodes"))


@pytest.mark.parametrize("override, key", [
    ("name=[" + ", ".join(["yyyyyyyy"] * 5000) + "]", "name"),
    ("attention.kind=" + "q" * 100_000, "attention.kind"),
    ("norm.eps=" + "z" * 100_000, "norm.eps"),
    ("k" * 100_000 + "=1", "k" * 20),
    ("n_layers={" + ", ".join(f"k{i}: {i}" for i in range(5000)) + "}", "n_layers"),
])
def test_long_values_are_quoted_short(override, key, run_cli):
    refused(run_cli, "show", "llama-3.2-1b", "--set", override, words=("overrides: ", key))


def test_a_model_name_no_file_can_have(run_cli):
    refused(run_cli, "show", "m" * 10_000, words=("unknown model",))


def test_an_extends_chain_over_the_limit(tmp_path, run_cli):
    for i in range(limits.EXTENDS_MAX + 1):
        (tmp_path / f"f{i}.yaml").write_text(f"extends: f{i + 1}\n")
    (tmp_path / f"f{limits.EXTENDS_MAX + 1}.yaml").write_text(GOOD)
    refused(run_cli, "show", str(tmp_path / "f0.yaml"),
            words=("extends: a chain of more than", limits.WHERE))


def test_spec_error_text_is_one_short_line():
    err = SpecError("a\nb " + "x" * 10_000, where="/" + "d" * 1000 + "/f.yaml", key="k" * 1000)
    assert len(str(err)) <= MESSAGE_MAX and "\n" not in str(err)
    assert "/f.yaml" in str(err)  # a long path keeps its tail
    assert quote(10**5000).startswith("<an integer of")
    assert len(quote(list(range(10**5)))) <= 60


# --- the limits admit every real model ------------------------------------------------------

def _int_fields(cls, seen=None) -> set[str]:
    seen = set() if seen is None else seen
    out = set()
    for name, tp in typing.get_type_hints(cls).items():
        args = typing.get_args(tp) or (tp,)
        if any(a is int for a in args) or any(int in typing.get_args(a) for a in args):
            out.add(name)
        for a in args:
            inner = typing.get_args(a) or (a,)
            for b in inner:
                if dataclasses.is_dataclass(b) and b not in seen:
                    seen.add(b)
                    out |= _int_fields(b, seen)
    return out


def test_every_integer_key_has_a_limit():
    missing = _int_fields(ModelSpec) - set(limits.INT_LIMITS)
    assert not missing, f"add these to INT_LIMITS in {limits.WHERE}: {sorted(missing)}"


def _ints(node, key=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _ints(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _ints(v, key)
    elif isinstance(node, int) and not isinstance(node, bool):
        yield key, node


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_is_well_inside_the_limits(name):
    spec = load_spec(name)
    for key, value in _ints(to_mapping(spec)):
        limit = limits.INT_LIMITS.get(key)
        assert limit is None or value * 4 <= limit, (key, value)  # headroom beyond the largest
    assert spec.n_layers * 8 <= limits.INT_LIMITS["n_layers"]
    assert (PRESETS_DIR / f"{name}.yaml").stat().st_size * 100 < limits.YAML_BYTES_MAX


def test_the_claims_files_parse_within_the_limits():
    folder = Path(__file__).resolve().parents[2] / "reports" / "claims"
    files = sorted(folder.glob("*.yaml"))
    for path in files:
        parse_yaml(path.read_text(encoding="utf-8"), str(path))
