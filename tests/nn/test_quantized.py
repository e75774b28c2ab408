"""Weight-only int8 / int4 linears (archscope.nn.quantized): close to the 16-bit layer by the
size of one quantization step, the bytes the format's estimate prices, and exactly the tensors
estimate/formats.py quantizes replaced."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from archscope.errors import InputError
from archscope.estimate.formats import weight_format, weights_in_format
from archscope.estimate.tensors import weight_tensors
from archscope.nn import build_model
from archscope.measure.quantize import linear_roles, quantize_linears
from archscope.nn.quantized import GROUP, QuantizedLinear, held_weight_bytes
from parity import tiny_spec

# Relative RMS error of y = x W^T from rounding W alone. A Gaussian row spans about +-3.5
# sigma: int8's step is 7 sigma / 254 and int4's 5-6 sigma / 15 per group of 128 (the range
# holds 0), and a rounding error is uniform over a step (rms = step / sqrt(12)): about 0.008
# and 0.11 of the output's rms. The bounds leave room for that spread and bf16 rounding.
REL_RMS = {"int8": 0.02, "int4-g128": 0.2}


def _rel_rms(a: torch.Tensor, b: torch.Tensor) -> float:
    """RMS of a - b, each output row measured against b's RMS in that row."""
    a, b = a.float(), b.float()
    return ((a - b) / b.pow(2).mean(-1, keepdim=True).sqrt()).pow(2).mean().sqrt().item()


@pytest.mark.parametrize("fmt", ["int8", "int4-g128"])  # the kernels' names
@pytest.mark.parametrize("in_features", [256, 96 + 128])  # 224: int4 pads to two groups
def test_a_quantized_linear_is_within_one_rounding_step(fmt, in_features):
    """Rows and groups of inputs 100x apart in scale: a scale applied to the wrong row or
    group (a layout error) shows as an error the size of the output (measured: 1.5-2.0)."""
    torch.manual_seed(0)
    linear = nn.Linear(in_features, 48, bias=True).to(torch.bfloat16)
    rows = torch.logspace(-1, 1, 48)[:, None]
    groups = torch.logspace(-1, 1, -(-in_features // GROUP)).repeat_interleave(GROUP)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(48, in_features) * rows * groups[:in_features])
    x = torch.randn(2, 3, in_features, dtype=torch.bfloat16)  # batch dims are kept
    q = QuantizedLinear.from_linear(linear, fmt)
    y, ref = q(x), torch.nn.functional.linear(x.float(), linear.weight.float(),
                                               linear.bias.float())
    assert y.shape == (2, 3, 48) and y.dtype == torch.bfloat16
    assert _rel_rms(y, ref) < REL_RMS[fmt]


def test_random_layers_for_kernel_probes():
    q = QuantizedLinear.random(64, 512, "int4-g128")
    assert (q.out_features, q.in_features, q.format) == (64, 512, "int4-g128")
    assert q(torch.randn(4, 512, dtype=torch.bfloat16)).shape == (4, 64)
    # the packed weight is 4 bits per weight; scale and offset 2 x 16 bits per group
    assert q.nbytes == 64 * 512 // 2 + 64 * (512 // GROUP) * 4


def _spec(**changes):
    return tiny_spec(**{"d_model": 128, "ffn": dict(kind="swiglu", d_ff=224), **changes})


@pytest.mark.parametrize("fmt", ["int8", "int4-g128"])
def test_a_quantized_model_stays_close_to_bf16(fmt):
    model = build_model(_spec(), "cpu", torch.bfloat16, seed=0)
    ids = torch.randint(0, 97, (2, 12), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        ref = model(ids)
        quantize_linears(model, fmt)
        out = model(ids)
    # two layers of per-linear errors (REL_RMS) compound to about twice one layer's
    assert _rel_rms(out, ref) < 2 * REL_RMS[fmt]


@pytest.mark.parametrize("fmt", ["int8", "int4", "int4-g128"])
@pytest.mark.parametrize("changes", [{}, {"tie_embeddings": True}])
def test_bytes_held_are_the_formats_estimate(fmt, changes):
    """int8 holds exactly what formats.py prices; the int4 kernels hold a 16-bit offset where
    the format stores a 4-bit zero: 12 bits more per group of 128, and nothing else."""
    spec = _spec(**changes)
    model = build_model(spec, "cpu", torch.bfloat16, seed=0)
    quantize_linears(model, fmt)
    estimate = weights_in_format(spec, fmt).total_bytes
    f = weight_format(fmt)
    groups = sum(t.rows * -(-t.cols // GROUP) * t.copies for t in weight_tensors(spec)
                 if f.quantizes(t))
    extra = groups * 12 // 8 if f.name == "int4-g128" else 0
    assert held_weight_bytes(model) == estimate + extra


@pytest.mark.parametrize("changes", [{}, {"tie_embeddings": True}])
def test_exactly_the_tensors_the_format_quantizes_are_replaced(changes):
    spec = _spec(**changes)
    model = build_model(spec, "cpu", torch.bfloat16, seed=0)
    roles = linear_roles(model)
    done = quantize_linears(model, "int8")
    f = weight_format("int8")
    expected = {n for n, t in roles.items() if not isinstance(t, str) and f.quantizes(t)}
    assert set(done.quantized) == expected
    assert {n for n, m in model.named_modules() if isinstance(m, QuantizedLinear)} == expected
    # what formats.py keeps (embedding, lm_head, norms) is still 16-bit
    kept = {n for n, m in model.named_modules() if isinstance(m, (nn.Linear, nn.Embedding))}
    assert "embed_tokens" in kept and "lm_head" in kept
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())
    assert len(expected) == 7 * spec.n_layers  # q k v o gate up down


def test_a_fused_linear_takes_the_role_of_its_neighbours():
    """A q/k/v fusion made after the build (plain nn.Linear, a name the estimate lacks) is
    quantized as the attention it holds, with the same bytes."""
    spec = _spec()
    model = build_model(spec, "cpu", torch.bfloat16, seed=0)
    attn = model.layers[0].self_attn
    fused = nn.Linear(128, 64 + 2 * 32, bias=False).to(torch.bfloat16)
    attn.fused_qkv_for_test = fused
    del attn.q_proj, attn.k_proj, attn.v_proj  # as a fusion pass would leave it
    assert linear_roles(model)["layers.0.self_attn.fused_qkv_for_test"] == "attention"
    done = quantize_linears(model, "int8")
    assert "layers.0.self_attn.fused_qkv_for_test" in done.quantized
    assert held_weight_bytes(model) == weights_in_format(spec, "int8").total_bytes


def test_out_features_the_int4_kernel_cannot_take_stay_16bit():
    spec = _spec(attention=dict(kind="gqa", n_heads=4, n_kv_heads=1, head_dim=8))  # k, v: 8
    model = build_model(spec, "cpu", torch.bfloat16, seed=0)
    done = quantize_linears(model, "int4")
    assert set(done.left_16bit) == {f"layers.{i}.self_attn.{p}_proj" for i in range(2)
                                    for p in "kv"}
    assert "multiple of 16" in done.left_16bit["layers.0.self_attn.k_proj"]
    assert isinstance(model.layers[0].self_attn.k_proj, nn.Linear)
    with torch.inference_mode():
        assert model(torch.tensor([[1, 2, 3]])).isfinite().all()


@pytest.mark.parametrize("fmt", ["fp8", "nvfp4", "q4_k_m", "bf16"])
def test_formats_without_a_kernel_are_refused(fmt):
    model = build_model(_spec(), "meta")
    with pytest.raises(InputError, match="int8, int4-g128"):
        quantize_linears(model, fmt)


def test_routed_experts_are_refused_before_anything_changes():
    spec = _spec(ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=32))
    model = build_model(spec, "cpu", torch.bfloat16, seed=0)
    with pytest.raises(InputError, match="experts"):
        quantize_linears(model, "int8")
    assert not any(isinstance(m, QuantizedLinear) for m in model.modules())


def test_int8_without_the_packed_kernel_dequantises_to_the_same_result():
    """The path a device without aten._weight_int8pack_mm takes (run here on CPU)."""
    torch.manual_seed(0)
    q = QuantizedLinear.random(48, 256, "int8")
    x = torch.randn(5, 256, dtype=torch.bfloat16)
    packed = q(x)
    q.packed_kernel = False
    assert _rel_rms(q(x), packed) < 0.01  # two bf16 roundings apart
