"""archscope.nn.linear: the kernel each product runs is the one measured fastest at its shape
(F.linear where nothing was measured), every kernel gives F.linear's outputs to fp32 rounding
(a packed copy its plain kernel's bit for bit), FlopCounterMode counts them alike, compiled
code runs them, and packing is refused on a CPU that cannot pack."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from archscope.nn import build_model
from archscope.nn import linear as kernels_module
from archscope.nn.linear import (Linear, choose, chosen, linear, pack_weights, packed_bytes,
                                 packing_unavailable, rows_bucket)
from archscope.spec import load_spec, preset_names
from parity import tiny_spec

needs_onednn = pytest.mark.skipif(not torch.backends.mkldnn.is_available(),
                                  reason="this torch has no oneDNN")
needs_packing = pytest.mark.skipif(packing_unavailable() is not None,
                                   reason=f"no packed bf16 weights here: {packing_unavailable()}")


def weights(rows: int, cols: int, bias: bool = True):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(rows, cols, generator=g) / cols ** 0.5
    return w, (torch.randn(rows, generator=g) if bias else None)


def choose_for_model(model: nn.Module, rows: int, kernel: str) -> None:
    """Record `kernel` for every Linear's shape of `model` at `rows` rows."""
    for m in model.modules():
        if isinstance(m, Linear):
            choose(m.weight.dtype, rows, *m.weight.shape, kernel)


def test_rows_share_a_choice_by_power_of_two():
    assert [rows_bucket(r) for r in (0, 1, 2, 3, 4, 5, 100, 128, 129)] == [
        1, 1, 2, 4, 4, 8, 128, 128, 256]


@needs_onednn
@pytest.mark.parametrize("x_shape", [(1, 1024), (2, 3, 1024), "transposed"])
def test_a_product_chosen_for_onednn_runs_it_with_f_linears_outputs(x_shape):
    w, b = weights(256, 1024)
    x = (torch.randn(2, 1024, 3).transpose(1, 2) if x_shape == "transposed"
         else torch.randn(x_shape))
    rows = x.numel() // 1024
    choose(torch.float32, rows, 256, 1024, "onednn")
    with torch.inference_mode():
        assert chosen(x, w) == "onednn"
        with FlopCounterMode(display=False) as counter:
            got = linear(x, w, b)
        expected = F.linear(x, w, b)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)  # summed in another order
    assert counter.get_total_flops() == 2 * x[..., 0].numel() * w.numel()  # as F.linear's
    assert torch.ops.archscope.onednn_linear in counter.get_flop_counts()["Global"]


def test_nothing_chosen_runs_f_linear_and_a_choice_holds_only_where_it_was_made():
    w, _ = weights(256, 1024)
    x = torch.randn(4, 1024)
    with torch.inference_mode():
        assert chosen(x, w) == "aten"  # nothing measured: F.linear, assumed for nothing
        choose(torch.float32, 4, 256, 1024, "onednn")
        assert chosen(x, w) == "onednn" and chosen(x[:3], w) == "onednn"  # one bucket
        assert chosen(x[:1], w) == "aten"  # another bucket: a decode row was not timed
        assert chosen(x[:, :512], w[:, :512]) == "aten"  # another shape
        assert chosen(x.bfloat16(), w.bfloat16()) == "aten"  # another dtype
    assert torch.is_grad_enabled() and chosen(x, w) == "aten"  # training: autograd
    with pytest.raises(ValueError, match="unknown linear kernel"):
        choose(torch.float32, 1, 2, 2, "mkl")


@needs_onednn
def test_gradients_flow_where_onednn_was_chosen():
    layer = Linear(1024, 256)
    choose(torch.float32, 4, 256, 1024, "onednn")
    x = torch.randn(4, 1024)
    layer(x).square().sum().backward()  # autograd on: F.linear, oneDNN's op has no backward
    reference = nn.Linear(1024, 256)
    reference.load_state_dict(layer.state_dict())
    reference(x).square().sum().backward()
    torch.testing.assert_close(layer.weight.grad, reference.weight.grad)


@needs_onednn
def test_a_compiled_function_runs_the_chosen_kernel():
    w, b = weights(256, 1024)
    x = torch.randn(2, 1, 1024)
    choose(torch.float32, 2, 256, 1024, "onednn")
    graphs = []

    def recording(gm, example_inputs):
        graphs.append(str(gm.graph))
        return gm.forward

    step = torch.compile(lambda x: torch.relu(linear(x, w, b)) * 2, backend=recording,
                         fullgraph=True)
    with torch.inference_mode():
        torch.testing.assert_close(step(x), torch.relu(F.linear(x, w, b)) * 2, rtol=1e-5,
                                   atol=1e-5)
    assert "archscope.onednn_linear" in graphs[0]


def test_every_linear_of_every_preset_is_archscopes():
    for name in preset_names():
        model = build_model(load_spec(name), device="meta")
        kinds = {type(m) for m in model.modules() if isinstance(m, nn.Linear)}
        assert kinds == {Linear}, (name, kinds)


@needs_onednn
def test_a_built_model_runs_what_was_chosen_and_gives_f_linears_logits():
    spec = tiny_spec(d_model=256, n_layers=1, vocab_size=512,
                     attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=64),
                     ffn=dict(kind="swiglu", d_ff=512))
    torch.manual_seed(0)
    model = build_model(spec, torch.device("cpu"), torch.float32)
    ids = torch.randint(0, spec.vocab_size, (1, 4))
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        plain = model(ids)
    assert torch.ops.archscope.onednn_linear not in counter.get_flop_counts()["Global"]
    choose_for_model(model, 4, "onednn")
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        fast = model(ids)
    counts = counter.get_flop_counts()["Global"]
    assert counts[torch.ops.archscope.onednn_linear] > 0
    assert not {torch.ops.aten.mm, torch.ops.aten.addmm} & set(counts)  # none on F.linear
    torch.testing.assert_close(fast, plain, rtol=1e-4, atol=1e-4)


@needs_packing
def test_packed_bf16_weights_give_the_same_logits_bit_for_bit_and_change_no_count():
    spec = tiny_spec()
    torch.manual_seed(0)
    model = build_model(spec, torch.device("cpu"), torch.bfloat16)
    ids = torch.randint(0, spec.vocab_size, (2, 5))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    params = sum(p.numel() for p in model.parameters())
    with torch.inference_mode():
        plain = model(ids)
    linears = [m for m in model.modules() if isinstance(m, Linear)]
    assert packed_bytes(model) == sum(m.weight.nbytes for m in linears)
    assert pack_weights(model) == len(linears) > 0
    assert all(m.packed.is_mkldnn for m in linears)
    choose_for_model(model, 10, "packed")
    choose_for_model(model, 2, "packed")  # the head sees the last positions only
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        packed = model(ids)
    assert torch.equal(packed, plain)  # the same kernel's arithmetic, another memory layout
    counts = counter.get_flop_counts()["Global"]
    assert counts[torch.ops.archscope.onednn_linear] > 0  # every linear on the packed copy
    assert not {torch.ops.aten.mm, torch.ops.aten.addmm} & set(counts)
    # the checkpoint's tensors and every count are the weights', as before
    assert model.state_dict().keys() == state.keys()
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    assert sum(p.numel() for p in model.parameters()) == params


@needs_packing
def test_a_packed_copy_runs_only_where_the_packed_kernel_was_chosen():
    torch.manual_seed(0)
    layer = Linear(64, 32).bfloat16()
    pack_weights(layer)
    x = torch.randn(3, 64, dtype=torch.bfloat16)
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        layer(x)
    assert torch.ops.archscope.onednn_linear not in counter.get_flop_counts()["Global"]
    choose(torch.bfloat16, 3, 32, 64, "packed")
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        layer(x)
    assert torch.ops.archscope.onednn_linear in counter.get_flop_counts()["Global"]


@needs_packing
def test_packing_takes_only_bf16_cpu_weights_and_training_keeps_the_plain_ones():
    torch.manual_seed(0)
    fp32, bf16 = Linear(64, 32), Linear(64, 32).bfloat16()
    assert pack_weights(nn.Sequential(fp32, bf16)) == 1
    assert fp32.packed is None and bf16.packed is not None
    choose(torch.bfloat16, 3, 32, 64, "packed")
    x = torch.randn(3, 64, dtype=torch.bfloat16, requires_grad=True)
    bf16(x).sum().backward()  # with autograd: F.linear on the weight itself
    assert bf16.weight.grad is not None and x.grad is not None
    assert pack_weights(bf16) == 1 and bf16.packed is not None  # the copy kept, not redone


@needs_packing
def test_compiled_code_runs_the_packed_copy_and_an_eager_call_sees_a_write():
    torch.manual_seed(0)
    layer = Linear(64, 32).bfloat16()
    pack_weights(layer)
    choose(torch.bfloat16, 3, 32, 64, "packed")
    graphs = []

    def recording(gm, example_inputs):  # a torch.compile backend keeping each traced graph
        graphs.append(str(gm.graph))
        return gm.forward

    step = torch.compile(lambda x: layer(x) * 2, backend=recording, fullgraph=True)
    x = torch.randn(3, 64, dtype=torch.bfloat16)
    with torch.inference_mode():
        assert torch.equal(step(x), F.linear(x, layer.weight, layer.bias) * 2)
    assert len(graphs) == 1 and "archscope.onednn_linear" in graphs[0]
    with torch.no_grad():
        layer.weight.mul_(2)  # a write after compiling: compiled code cannot see the version
    with torch.inference_mode():
        layer(x)  # an eager call (a prefill) drops the stale copy...
        # ...and the step is traced again, on the weight itself
        assert torch.equal(step(x), F.linear(x, layer.weight, layer.bias) * 2)
    assert layer.packed is None and len(graphs) == 2
    assert "archscope.onednn_linear" not in graphs[1]


@needs_packing
def test_a_weight_written_after_packing_drops_its_packed_copy():
    torch.manual_seed(0)
    layer = Linear(64, 32).bfloat16()
    pack_weights(layer)
    choose(torch.bfloat16, 3, 32, 64, "packed")
    with torch.no_grad():
        layer.weight.mul_(2)  # as loading a checkpoint into it does
    x = torch.randn(3, 64, dtype=torch.bfloat16)
    with torch.inference_mode():
        got = layer(x)
    assert layer.packed is None
    assert torch.equal(got, F.linear(x, layer.weight, layer.bias))


def test_the_probe_names_what_the_cpu_lacks_when_the_reorder_refuses(monkeypatch):
    """What torch 2.13 raises on a CPU without AVX-512 or AVX-NE-CONVERT (issue 35's AMD
    EPYC), raised here by a stand-in for the reorder."""
    def refuse(weight, batch):
        raise RuntimeError("mkldnn_reorder_linear_weight: bf16 path needs the cpu support "
                           "avx_ne_convert or avx512bw, avx512vl and avx512dq")

    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.ops.mkldnn, "_reorder_linear_weight", refuse)
    packing_unavailable.cache_clear()
    try:
        why = packing_unavailable()
    finally:
        packing_unavailable.cache_clear()
    assert why is not None and "AVX-512 (BW, VL and DQ) or AVX-NE-CONVERT" in why


def test_where_the_probe_says_no_nothing_is_packed(monkeypatch):
    monkeypatch.setattr(kernels_module, "packing_unavailable", lambda: "no bf16 packing here")
    layer = Linear(64, 32).bfloat16()
    assert pack_weights(layer) == 0 and layer.packed is None
    assert packed_bytes(layer) == 0
