"""Weight-only int8 and int4 linear layers run by torch's packed kernels. Which linears of a
built model they replace is the weight format's choice (archscope/measure/quantize.py).

Layouts (the storages of archscope/estimate/formats.py, as the kernels take them):
- `int8`: symmetric, one scale per output channel in the activations' dtype; w = q * scale.
  CPU: aten._weight_int8pack_mm(x, q [N, K] int8, scale [N]). Where a device has no kernel
  for it (CUDA in torch builds without one) the weight is dequantised inside F.linear, as
  gpt-fast writes it: torch.compile fuses that; eager it reads the int8 weight and more.
- `int4-g128`: asymmetric, groups of 128 inputs, a scale and a zero point per group (GPTQ/AWQ).
  The kernels (tinygemm: aten._weight_int4pack_mm_for_cpu on CPU, aten._weight_int4pack_mm
  on CUDA) take the zero as a 16-bit *offset* beside the scale, w = (q - 8) * scale + offset
  with offset = (8 - zero) * scale, in one [K/128, N, 2] tensor: 32 bits per group where the
  format's checkpoint stores 20 (fp16 scale + 4-bit zero). `layout_overhead_bytes` says so, and
  the held bytes are reported as they are, not as the format prices them.

Shapes: a row whose inputs are not a whole number of groups is padded with zero weights to one
(storage.py prices it the same way) and the input is padded to match. An output width the
int4 kernel cannot take (a multiple of 16 on CPU, 8 on CUDA) leaves that layer in 16 bits:
`supports` says why, and the pass lists it, and the held bytes show it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archscope.errors import InputError

GROUP = 128  # int4-g128's group along the inputs (storage.INT4_G128.block)


def _has_kernel(op: str, device: torch.device) -> bool:
    key = "CUDA" if device.type == "cuda" else "CPU"
    return torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op}", key)


class QuantizedLinear(nn.Module):
    """y = x W^T + b with W held quantized; subclasses hold one format each (KERNELS below)."""

    format = ""

    def __init__(self, in_features: int, out_features: int, bias: torch.Tensor | None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    @classmethod
    def from_linear(cls, linear: nn.Linear, kernel: str) -> "QuantizedLinear":
        """A copy of `linear` held by `kernel` (a KERNELS name), on its device, in its dtype
        for scales and activations."""
        return _kernel_class(kernel)(linear.weight.detach(), linear.bias)

    @classmethod
    def random(cls, out_features: int, in_features: int, kernel: str,
               dtype: torch.dtype = torch.bfloat16, device="cpu",
               seed: int = 0) -> "QuantizedLinear":
        """A layer of random weights at a given shape: for timing one kernel (roofline probes)."""
        g = torch.Generator(device=device).manual_seed(seed)
        w = torch.randn(out_features, in_features, generator=g, device=device, dtype=dtype)
        return _kernel_class(kernel)(w * in_features ** -0.5, None)

    @staticmethod
    def supports(out_features: int, in_features: int, device: torch.device) -> str | None:
        """None when the kernel takes this shape, else why not."""
        return None

    @property
    def layout_overhead_bytes(self) -> int:
        """Bytes the kernel's layout holds beyond what the format prices (storage.py)."""
        return 0

    @property
    def nbytes(self) -> int:
        """Bytes held: the packed weight, its scales (and zeros) and the bias."""
        return sum(b.numel() * b.element_size() for b in self.buffers())

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"format={self.format}, bias={self.bias is not None}")


class Int8Linear(QuantizedLinear):
    format = "int8"

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None):
        super().__init__(weight.shape[1], weight.shape[0], bias)
        w = weight.float()
        # the scale is rounded to the stored dtype first, so the codes are made with the value
        # the kernel multiplies by
        scale = (w.abs().amax(dim=1) / 127).clamp(min=1e-12).to(weight.dtype)
        self.register_buffer("weight", (w / scale.float()[:, None]).round().clamp(-127, 127)
                             .to(torch.int8).contiguous())
        self.register_buffer("scale", scale)
        self.packed_kernel = _has_kernel("_weight_int8pack_mm", weight.device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed_kernel:
            y = torch.ops.aten._weight_int8pack_mm(x.reshape(-1, self.in_features), self.weight,
                                                   self.scale).view(*x.shape[:-1], -1)
        else:  # dequantise in the matmul (fused by torch.compile)
            y = F.linear(x, self.weight.to(x.dtype)) * self.scale
        return y if self.bias is None else y + self.bias


class Int4Linear(QuantizedLinear):
    format = "int4-g128"
    kernel_overhead_bits = 16 - 4  # per group: a 16-bit offset where the format has a 4-bit zero

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None):
        n, k = weight.shape
        super().__init__(k, n, bias)
        self.padded_in = -(-k // GROUP) * GROUP
        w = F.pad(weight.float(), (0, self.padded_in - k)).view(n, -1, GROUP)
        # the range holds 0, so the zero point is a code (0..15) and no weight is clipped
        low, high = w.amin(dim=-1).clamp(max=0), w.amax(dim=-1).clamp(min=0)
        scale = ((high - low) / 15).clamp(min=1e-6).to(weight.dtype).float()
        zero = (-low / scale).round().clamp(0, 15)
        codes = ((w / scale[..., None]).round() + zero[..., None]).clamp(0, 15).to(torch.int32)
        offset = (8 - zero) * scale  # tinygemm: w = (q - 8) * scale + offset
        self.register_buffer("scale_and_zero", torch.stack((scale, offset), dim=-1)
                             .transpose(0, 1).contiguous().to(weight.dtype))  # [K/128, N, 2]
        self.on_cpu = weight.device.type == "cpu"
        codes = codes.view(n, self.padded_in)
        if self.on_cpu:
            packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes, 1)
        else:  # CUDA takes two codes per byte, high nibble first (torch >= 2.5)
            pairs = (codes[:, ::2] << 4 | codes[:, 1::2]).to(torch.uint8)
            packed = torch.ops.aten._convert_weight_to_int4pack(pairs, 8)
        self.register_buffer("weight", packed)

    @property
    def layout_overhead_bytes(self) -> int:
        groups = self.out_features * (self.padded_in // GROUP)
        return groups * self.kernel_overhead_bits // 8

    @staticmethod
    def supports(out_features: int, in_features: int, device: torch.device) -> str | None:
        multiple = 16 if device.type == "cpu" else 8
        if out_features % multiple:
            return f"int4 kernel needs out_features a multiple of {multiple}, not {out_features}"
        return None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features)
        if self.padded_in != self.in_features:  # zero inputs for the zero weights of the pad
            flat = F.pad(flat, (0, self.padded_in - self.in_features))
        mm = (torch.ops.aten._weight_int4pack_mm_for_cpu if self.on_cpu
              else torch.ops.aten._weight_int4pack_mm)
        y = mm(flat, self.weight, GROUP, self.scale_and_zero).view(*x.shape[:-1], -1)
        return y if self.bias is None else y + self.bias


KERNELS: dict[str, type[QuantizedLinear]] = {c.format: c for c in (Int8Linear, Int4Linear)}


def _kernel_class(kernel: str) -> type[QuantizedLinear]:
    if kernel not in KERNELS:
        raise InputError(f"no quantized kernel {kernel!r}; the kernels are {', '.join(KERNELS)}")
    return KERNELS[kernel]


def held_weight_bytes(model: nn.Module) -> int:
    """Bytes of every weight the model holds: its (unique) parameters and its quantized
    layers' buffers (packed weights, scales, zeros, biases)."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    return params + sum(m.nbytes for m in model.modules() if isinstance(m, QuantizedLinear))
