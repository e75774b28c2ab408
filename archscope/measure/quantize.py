"""The pass that puts archscope.nn.quantized's kernels in a built model in place of the linears a
weight format quantizes.

Which linears: exactly those the format quantizes (WeightFormat.quantizes on the tensor the
estimate lists for that module: same layer, same name), so embeddings, lm_head, router and
vectors stay in 16 bits. A module the estimate does not name (a fused q/k/v or gate/up made
after the build) takes the role of the named linears beside it. Tensors a format quantizes
that are not nn.Linear modules (routed experts, stored as 3-D tensors) have no kernel here: the
pass refuses such a model before it changes anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import nn

from archscope.errors import InputError, quote
from archscope.estimate.formats import WeightFormat, weight_format
from archscope.estimate.tensors import Tensor, weight_tensors
from archscope.nn.quantized import KERNELS


def runnable_format(fmt: str | WeightFormat) -> WeightFormat:
    """The format, if it has a kernel here; otherwise InputError naming the ones that run."""
    fmt = weight_format(fmt)
    if fmt.name not in KERNELS:
        raise InputError(f"weight format {quote(fmt.name)} has no quantized kernel here; the formats "
                         f"that run are {', '.join(KERNELS)} (int4 = int4-g128)")
    return fmt


@dataclass
class Quantization:
    """What quantize_linears did to a model."""

    format: str
    quantized: list[str] = field(default_factory=list)  # module names now QuantizedLinear
    left_16bit: dict[str, str] = field(default_factory=dict)  # module name -> why (kernel shape)

    def as_dict(self) -> dict:
        return {"format": self.format, "quantized_linears": len(self.quantized),
                "left_16bit": dict(self.left_16bit)}


def _layer_of(name: str) -> int | None:
    parts = name.split(".")
    return int(parts[1]) if parts[0] == "layers" and len(parts) > 2 else None


def linear_roles(model: nn.Module) -> dict[str, Tensor | str]:
    """Each nn.Linear's tensor in the estimate (same layer, same module name); a linear it does
    not name gets the role of the named linears beside it (a string), or KeyError."""
    tensors = {(t.layer, t.kind): t for t in weight_tensors(model.spec) if t.rows > 1}
    embedding = [m.weight for m in model.modules() if isinstance(m, nn.Embedding)]
    linears = {n: m for n, m in model.named_modules() if isinstance(m, nn.Linear)}
    out: dict[str, Tensor | str] = {}
    beside: dict[str, set[str]] = {}
    for name, m in linears.items():
        if any(m.weight is e for e in embedding):  # a tied lm_head is the embedding
            out[name] = "embedding"
            continue
        t = tensors.get((_layer_of(name), name.rsplit(".", 1)[-1]))
        if t is not None and (t.rows, t.cols) == tuple(m.weight.shape):
            out[name] = t
            beside.setdefault(name.rpartition(".")[0], set()).add(t.role)
    for name in linears.keys() - out.keys():
        roles = beside.get(name.rpartition(".")[0], set())
        if len(roles) != 1:
            raise KeyError(f"cannot tell the role of linear {name!r} (the weight estimate "
                           f"names no such tensor, and its neighbours have roles {roles or '{}'})")
        out[name] = roles.pop()
    return out


def _check_covered(model: nn.Module, fmt: WeightFormat, chosen: dict[str, nn.Linear]) -> None:
    """The format's quantized weights, role by role, must all be linears chosen here."""
    want: dict[str, int] = {}
    for t in weight_tensors(model.spec):
        if fmt.quantizes(t):
            want[t.role] = want.get(t.role, 0) + t.elements * t.copies
    have: dict[str, int] = {}
    for name, role in chosen.items():
        have[role] = have.get(role, 0) + model.get_submodule(name).weight.numel()
    missing = {r: n - have.get(r, 0) for r, n in want.items() if n != have.get(r, 0)}
    if missing:
        what = ", ".join(f"{r} ({n:,} weights)" for r, n in missing.items())
        raise InputError(f"{model.spec.name}: weight format {fmt.name} quantizes {what} that are "
                         f"not linear layers in the built model (routed experts are stored as "
                         f"3-D tensors); quantized execution covers nn.Linear layers only")


def linears_to_quantize(model: nn.Module, fmt: str | WeightFormat) -> dict[str, str]:
    """{module name: role} of the linears `fmt` quantizes; InputError when the format
    quantizes weights that are not linears (works on the meta device: a check before a build)."""
    fmt = runnable_format(fmt)
    chosen = {}
    for name, t in linear_roles(model).items():
        if isinstance(t, str):  # a fused linear: ask the format as for the tensors it holds
            t = Tensor(name, t, *model.get_submodule(name).weight.shape)
        if fmt.quantizes(t):
            chosen[name] = t.role
    _check_covered(model, fmt, chosen)
    return chosen


def quantize_linears(model: nn.Module, fmt: str | WeightFormat) -> Quantization:
    """Replace, in place, every nn.Linear of `model` (a DecoderLM) that `fmt` quantizes by a
    QuantizedLinear of the same weights; see the module doc for what stays in 16 bits."""
    fmt = runnable_format(fmt)
    kernel = KERNELS[fmt.name]
    chosen = linears_to_quantize(model, fmt)  # every check before anything changes
    report = Quantization(fmt.name)
    for name in chosen:
        linear = model.get_submodule(name)
        why = kernel.supports(linear.out_features, linear.in_features, linear.weight.device)
        if why:
            report.left_16bit[name] = why
            continue
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent), child, kernel.from_linear(linear, fmt.name))
        report.quantized.append(name)
    return report
