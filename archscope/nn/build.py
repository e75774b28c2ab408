"""Build a DecoderLM on any device and dtype. On `meta` nothing is allocated."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from archscope.nn.model import DecoderLM
from archscope.nn.shards import local
from archscope.spec.schema import ModelSpec


def build_model(spec: ModelSpec, device: str | torch.device = "cpu",
                dtype: torch.dtype = torch.float32, seed: int | None = 0,
                progress: Callable[[str], None] | None = None) -> DecoderLM:
    """The network for `spec`. Off the meta device its weights are random (std 0.02, seeded);
    `progress("layer k/n")` after each layer's are drawn (seconds each for a large model).

    Modules are constructed on meta first, so no time goes into default initialisers and no
    memory is touched until the weights are materialised once, directly on `device`.
    """
    with torch.device("meta"):
        model = DecoderLM(spec).to(dtype)
    if torch.device(device).type == "meta":
        return model.eval()
    model = model.to_empty(device=device)
    model.tie_weights()
    init_weights(model, seed, progress)
    return model.eval()


@torch.no_grad()
def init_weights(model: nn.Module, seed: int | None = 0,
                 progress: Callable[[str], None] | None = None) -> None:
    """Normal(0, 0.02) matrices and embeddings, zero biases, unit norm scales (a (1 + weight)
    RMSNorm's weight is 0: norm.unit_offset); a module with `init_own_weights` (the state
    mixers: per-head decays and step sizes) then sets its own. A sharded model (DTensor
    parameters, archscope.distributed) fills each rank's local shard. `progress`: see
    build_model (the draws and their order are the same with it or without)."""
    generator = None
    if seed is not None:
        device = local(next(model.parameters())).device
        generator = torch.Generator(device=device).manual_seed(seed)
    layers = {id(layer): k for k, layer in enumerate(getattr(model, "layers", ()))}
    drawn = progress or (lambda _label: None)
    for module in model.modules():  # depth first: a layer, then all its parts
        if layers.get(id(module)):  # layer k starts: the layers before it are drawn
            drawn(f"layer {layers[id(module)]}/{len(layers)}")
        if isinstance(module, (nn.Linear, nn.Embedding)):
            local(module.weight).normal_(0.0, 0.02, generator=generator)
        for name, param in module.named_parameters(recurse=False):
            param = local(param)
            if name in ("bias", "sinks"):  # attention sinks start neutral: a zero logit
                param.zero_()
            elif not isinstance(module, (nn.Linear, nn.Embedding)) and param.dim() == 1:
                param.fill_(0.0 if getattr(module, "unit_offset", False) else 1.0)  # norm scales
            elif param.dim() >= 2 and not isinstance(module, (nn.Linear, nn.Embedding)):
                param.normal_(0.0, 0.02, generator=generator)  # fused expert weights
        for buffer in module.buffers(recurse=False):  # to_empty left them as garbage memory
            local(buffer).zero_()  # (a router's correction bias starts at 0, as transformers')
        own = getattr(module, "init_own_weights", None)  # a state mixer's decays and steps
        if own is not None:
            own()
    if layers:
        drawn(f"layer {len(layers)}/{len(layers)}")


def count_parameters(model: nn.Module) -> int:
    """Unique parameters: a tied embedding counts once (module.parameters() de-duplicates)."""
    return sum(p.numel() for p in model.parameters())
