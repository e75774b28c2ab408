"""Phi-3/Phi-4 (Llama with q, k, v in one qkv_proj and gate, up in one gate_up_proj) against
transformers' own Phi3ForCausalLM, beyond the conformance cases' parity (with and without a
window, heads wider than d_model / n_heads): the fused tensors are archscope's too, the same
weights in the wrong fused order are far off (so the parity checks the split order), the phi-4
preset's parameters and breakdown on the meta device, and a cut-down phi-4 written by
make-checkpoint that transformers loads and `generate` runs.
"""

import pytest
import torch
import transformers

from archscope.spec.hf import spec_to_hf_config
from parity import checked_preset, load_same_weights, max_diff, tiny_spec, twin_case

TOL = 1e-4
T = 20

_FUSED = dict(ffn=dict(kind="swiglu", d_ff=96, fused_gate_up=True))
FAMILIES = {  # GQA (so the k and v slices of qkv_proj are narrower than q's)
    "phi3": dict(attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16,
                                fused_qkv=True), **_FUSED),
    # Phi-3-mini-4k's shape of difference: a window on every layer (here 6 of 20 tokens), and
    # heads wider than d_model / n_heads (head_dim given in config.json, as Phi3Attention reads)
    "phi3-window": dict(attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=24,
                                       window=6, fused_qkv=True), **_FUSED),
}


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request):
    return twin_case(tiny_spec(**FAMILIES[request.param]), T)


def test_transformers_builds_phi3_with_the_fused_tensors(family):
    spec, hf, ours, _, _ = family
    assert type(hf).__name__ == "Phi3ForCausalLM"
    names = set(ours.state_dict())
    assert {"layers.0.self_attn.qkv_proj.weight", "layers.0.mlp.gate_up_proj.weight"} <= names
    assert not any(n.endswith((".q_proj.weight", ".gate_proj.weight", ".up_proj.weight"))
                   for n in names)


def _halves_swapped(t: torch.Tensor, first: int) -> torch.Tensor:
    return torch.cat([t[first:], t[:first]])


@pytest.mark.parametrize("wrong", ["up-then-gate", "q-v-k"])
def test_a_wrong_split_order_breaks_parity(family, wrong):
    """The same weights stacked in another order (up rows first; v before k): far off, so the
    parity above checks the order in which the fused tensors are split."""
    spec, hf, _, ids, reference = family
    d_ff, a = spec.ffn.d_ff, spec.attention
    q, kv = a.n_heads * a.head_dim, a.n_kv_heads * a.head_dim
    ours = load_same_weights(spec, hf, "phi3")
    state = ours.state_dict()
    for i in range(spec.n_layers):
        if wrong == "up-then-gate":
            key = f"layers.{i}.mlp.gate_up_proj.weight"
            state[key] = _halves_swapped(state[key], d_ff)
        else:
            key = f"layers.{i}.self_attn.qkv_proj.weight"
            w = state[key]
            state[key] = torch.cat([w[:q], w[q + kv:], w[q:q + kv]])
    ours.load_state_dict(state, strict=True)
    with torch.no_grad():
        assert max_diff(ours(ids), reference) > 1e-3


def test_phi4_params_on_meta_equal_transformers_and_the_estimate():
    spec, p, theirs = checked_preset("phi-4", "Phi3ForCausalLM")
    assert spec_to_hf_config(spec)["architectures"] == ["Phi3ForCausalLM"]
    assert p.total == p.active == 14_659_507_200  # "14B" on the card
    # the breakdown names the checkpoint's tensors, with their sizes
    shapes = {n: x.shape for n, x in theirs.named_parameters()}
    breakdown = p.breakdown
    for part, hf in (("attention.qkv_proj", "self_attn.qkv_proj"),
                     ("ffn.gate_up_proj", "mlp.gate_up_proj")):
        assert breakdown[part] == spec.n_layers * shapes[f"model.layers.0.{hf}.weight"].numel()
    assert not any(k.endswith((".q_proj", ".k_proj", ".v_proj", ".gate_proj", ".up_proj"))
                   for k in breakdown)


def test_make_checkpoint_then_transformers_and_generate(run_cli, tmp_path):
    """A cut-down phi-4 written by make-checkpoint: transformers loads the fused tensors as its
    own (same logits as archscope's model of the folder), and `generate` runs on it."""
    from archscope.weights import load_checkpoint

    folder = tmp_path / "phi"
    sets = ["n_layers=1", "vocab_size=512", "d_model=64", "attention.n_heads=4",
            "attention.n_kv_heads=1", "attention.head_dim=16", "ffn.d_ff=96"]
    code, _, err = run_cli("make-checkpoint", "phi-4", "--weights", str(folder), "--dtype",
                           "fp32", *[a for s in sets for a in ("--set", s)])
    assert code == 0, err
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    assert type(hf).__name__ == "Phi3ForCausalLM"
    ours, _ = load_checkpoint(folder)
    ids = torch.randint(0, 512, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert max_diff(ours(ids), hf(ids).logits) < TOL
    code, out, err = run_cli("generate", "--weights", str(folder), "--device", "cpu",
                             "--new-tokens", "4", "Hello")
    assert code == 0, err
    assert "phi-4 on cpu" in err and "4 new" in err
