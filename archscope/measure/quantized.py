"""Runs with quantized weights (`--weight-format int8|int4`): the checks before a build, the
quantization of the built model, and the record's fields.

The model is built (or loaded) in bf16, then its linears are quantized in place
(archscope.measure.quantize). The logit difference is taken on the run's own prompt: the last
position's logits of the bf16 model, before quantizing, against those after, same weights.
"""

from __future__ import annotations

import torch
from torch import nn

from archscope.errors import InputError
from archscope.estimate.formats import weights_in_format
from archscope.nn.build import build_model
from archscope.measure.quantize import linears_to_quantize, quantize_linears, runnable_format
from archscope.nn.quantized import QuantizedLinear, held_weight_bytes
from archscope.spec import ModelSpec

DTYPE = "bf16"  # the activations and every tensor the format leaves alone


def check_quantized_run(spec: ModelSpec, weight_format: str, dtype: str, *,
                        option: str = "--weight-format", **excluded: bool) -> None:
    """InputError before anything is built: a format without a kernel here, a dtype other
    than bf16, an option that cannot go with it (`excluded`: option name -> given), or a model
    whose quantized weights are not all linear layers."""
    try:
        fmt = runnable_format(weight_format)
    except InputError as e:
        raise InputError(f"{option} {weight_format}: {e}") from None
    if dtype != DTYPE:
        raise InputError(f"{option} {fmt.name} runs in {DTYPE} (the activations and the tensors "
                         f"the format leaves in 16 bits); got --dtype {dtype}")
    given = [name for name, on in excluded.items() if on]
    if given:
        raise InputError(f"{option} does not go with {', '.join(given)}")
    linears_to_quantize(build_model(spec, device="meta"), fmt)


@torch.inference_mode()
def quantize_for_run(model: nn.Module, weight_format: str, prompt: torch.Tensor) -> dict:
    """Quantize `model` in place; the record's fields: the format, what was quantized and left
    in 16 bits, the bytes held beside the format's estimate, and the logit difference from the
    16-bit model on `prompt` [B, P]."""
    before = model(prompt, last_only=True)[:, -1].float()
    done = quantize_linears(model, weight_format)
    after = model(prompt, last_only=True)[:, -1].float()
    diff = (after - before).abs()
    quantized = [m for m in model.modules() if isinstance(m, QuantizedLinear)]
    return {
        "weight_format": done.format,
        "quantized_linears": len(done.quantized),
        "linears_left_16bit": dict(done.left_16bit),
        "weights_bytes_held": held_weight_bytes(model),
        "weights_bytes_in_format_estimated": weights_in_format(model.spec, done.format)
        .total_bytes,
        "kernel_layout_overhead_bytes": sum(m.layout_overhead_bytes for m in quantized),
        "logits_vs_bf16": {"max_abs": round(diff.max().item(), 6),
                           "mean_abs": round(diff.mean().item(), 6),
                           "greedy_token_agrees": bool(torch.equal(after.argmax(-1),
                                                                   before.argmax(-1)))},
    }


def decode_weight_bytes(model: nn.Module) -> int:
    """Weight bytes one decode step reads: everything held but the embedding tables, of which
    a step reads one row (a tied lm_head reads the whole table: it counts once, as the head)."""
    head = model.lm_head.weight
    tables = [m.weight for m in model.modules() if isinstance(m, nn.Embedding)]
    return held_weight_bytes(model) - sum(t.numel() * t.element_size() for t in tables
                                          if t is not head)
