"""The dense linear every built model runs, and the kernel it takes on a CPU.

`linear(x, weight, bias)` is `F.linear`, except for fp32 inference on a CPU, where it calls
oneDNN's linear (`torch.ops.mkldnn._linear_pointwise`, torch's own CPU kernel library: what
F.linear already runs for bf16, and what inductor runs for frozen fp32 graphs). For fp32,
F.linear calls MKL's sgemm, and MKL dispatches its instruction-set-specific code paths on Intel
processors only (Intel's MKL developer guide, "Instruction Set Specific Dispatching on Intel
Architectures"; sgemm without a Zen kernel: danieldk.eu/Posts/2020-08-31-MKL-Zen.html). Here its
verbose mode names no instruction set while oneDNN's names AVX-512. On this project's machines
(AMD EPYC, family 26, AVX-512; MKL 2024.2 and oneDNN 3.12 in torch 2.13) llama-3.2-1b's
matmuls take 1.59x less time with oneDNN's kernel in a decode step at batch 1, 2.48x at batch 8
and 2.31x in a 128-token prefill (reports/data/benchmarks/cpu_linear-cpu.json;
benchmarks/cpu_linear.py prints them wherever it runs). Same fp32 arithmetic, summed in another
order: the outputs agree to rounding (tests/nn/test_linear.py).

Only where it is safe and pays: plain tensors (a DTensor shard or any other subclass keeps
F.linear), both fp32, no autograd (oneDNN's op has no backward: training and gradients are
untouched), and at least _ONEDNN_MIN_MACS of work. `Linear` is nn.Linear with this forward
(every builder makes it), so checkpoints, module tables and `isinstance(m, nn.Linear)` are
unchanged; the MoE router calls `linear` too.

Packed weights (`pack_weights`, opt-in: `profile --pack-weights`): oneDNN multiplies a weight
it has reordered into its own blocked layout faster than a plain row-major one, and for bf16 on
a CPU much faster: here a llama-3.2-1b decode step's matmuls at batch 1 take 1.47x less time
(one token through 8,192 x 2,048 at 43.6 GB/s packed against 29.8 plain), 1.23x at batch 8,
1.07x in a 128-token prefill (reports/data/benchmarks/cpu_linear-cpu-bf16.json), the same
result bit for bit (tests/nn/test_linear.py). fp32 gained nothing at one token in a scratch
timing (0.89-1.00x; at eight tokens 1.8x: left for a batched path), so only bf16 is packed.
The packed copy sits beside the weight, which stays what checkpoints, tied embeddings,
transformers' twin and every count read, so it costs the packed weights' bytes once more. It
is used for inference on plain CPU tensors of its dtype, eager or compiled (the compiled decode
step, made after archscope.nn.fuse for final weights, calls the same op on it), and eager code
drops it once the weight is written (compiled code cannot read the version counter that shows
a write; the next eager call, a prefill, drops it, and the step is compiled again).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import register_flop_formula

_ONEDNN_OK = torch.backends.mkldnn.is_available()
_PLAIN = (torch.Tensor, nn.Parameter)
# Below about a million multiply-adds (1,024 x 1,024 at one token) oneDNN's ~13 us of setup per
# call outweighs its faster kernel (here: 2 us against 12.5 at 128 x 128, 13 against 18 at
# 512 x 512, 54 against 38 at 1,024 x 1,024), so small linears stay on F.linear.
_ONEDNN_MIN_MACS = 1 << 20


def uses_onednn(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether `linear` runs oneDNN's kernel for these operands (see the module doc)."""
    # the size first: the cheapest test, and the one most calls in a small model fail
    return (x.numel() * weight.shape[0] >= _ONEDNN_MIN_MACS and _ONEDNN_OK
            and x.device.type == "cpu" and x.dtype == torch.float32
            and weight.dtype == torch.float32 and type(x) in _PLAIN and type(weight) in _PLAIN
            and not torch.is_grad_enabled())


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None):
    """x @ weight.T + bias, as F.linear; oneDNN's kernel for fp32 inference on a CPU."""
    if uses_onednn(x, weight):
        return onednn_linear(x, weight, bias)
    return F.linear(x, weight, bias)


class Linear(nn.Linear):
    """nn.Linear whose forward is `linear` (the same parameters, names and init), or oneDNN's
    kernel on the packed copy `pack_weights` made of its weight."""

    packed: torch.Tensor | None = None  # oneDNN's blocked layout of the weight (pack_weights)
    packed_version: int = -1  # the weight's version when packed: a later write makes it stale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed is not None and self._packed_fits(x):
            return onednn_linear(x, self.packed, self.bias)
        return linear(x, self.weight, self.bias)

    def packed_is_current(self) -> bool:
        """Whether the packed copy is the weight as it is now (not loaded or trained since)."""
        return self.packed is not None and self.packed_version == self.weight._version

    def _packed_fits(self, x: torch.Tensor) -> bool:
        # stale copies are dropped in eager code only (see the module doc)
        if not torch.compiler.is_compiling() and not self.packed_is_current():
            self.packed = None
            return False
        return (x.dtype == self.packed.dtype and x.device.type == "cpu" and type(x) in _PLAIN
                and not torch.is_grad_enabled())


PACKED_DTYPES = (torch.bfloat16,)  # see the module doc: fp32 packed gains nothing at one token


def packable(module: nn.Module) -> bool:
    """Whether `pack_weights` packs this module: archscope's Linear, a plain bf16 weight on a
    CPU with oneDNN, one whose writes can be seen."""
    return (isinstance(module, Linear) and _ONEDNN_OK and module.weight.device.type == "cpu"
            and module.weight.dtype in PACKED_DTYPES and type(module.weight) in _PLAIN
            # made under inference mode, a weight has no version counter to see a write by
            and not module.weight.is_inference())


def pack_weights(model: nn.Module) -> int:
    """Give every packable Linear of `model` a copy of its weight in oneDNN's blocked layout
    (a post-build pass for inference on final weights, after archscope.nn.fuse where both
    run); returns how many hold one. A current copy is kept, so a second call packs only what
    is new or written since. Costs the packed weights' bytes once more; nothing else changes."""
    packed = 0
    for module in model.modules():
        if not packable(module):
            continue
        if not module.packed_is_current():
            with torch.no_grad():  # the layout is chosen for one row of input: decode
                module.packed = torch.ops.mkldnn._reorder_linear_weight(module.weight.detach(), 1)
            module.packed_version = module.weight._version
        packed += 1
    return packed


def packed_layer(weight: torch.Tensor) -> Linear:
    """archscope's Linear (no bias) holding `weight` itself, packed where `packable` allows (a
    probe's or a benchmark's stand-in for one layer of a packed model)."""
    layer = nn.utils.skip_init(Linear, weight.shape[1], weight.shape[0], bias=False,
                               device=weight.device, dtype=weight.dtype)
    layer.weight = nn.Parameter(weight, requires_grad=False)
    pack_weights(layer)
    return layer


def packed_bytes(model: nn.Module) -> int:
    """The bytes pack_weights adds to `model` (the weights it would pack or has packed)."""
    return sum(m.weight.nbytes for m in model.modules() if packable(m))


# An op of our own around oneDNN's: inductor lowers mkldnn._linear_pointwise only for weights
# it has frozen and packed itself (a compiled step would fail on ours), while a custom op is
# called as it is, from compiled code too; it also names the kernel in profiles.
@torch.library.custom_op("archscope::onednn_linear", mutates_args=())
def onednn_linear(x: torch.Tensor, weight: torch.Tensor,
                  bias: Optional[torch.Tensor]) -> torch.Tensor:
    """oneDNN's fp32 linear on a CPU (torch.ops.mkldnn._linear_pointwise, no fused op)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


@onednn_linear.register_fake
def _(x, weight, bias):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


@register_flop_formula(torch.ops.archscope.onednn_linear)
def _onednn_linear_flops(x_shape, w_shape, *args, out_shape=None, **kwargs) -> int:
    """FlopCounterMode's count for it, as it counts F.linear: 2 per multiply-add, the bias not
    counted."""
    return 2 * math.prod(x_shape[:-1]) * w_shape[0] * w_shape[1]
