"""DESIGN section 6: each bad spec gets a clear message naming file and key, exit code 2."""

import textwrap

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.fields import to_mapping

GOOD = textwrap.dedent("""\
    name: tiny
    source: test
    vocab_size: 100
    d_model: 64
    n_layers: 2
    max_seq_len: 128
    norm: {kind: rmsnorm, eps: 1e-5}
    position: {kind: rope, theta: 10000.0}
    attention: {kind: gqa, n_heads: 4, n_kv_heads: 2, head_dim: 16}
    ffn: {kind: swiglu, d_ff: 128}
""")

MOE_FFN = "ffn: {kind: moe, n_experts: 4, top_k: 2, d_expert: 32}"

CASES = {
    # id: (text replacement of GOOD, expected key in message, expected words)
    "wrong-type": (("n_layers: 2", "n_layers: two"), "n_layers", "expected an integer"),
    "bool-is-not-int": (("n_layers: 2", "n_layers: true"), "n_layers", "expected an integer"),
    "missing-key": (("d_model: 64\n", ""), "d_model", "missing required key"),
    "unknown-key": (("n_layers: 2", "n_layer: 2"), "n_layer", "did you mean 'n_layers'"),
    "unknown-nested-key": (("head_dim: 16", "head_dims: 16"), "attention.head_dims",
                           "did you mean 'head_dim'"),
    "unknown-kind": (("kind: gqa", "kind: gqaa"), "attention.kind", "expected one of gqa, mla"),
    "heads-do-not-divide": (("n_kv_heads: 2", "n_kv_heads: 3"), "attention.n_kv_heads",
                            "must be a multiple"),
    "window-beyond-context": (("head_dim: 16}", "head_dim: 16, window: 4096}"),
                              "attention.window", "larger than the context"),
    "top-k-beyond-experts": (("ffn: {kind: swiglu, d_ff: 128}",
                              MOE_FFN.replace("top_k: 2", "top_k: 8")), "ffn.top_k",
                             "cannot exceed n_experts"),
    "negative-size": (("d_model: 64", "d_model: -64"), "d_model", "must be positive"),
    "moe-key-on-dense": (("d_ff: 128}", "d_ff: 128, n_experts: 4}"), "ffn.n_experts",
                         "only applies when kind is 'moe'"),
    "expert-on-dense": (("d_ff: 128}", "d_ff: 128, expert: relu2}"), "ffn.expert",
                        "only applies when kind is 'moe'"),
    "relu2-expert-with-silu": (("ffn: {kind: swiglu, d_ff: 128}", MOE_FFN.replace(
        "}", ", expert: relu2, activation: silu}")), "ffn.activation", "defined by its relu2"),
    "limit-on-ungated-experts": (("ffn: {kind: swiglu, d_ff: 128}", MOE_FFN.replace(
        "}", ", expert: mlp, limit: 7.0}")), "ffn.limit", "has no gate"),
    "latent-on-dense": (("d_ff: 128}", "d_ff: 128, d_latent: 16}"), "ffn.d_latent",
                        "only applies when kind is 'moe'"),
    "unknown-qk-norm": (("head_dim: 16}", "head_dim: 16, qk_norm: per_channel}"),
                        "attention.qk_norm", "expected one of head, per_head, full"),
    "unknown-norm-position": (("eps: 1e-5}", "eps: 1e-5, position: peri}"),
                              "norm.position", "expected one of pre, post, output, sandwich"),
    "bad-layer-select": (("ffn: {kind: swiglu, d_ff: 128}",
                          "ffn: {kind: swiglu, d_ff: 128}\nlayers: [{select: '7', note: x}]"),
                         "layers[0].select", "outside 0..1"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_bad_spec_exits_2_with_file_and_key(case, tmp_path, run_cli):
    (old, new), key, words = CASES[case]
    assert old in GOOD
    path = tmp_path / "tiny.yaml"
    path.write_text(GOOD.replace(old, new))
    code, out, err = run_cli("show", str(path), "--format", "json")
    assert code == 2
    assert out == ""
    assert str(path) in err and key in err and words in err, err
    assert "Traceback" not in err


def test_good_spec_loads(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(GOOD)
    spec = load_spec(path)
    assert spec.norm.eps == 1e-5 and isinstance(spec.norm.eps, float)  # `1e-5` is a number
    assert len(spec.plan) == 2


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n", "", "a: [unclosed\n"])
def test_yaml_that_is_not_a_mapping(text, tmp_path, run_cli):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, _, err = run_cli("show", str(path))
    assert code == 2 and str(path) in err and "Traceback" not in err


def test_extends_and_overrides(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text(GOOD)
    child = tmp_path / "child.yaml"
    child.write_text("extends: base\nname: child\nattention: {window: 8}\n")
    spec = load_spec(child, ["n_layers=4", "attention.n_kv_heads=4"])
    assert (spec.name, spec.n_layers, spec.attention.window) == ("child", 4, 8)
    assert spec.attention.n_kv_heads == 4 and spec.attention.head_dim == 16
    assert spec.extends == "base"


def test_extends_cycle(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b\n")
    (tmp_path / "b.yaml").write_text("extends: a\n")
    with pytest.raises(SpecError, match="cycle"):
        load_spec(tmp_path / "a.yaml")


@pytest.mark.parametrize("override, words", [
    ("attention.n_kv_heads=5", "must be a multiple"),
    ("attention.n_kv_head=4", "did you mean 'n_kv_heads'"),
    ("n_layers=two", "expected an integer"),
    ("n_layers", "expected key=value"),
    ("n_layers.x=1", "is not a mapping"),
])
def test_bad_set(override, words, run_cli):
    code, _, err = run_cli("show", "llama-3.2-1b", "--set", override)
    assert code == 2 and "overrides: " in err and words in err and "Traceback" not in err


def test_unknown_model_suggests_a_preset(run_cli):
    code, _, err = run_cli("show", "lama-3.2-1b")
    assert code == 2 and "did you mean 'llama-3.2-1b'" in err


def test_layer_overrides_make_the_plan(tmp_path):
    path = tmp_path / "moe.yaml"
    path.write_text(GOOD.replace("ffn: {kind: swiglu, d_ff: 128}", MOE_FFN)
                    + "layers:\n  - select: '0:1'\n    ffn: {kind: swiglu, d_ff: 96}\n"
                    + "  - select: [1]\n    attention: {window: 16}\n    note: local\n")
    spec = load_spec(path)
    assert [layer.ffn.kind for layer in spec.plan] == ["swiglu", "moe"]
    assert spec.plan[0].ffn.d_ff == 96
    assert [layer.window for layer in spec.plan] == [None, 16]
    assert spec.plan[1].note == "local" and spec.plan[1].attention.n_heads == 4


@pytest.mark.parametrize("name", ["llama-3.2-1b", "mixtral-8x7b", "nemotron-h-4b"])
def test_a_plan_without_overrides_is_the_plan_an_empty_override_builds(name):
    """A spec without `layers` takes a short path to its plan (a sweep's variants); a `layers`
    entry that patches nothing (a note on layer 0) takes the general one: the same layers.
    Nemotron-H without its overrides: every layer its Mamba-2 mixer (the state-mixer path)."""
    spec = load_spec(name).replace(layers=())
    noted = spec.replace(layers=({"select": [0], "note": "x"},))
    assert not spec.layers and noted.layers and len(spec.plan) == spec.n_layers
    for short, general in zip(spec.plan, noted.plan, strict=True):
        assert (short.index, short.attention, short.state, short.ffn, short.position) == \
            (general.index, general.attention, general.state, general.ffn, general.position)
    assert spec.distinct_layers == ((spec.plan[0], spec.n_layers),)


def test_what_if_round_trips_through_validation():
    spec = load_spec("llama-3.2-1b")
    assert spec.replace(n_layers=2).n_layers == 2
    with pytest.raises(SpecError):
        spec.replace(n_layers=0)


# Arbitrary YAML scalars, lists and mappings under real and made-up keys: the loader may only
# ever raise SpecError (or succeed), never KeyError/TypeError/AttributeError.
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**12),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["kind", "n_heads", "eps", "d_ff", "select", "x"]), inner,
                    max_size=3)), max_leaves=6)
base_mapping = to_mapping(load_spec("llama-3.2-1b"))
keys = st.sampled_from(sorted(base_mapping) + ["norm.eps", "attention.n_kv_heads",
                                               "attention.kind", "ffn.kind", "ffn.top_k",
                                               "position.scaling", "layers", "multipliers",
                                               "bogus", "attention.window"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.dictionaries(keys, values, max_size=4), whole=st.booleans())
def test_loader_only_raises_spec_error(changes, whole, tmp_path_factory):
    import copy

    data = {} if whole else copy.deepcopy(base_mapping)
    for dotted, value in changes.items():
        node = data
        *parents, leaf = dotted.split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[leaf] = value
    path = tmp_path_factory.mktemp("fuzz") / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    try:
        load_spec(path)
    except SpecError as err:
        assert str(path) in str(err)


@settings(max_examples=150, deadline=None)
@given(doc=st.one_of(scalars, st.lists(scalars, max_size=3)))
def test_any_yaml_document_is_spec_error_or_spec(doc, tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "doc.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError):
        load_spec(path)
