"""Build a DecoderLM on any device and dtype. On `meta` nothing is allocated."""

from __future__ import annotations

import torch
from torch import nn

from archscope.nn.model import DecoderLM
from archscope.nn.shards import local
from archscope.spec.schema import ModelSpec


def build_model(spec: ModelSpec, device: str | torch.device = "cpu",
                dtype: torch.dtype = torch.float32, seed: int | None = 0) -> DecoderLM:
    """The network for `spec`. Off the meta device its weights are random (std 0.02, seeded).

    Modules are constructed on meta first, so no time goes into default initialisers and no
    memory is touched until the weights are materialised once, directly on `device`.
    """
    with torch.device("meta"):
        model = DecoderLM(spec).to(dtype)
    if torch.device(device).type == "meta":
        return model.eval()
    model = model.to_empty(device=device)
    model.tie_weights()
    init_weights(model, seed)
    return model.eval()


@torch.no_grad()
def init_weights(model: nn.Module, seed: int | None = 0) -> None:
    """Normal(0, 0.02) matrices and embeddings, zero biases, unit norm scales (a (1 + weight)
    RMSNorm's weight is 0: norm.unit_offset); a module with `init_own_weights` (the state
    mixers: per-head decays and step sizes) then sets its own. A sharded model (DTensor
    parameters, archscope.distributed) fills each rank's local shard."""
    generator = None
    if seed is not None:
        device = local(next(model.parameters())).device
        generator = torch.Generator(device=device).manual_seed(seed)
    for module in model.modules():
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


def count_parameters(model: nn.Module) -> int:
    """Unique parameters: a tied embedding counts once (module.parameters() de-duplicates)."""
    return sum(p.numel() for p in model.parameters())
