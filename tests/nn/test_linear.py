"""archscope.nn.linear: oneDNN's kernel for fp32 inference on a CPU, F.linear everywhere else,
the same outputs to fp32 rounding, counted by FlopCounterMode, compiled, and what every built
model's linears run."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from archscope.nn import build_model
from archscope.nn.linear import Linear, linear, pack_weights, packed_bytes, uses_onednn
from archscope.spec import load_spec, preset_names
from parity import tiny_spec

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(),
                                reason="this torch has no oneDNN")
BIG = (1024, 1024)  # 1M multiply-adds at one token: the smallest linear oneDNN takes


def weights(rows: int, cols: int, bias: bool = True):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(rows, cols, generator=g) / cols ** 0.5
    return w, (torch.randn(rows, generator=g) if bias else None)


@pytest.mark.parametrize("x_shape", [(1, 1024), (2, 3, 1024), "transposed"])
def test_fp32_inference_on_the_cpu_takes_onednn_with_f_linears_outputs(x_shape):
    w, b = weights(*BIG)
    x = (torch.randn(2, 1024, 3).transpose(1, 2) if x_shape == "transposed"
         else torch.randn(x_shape))
    with torch.inference_mode():
        assert uses_onednn(x, w)
        with FlopCounterMode(display=False) as counter:
            got = linear(x, w, b)
        expected = F.linear(x, w, b)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)  # summed in another order
    assert counter.get_total_flops() == 2 * x[..., 0].numel() * w.numel()  # as F.linear's
    assert torch.ops.archscope.onednn_linear in counter.get_flop_counts()["Global"]


def test_elsewhere_it_is_f_linear_and_gradients_flow():
    w, b = weights(*BIG)
    x = torch.randn(4, 1024)
    with torch.inference_mode():
        assert not uses_onednn(x.bfloat16(), w.bfloat16())  # bf16: F.linear is oneDNN already
        small = weights(512, 512)[0]
        assert not uses_onednn(x[:1, :512], small)  # 262K multiply-adds: setup would dominate
        assert uses_onednn(x[:, :512], small)  # the same matrix at 4 tokens: 1M
        assert not uses_onednn(x[:0], w)
    layer = Linear(1024, 1024)
    assert torch.is_grad_enabled() and not uses_onednn(x, layer.weight)  # training: autograd
    layer(x).square().sum().backward()
    reference = nn.Linear(1024, 1024)
    reference.load_state_dict(layer.state_dict())
    reference(x).square().sum().backward()
    torch.testing.assert_close(layer.weight.grad, reference.weight.grad)


def test_a_compiled_function_runs_it():
    w, b = weights(*BIG)
    x = torch.randn(2, 1, 1024)
    step = torch.compile(lambda x: torch.relu(linear(x, w, b)) * 2, fullgraph=True)
    with torch.inference_mode():
        torch.testing.assert_close(step(x), torch.relu(F.linear(x, w, b)) * 2, rtol=1e-5,
                                   atol=1e-5)


def test_every_linear_of_every_preset_is_archscopes():
    for name in preset_names():
        model = build_model(load_spec(name), device="meta")
        kinds = {type(m) for m in model.modules() if isinstance(m, nn.Linear)}
        assert kinds == {Linear}, (name, kinds)


def test_a_built_model_runs_onednn_and_gives_f_linears_logits():
    """A model wide enough that its linears take oneDNN: inference logits against the same
    model with autograd on (every linear then F.linear's)."""
    spec = tiny_spec(d_model=1024, n_layers=1, vocab_size=1024,
                     attention=dict(kind="gqa", n_heads=8, n_kv_heads=2, head_dim=128),
                     ffn=dict(kind="swiglu", d_ff=1024))
    torch.manual_seed(0)
    model = build_model(spec, torch.device("cpu"), torch.float32)
    ids = torch.randint(0, spec.vocab_size, (1, 4))
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        fast = model(ids)
    with torch.enable_grad():
        reference = model(ids).detach()
    counts = counter.get_flop_counts()["Global"]
    assert counts[torch.ops.archscope.onednn_linear] > 0
    assert not {torch.ops.aten.mm, torch.ops.aten.addmm} & set(counts)  # none on F.linear
    torch.testing.assert_close(fast, reference, rtol=1e-4, atol=1e-4)


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


def test_packing_takes_only_bf16_cpu_weights_and_training_keeps_the_plain_ones():
    torch.manual_seed(0)
    fp32, bf16 = Linear(64, 32), Linear(64, 32).bfloat16()
    assert pack_weights(nn.Sequential(fp32, bf16)) == 1
    assert fp32.packed is None and bf16.packed is not None
    x = torch.randn(3, 64, dtype=torch.bfloat16, requires_grad=True)
    bf16(x).sum().backward()  # with autograd: F.linear on the weight itself
    assert bf16.weight.grad is not None and x.grad is not None
    assert pack_weights(bf16) == 1 and bf16.packed is not None  # the copy kept, not redone


def test_compiled_code_runs_the_packed_copy_and_an_eager_call_sees_a_write():
    torch.manual_seed(0)
    layer = Linear(64, 32).bfloat16()
    pack_weights(layer)
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


def test_a_weight_written_after_packing_drops_its_packed_copy():
    torch.manual_seed(0)
    layer = Linear(64, 32).bfloat16()
    pack_weights(layer)
    with torch.no_grad():
        layer.weight.mul_(2)  # as loading a checkpoint into it does
    x = torch.randn(3, 64, dtype=torch.bfloat16)
    with torch.inference_mode():
        got = layer(x)
    assert layer.packed is None
    assert torch.equal(got, F.linear(x, layer.weight, layer.bias))
