"""The FFN kinds added as entries only: geglu (Gemma's MLP) and relu2 (Nemotron-H's MLP).

Each is checked against transformers' own module (same HF names, same weights, fp32), its
analytic parameter and FLOP counts against the built network, its spec rules (the activation
is part of the kind), its HF export, and the reports, which name it without having changed.
"""

from __future__ import annotations

import json

import pytest
import torch

from archscope.errors import SpecError
from archscope.estimate import count_params, prefill_flops
from archscope.nn import build_model, count_parameters
from archscope.nn.ffn import MLP, GatedMLP
from archscope.nn.registry import ffn_module
from archscope.spec import load_spec
from archscope.spec.fields import from_mapping, to_mapping
from archscope.spec.hf import spec_to_hf_config, write_hf_config
from archscope.spec.resolved import differences
from archscope.spec.schema import FFNSpec, ModelSpec
from parity import max_diff, tiny_spec, twins

transformers = pytest.importorskip("transformers")

D, FF = 32, 80
TOL = 1e-6  # one module, fp32
WRONG = 1e-3  # what a wrong activation must at least change


def _spec(kind: str, bias: bool = False, **ffn) -> ModelSpec:
    return tiny_spec(d_model=D, attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=8),
                     ffn=dict(kind=kind, d_ff=FF, bias=bias, **ffn))


def _randomise(module: torch.nn.Module, seed: int = 0) -> None:
    """Weights of std 0.5 (biases too): the activation's nonlinear range is well exercised."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g))


def _x(seed: int = 1) -> torch.Tensor:
    return 2 * torch.randn(3, 7, D, generator=torch.Generator().manual_seed(seed))


def _gemma_mlp():
    from transformers.models.gemma.modeling_gemma import GemmaMLP

    return GemmaMLP(transformers.GemmaConfig(hidden_size=D, intermediate_size=FF,
                                             hidden_act="gelu_pytorch_tanh"))


def _llama_gelu_mlp():
    """LlamaMLP's gated form with Gemma's activation and biases: geglu with ffn.bias."""
    from transformers.models.llama.modeling_llama import LlamaMLP

    return LlamaMLP(transformers.LlamaConfig(hidden_size=D, intermediate_size=FF,
                                             hidden_act="gelu_pytorch_tanh", mlp_bias=True))


def _nemotron_h_mlp(bias: bool):
    from transformers.models.nemotron_h.modeling_nemotron_h import NemotronHMLP

    return NemotronHMLP(transformers.NemotronHConfig(hidden_size=D, intermediate_size=FF,
                                                     mlp_hidden_act="relu2", mlp_bias=bias))


# kind, bias, transformers' module, the same shape with the wrong activation
CASES = {
    "geglu-gemma": ("geglu", False, _gemma_mlp, lambda b: GatedMLP(D, FF, "silu", b)),
    "geglu-bias-llama": ("geglu", True, _llama_gelu_mlp, lambda b: GatedMLP(D, FF, "silu", b)),
    "relu2-nemotron-h": ("relu2", False, lambda: _nemotron_h_mlp(False),
                         lambda b: MLP(D, FF, "relu", b)),
    "relu2-bias": ("relu2", True, lambda: _nemotron_h_mlp(True), lambda b: MLP(D, FF, "relu", b)),
}


def _same_weights(theirs: torch.nn.Module, ours: torch.nn.Module) -> torch.nn.Module:
    ours.load_state_dict(theirs.state_dict(), strict=True)  # same HF names, nothing left over
    return ours.eval()


@pytest.mark.parametrize("case", list(CASES))
def test_parity_with_transformers_module(case):
    kind, bias, hf_factory, wrong_factory = CASES[case]
    spec = _spec(kind, bias)
    hf = hf_factory().float().eval()
    _randomise(hf)
    ours = _same_weights(hf, ffn_module(spec, spec.ffn))
    x = _x()
    with torch.no_grad():
        want = hf(x)
        diff = max_diff(ours(x), want)
        wrong = max_diff(_same_weights(hf, wrong_factory(bias))(x), want)
    print(f"{case}: max abs diff {diff:.3g}; with the wrong activation {wrong:.3g}")
    assert diff < TOL
    assert wrong > WRONG  # the test would see SiLU for GELU-tanh, or ReLU for ReLU²


def test_geglu_model_matches_transformers_llama_with_gemma_activation():
    """The export's claim, end to end: LlamaForCausalLM with hidden_act gelu_pytorch_tanh."""
    spec = tiny_spec(ffn=dict(kind="geglu", d_ff=96))
    hf, ours = twins(spec)
    assert hf.config.hidden_act == "gelu_pytorch_tanh"
    ids = torch.randint(0, spec.vocab_size, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert max_diff(ours(ids), hf(ids).logits) < 1e-4


# --- spec rules: the activation is part of the kind ----------------------------------------

@pytest.mark.parametrize("kind, own", [("geglu", "gelu_tanh"), ("relu2", "relu2")])
def test_activation_defaults_to_the_kinds_own(kind, own):
    spec = _spec(kind)
    assert spec.ffn.activation == own
    assert _spec(kind, activation=own).ffn == spec.ffn  # saying it is allowed, and the same
    assert load_spec("llama-3.2-1b", [f"ffn.kind={kind}", "ffn.activation="]).ffn.activation == own


@pytest.mark.parametrize("kind, other", [("geglu", "silu"), ("geglu", "gelu"),
                                         ("relu2", "relu"), ("relu2", "gelu_tanh")])
def test_another_activation_is_refused_naming_the_key(kind, other):
    with pytest.raises(SpecError) as err:
        _spec(kind, activation=other)
    assert err.value.key == "ffn.activation"
    # a what-if that changes only the kind keeps llama's silu: refused the same way
    with pytest.raises(SpecError) as err:
        load_spec("llama-3.2-1b", [f"ffn.kind={kind}"])
    assert err.value.key == "ffn.activation" and str(err.value).startswith("overrides: ")


def test_an_ungated_squared_relu_is_only_the_relu2_kind():
    with pytest.raises(SpecError) as err:
        _spec("mlp", activation="relu2")
    assert err.value.key == "ffn.activation" and "relu2" in err.value.detail


def test_a_gated_unit_may_square_a_relu():
    """BitNet's MLP: down(relu(gate)^2 * up), the gated form with relu2 (no other spelling)."""
    assert _spec("swiglu", activation="relu2").ffn.activation == "relu2"


def test_existing_kinds_keep_their_defaults():
    assert FFNSpec(kind="swiglu", d_ff=8).activation == "silu"
    assert FFNSpec(kind="mlp", d_ff=8).activation == "silu"
    assert load_spec("llama-3.2-1b").ffn == FFNSpec(kind="swiglu", d_ff=8192, activation="silu")


def test_d_ff_is_required_and_moe_keys_refused():
    with pytest.raises(SpecError) as err:
        from_mapping(FFNSpec, {"kind": "geglu"}, "ffn")
    assert err.value.key == "ffn.d_ff"
    with pytest.raises(SpecError) as err:
        from_mapping(FFNSpec, {"kind": "relu2", "d_ff": 8, "top_k": 2}, "ffn")
    assert err.value.key == "ffn.top_k"


def test_a_layer_override_can_use_a_new_kind():
    spec = tiny_spec(layers=[{"select": "1:", "ffn": {"kind": "relu2", "d_ff": 48}}])
    assert [layer.ffn.kind for layer in spec.plan] == ["swiglu", "relu2"]
    assert spec.plan[1].ffn.activation == "relu2"
    model = build_model(spec, "meta")
    assert count_parameters(model) == count_params(spec).total


# --- exact analytic counts -----------------------------------------------------------------

@pytest.mark.parametrize("kind, bias", [("geglu", False), ("geglu", True),
                                        ("relu2", False), ("relu2", True)])
def test_params_equal_the_meta_build(kind, bias):
    spec = load_spec("llama-3.2-1b", [f"ffn.kind={kind}", "ffn.activation=",
                                      f"ffn.bias={str(bias).lower()}", "n_layers=2"])
    model = build_model(spec, "meta")
    assert count_parameters(model) == count_params(spec).total
    matrices = 3 if kind == "geglu" else 2
    ffn = sum(p.numel() for n, p in model.named_parameters() if ".mlp." in n)
    assert ffn == spec.n_layers * (matrices * spec.d_model * spec.ffn.d_ff + (
        (matrices - 1) * spec.ffn.d_ff + spec.d_model if bias else 0))


@pytest.mark.parametrize("kind", ["geglu", "relu2"])
def test_prefill_flops_equal_the_flop_counter(kind):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    spec = _spec(kind, bias=True)
    model = build_model(spec, "cpu", dtype=torch.float32)
    batch, T = 2, 10
    ids = torch.randint(0, spec.vocab_size, (batch, T))
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
        model(ids)
    expected = prefill_flops(spec, T, batch=batch, attention="full")
    assert fc.get_total_flops() == expected.total
    ffn_macs = (3 if kind == "geglu" else 2) * spec.d_model * spec.ffn.d_ff
    assert expected.by_component["ffn"] == 2 * ffn_macs * batch * T * spec.n_layers


# --- HF export: geglu is a Llama-type config; relu2 has no class -------------------------

def test_geglu_exports_as_llama_and_round_trips(tmp_path):
    spec = load_spec("llama-3.2-1b", ["ffn.kind=geglu", "ffn.activation="])
    config = spec_to_hf_config(spec)
    assert (config["model_type"], config["hidden_act"]) == ("llama", "gelu_pytorch_tanh")
    write_hf_config(spec, tmp_path / "ours")
    transformers.AutoConfig.from_pretrained(tmp_path / "ours").save_pretrained(tmp_path / "hf")
    back = load_spec(tmp_path / "hf")
    assert back.ffn == spec.ffn and not list(differences(spec, back))
    # without archscope's extra key, transformers' config reads back as llama's gated MLP with
    # GELU-tanh: the same network (import is unchanged), under its older name
    bare = {k: v for k, v in config.items() if k != "archscope"}
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "config.json").write_text(json.dumps(bare))
    plain = load_spec(tmp_path / "bare")
    assert (plain.ffn.kind, plain.ffn.activation) == ("swiglu", "gelu_tanh")
    assert not list(differences(spec, plain))


def test_llama_import_is_unchanged(tmp_path):
    write_hf_config(load_spec("llama-3.2-1b"), tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    del config["archscope"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert load_spec(tmp_path).ffn == FFNSpec(kind="swiglu", d_ff=8192, activation="silu")


def test_relu2_export_is_refused_naming_the_kind():
    """Learned positions with a squared-ReLU MLP: no class archscope writes builds it."""
    spec = load_spec("gpt2", ["ffn=", "ffn.kind=relu2", "ffn.d_ff=256"])
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(spec)
    assert err.value.key == "ffn.kind" and "relu2" in err.value.detail


@pytest.mark.parametrize("preset", ["llama-3.2-1b", "mixtral-8x7b"])
def test_relu2_after_rope_attention_exports_as_arcee(preset, tmp_path):
    """Llama's attention with a squared-ReLU MLP is Arcee's class (AFM-4.5B)."""
    spec = load_spec(preset, ["ffn=", "ffn.kind=relu2", "ffn.d_ff=256"])
    write_hf_config(spec, tmp_path / "ours")
    config = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert config["model_type"] == "arcee"
    transformers.AutoConfig.from_pretrained(tmp_path / "ours").save_pretrained(tmp_path / "hf")
    assert not list(differences(spec, load_spec(tmp_path / "hf")))


def test_relu2_in_some_layers_is_refused_naming_layers():
    mixed = tiny_spec(layers=[{"select": "1:", "ffn": {"kind": "relu2", "d_ff": 48}}])
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(mixed)
    assert err.value.key == "layers" and "layer 1" in err.value.detail


# --- the reports name the kinds, unchanged ------------------------------------------------

# per kind: what `show` and wording say, the diagram's FFN title and activation node, the
# comparison table's type cell
NAMES = {"geglu": ("GeGLU", "GeGLU MLP", "GELU (tanh)", "GeGLU"),
         "relu2": ("squared ReLU", "squared-ReLU MLP", "squared ReLU", "squared-ReLU MLP")}


def _yaml(tmp_path, kind: str):
    path = tmp_path / f"tiny-{kind}.yaml"
    path.write_text(f"extends: llama-3.2-1b\nname: tiny-{kind}\nn_layers: 2\n"
                    f"ffn: {{kind: {kind}, d_ff: 512}}\n")
    return path


@pytest.mark.parametrize("kind", ["geglu", "relu2"])
def test_show_and_compare_name_the_kind(kind, tmp_path, run_cli):
    path = _yaml(tmp_path, kind)
    spec = load_spec(path)
    assert spec.ffn == FFNSpec(kind=kind, d_ff=512)
    code, out, err = run_cli("show", str(path), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["spec"]["ffn"] == to_mapping(spec.ffn)
    assert data["params_total"] == count_params(spec).total
    code, out, err = run_cli("show", str(path))
    assert code == 0, err
    assert NAMES[kind][0] in out
    code, out, err = run_cli("compare", str(path), "llama-3.2-1b", "--format", "json")
    assert code == 0, err
    rows = {r["model"]: r for r in json.loads(out)}
    assert rows[f"tiny-{kind}"]["params_total"] == count_params(spec).total


@pytest.mark.parametrize("kind", ["geglu", "relu2"])
def test_report_code_renders_the_kind(kind):
    from archscope.report import wording
    from archscope.report.pages.comparison_arch import ffn as ffn_table
    from archscope.report.diagrams.mermaid import block_diagram
    from archscope.report.records import architecture_record

    spec = _spec(kind)
    name, title, act, cell = NAMES[kind]
    diagram = block_diagram(spec, spec.plan[0])
    assert title in diagram and act in diagram
    assert name in wording.ffn(spec.ffn, spec.d_model)
    assert cell in ffn_table([architecture_record(spec)])


def test_claims_name_the_kind():
    from archscope.claims.quantities.categories import ffn_type

    assert {"geglu", "gelu"} <= ffn_type(_spec("geglu")).parts
    assert {"mlp", "relu2", "squared relu"} <= ffn_type(_spec("relu2")).parts
