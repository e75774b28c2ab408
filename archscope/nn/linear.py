"""The dense linear every built model runs, and the kernel it takes on a CPU.

Three kernels can compute `x @ weight.T + bias` for inference on a CPU:

- `aten`: F.linear. For fp32 it calls MKL's sgemm, for bf16 oneDNN (where the CPU has bf16
  support) or ATen's own loops.
- `onednn`: oneDNN's fp32 linear on the weight as it is (`torch.ops.mkldnn._linear_pointwise`,
  torch's own CPU kernel library, what inductor runs for frozen fp32 graphs).
- `packed`: oneDNN's linear on a copy of the weight reordered into its blocked layout
  (`pack_weights`, opt-in: `profile --pack-weights`), bf16 only.

Which is fastest depends on the processor, so it is measured, never assumed. MKL dispatches its
instruction-set-specific code on Intel processors only (Intel's MKL developer guide,
"Instruction Set Specific Dispatching on Intel Architectures"), and on an AMD EPYC with
AVX-512 oneDNN's fp32 kernel took a llama-3.2-1b decode step's matmuls 1.6x faster; on an AMD
EPYC with AVX2 only the same kernel was 2.6x slower than F.linear (issue 35's audit). So
archscope.hardware.kernels times the candidates once per process at a model's own weight
shapes, with the token rows each phase feeds them, and records the fastest here (`choose`); a
product whose shape and rows nobody timed runs F.linear. Rows are recorded by power-of-two
bucket (1, 2, 4, ..., so a 100-token prefill shares the 128-row choice).

The packed layout needs a CPU capability: oneDNN reorders bf16 weights only where the processor
has AVX-512 (BW, VL and DQ) or AVX-NE-CONVERT, and raises otherwise. `packing_unavailable()`
probes it once by packing and multiplying a small matrix; where it says no, nothing is packed
and `profile --pack-weights` refuses with that reason.

Only where it is safe: plain tensors (a DTensor shard or any other subclass keeps F.linear), a
CPU, no autograd (oneDNN's op has no backward: training and gradients are untouched). `Linear`
is nn.Linear with this forward (every builder makes it), so checkpoints, module tables and
`isinstance(m, nn.Linear)` are unchanged; the MoE router calls `linear` too. oneDNN sums in
another order than MKL: outputs agree to fp32 rounding, and a packed copy gives its plain
kernel's result bit for bit (tests/nn/test_linear.py).

A packed copy sits beside the weight, which stays what checkpoints, tied embeddings,
transformers' twin and every count read, so it costs the packed weights' bytes once more. It
is used for inference on plain CPU tensors of its dtype, eager or compiled (the compiled decode
step, made after archscope.nn.fuse for final weights, calls the same op on it), and eager code
drops it once the weight is written (compiled code cannot read the version counter that shows
a write; the next eager call, a prefill, drops it, and the step is compiled again).
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import register_flop_formula

KERNELS = ("aten", "onednn", "packed")
PACKED_DTYPES = (torch.bfloat16,)  # fp32 packed gained nothing at one token (0.89-1.00x)
_PLAIN = (torch.Tensor, nn.Parameter)
# (dtype, rows bucket, out_features, in_features) -> "onednn" or "packed": the measured winner
# (hardware/kernels.py); an absent key, and "aten", run F.linear
_CHOSEN: dict[tuple[torch.dtype, int, int, int], str] = {}


def rows_bucket(rows: int) -> int:
    """The power of two at or above `rows`: the rows a recorded choice stands for."""
    return 1 << max(rows - 1, 0).bit_length()


def choose(dtype: torch.dtype, rows: int, out_features: int, in_features: int,
           kernel: str) -> None:
    """Record `kernel` as the one to run for this weight shape at about `rows` rows."""
    if kernel not in KERNELS:
        raise ValueError(f"unknown linear kernel {kernel!r}; expected one of {KERNELS}")
    _CHOSEN[(dtype, rows_bucket(rows), out_features, in_features)] = kernel


def forget_choices() -> None:
    """Drop every recorded choice: every product runs F.linear until chosen again."""
    _CHOSEN.clear()


def chosen(x: torch.Tensor, weight: torch.Tensor) -> str:
    """The kernel recorded for this product, 'aten' where none was or none other may run."""
    if (not _CHOSEN or x.device.type != "cpu" or type(x) not in _PLAIN
            or type(weight) not in _PLAIN or torch.is_grad_enabled()):
        return "aten"
    rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
    return _CHOSEN.get((x.dtype, rows_bucket(rows), weight.shape[0], weight.shape[1]), "aten")


def plain_kernels(dtype: torch.dtype) -> dict[str, Callable]:
    """The candidates for a weight as it is, in `dtype`: F.linear, and oneDNN's fp32 kernel
    where torch has oneDNN (for bf16, F.linear is oneDNN's already where the CPU can)."""
    kernels = {"aten": F.linear}
    if dtype == torch.float32 and torch.backends.mkldnn.is_available():
        kernels["onednn"] = onednn_linear
    return kernels


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None):
    """x @ weight.T + bias, as F.linear; on the kernel chosen for it (see the module doc)."""
    if chosen(x, weight) == "onednn" and x.dtype == weight.dtype == torch.float32:
        return onednn_linear(x, weight, bias)
    return F.linear(x, weight, bias)


class Linear(nn.Linear):
    """nn.Linear whose forward is `linear` (the same parameters, names and init), or oneDNN's
    kernel on the packed copy `pack_weights` made of its weight where that was chosen."""

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
        return x.dtype == self.packed.dtype and chosen(x, self.weight) == "packed"


@functools.cache
def packing_unavailable() -> str | None:
    """None where oneDNN can pack bf16 weights on this CPU; else why not, in one sentence.

    The probe packs a 16 x 16 bf16 matrix and multiplies it (once per process): torch checks
    the processor's features inside the reorder, so trying it is the one test that cannot
    disagree with the kernel."""
    if not torch.backends.mkldnn.is_available():
        return "this torch was built without oneDNN, which packs the weights"
    try:
        weight = torch.eye(16, dtype=torch.bfloat16)
        with torch.no_grad():
            packed = torch.ops.mkldnn._reorder_linear_weight(weight, 1)
            out = torch.ops.mkldnn._linear_pointwise(torch.ones(1, 16, dtype=torch.bfloat16),
                                                     packed, None, "none", [], "")
        if torch.equal(out, torch.ones(1, 16, dtype=torch.bfloat16)):
            return None
        return "oneDNN's packed bf16 kernel gave a wrong product in a probe on this CPU"
    except RuntimeError as err:
        if "avx" not in str(err).lower():
            return f"oneDNN could not pack a bf16 weight here ({str(err).splitlines()[0]})"
        return ("oneDNN packs bf16 weights only on a CPU with AVX-512 (BW, VL and DQ) or "
                "AVX-NE-CONVERT, and this one has neither")


def packable(module: nn.Module) -> bool:
    """Whether `pack_weights` packs this module: archscope's Linear, a plain bf16 weight on a
    CPU whose oneDNN can pack it, one whose writes can be seen."""
    return (isinstance(module, Linear) and module.weight.device.type == "cpu"
            and module.weight.dtype in PACKED_DTYPES and type(module.weight) in _PLAIN
            # made under inference mode, a weight has no version counter to see a write by
            and not module.weight.is_inference() and packing_unavailable() is None)


def pack_weights(model: nn.Module) -> int:
    """Give every packable Linear of `model` a copy of its weight in oneDNN's blocked layout
    (a post-build pass for inference on final weights, after archscope.nn.fuse where both
    run); returns how many hold one. A current copy is kept, so a second call packs only what
    is new or written since. Costs the packed weights' bytes once more; a copy is used where
    the packed kernel was chosen for its shape (see the module doc)."""
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
    """oneDNN's linear on a CPU (torch.ops.mkldnn._linear_pointwise, no fused op)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


@onednn_linear.register_fake
def _(x, weight, bias):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


@register_flop_formula(torch.ops.archscope.onednn_linear)
def _onednn_linear_flops(x_shape, w_shape, *args, out_shape=None, **kwargs) -> int:
    """FlopCounterMode's count for it, as it counts F.linear: 2 per multiply-add, the bias not
    counted."""
    return 2 * math.prod(x_shape[:-1]) * w_shape[0] * w_shape[1]
