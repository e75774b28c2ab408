"""Where each weight goes: one device, or accelerate's device map (several GPUs, CPU offload).

Decided on the meta-built model, before any weight is read, so a model that cannot fit is
refused with nothing allocated. With a device map, whole decoder blocks stay on one device
(`Block` is never split); modules mapped to "cpu" while a GPU runs the model are offloaded:
their weights live in CPU memory and accelerate's hooks bring them to the GPU for each forward.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from archscope.devices import available_bytes, resolve_device
from archscope.errors import InputError, quote

DEVICE_MAPS = ("auto", "balanced", "sequential")
NO_SPLIT = ["Block"]  # a decoder layer's sublayers share its residual stream: keep it whole
# What a caller can change when a model does not fit, named as the library's arguments: a
# narrower `dtype`, a `device_map` (only where the caller takes one), fewer layers (the
# override n_layers=..., only where the caller builds from a spec). The refusal offers only the
# remedies the caller passes (`plan(..., remedies=...)`) that would help here.
REMEDIES = ("dtype", "device_map", "n_layers")


@dataclass(frozen=True)
class Placement:
    main: torch.device  # inputs go here; offloaded modules run here
    device_map: dict[str, str | int] | None = None  # module prefix -> device; None: all on main

    def storage(self, name: str) -> torch.device:
        """The device that holds parameter or module `name` (CPU for offloaded modules)."""
        return self.main if self.device_map is None else _as_device(self._mapped(name))

    def execution(self, name: str) -> torch.device:
        """The device where module `name` runs."""
        device = self.storage(name)
        return self.main if device.type == "cpu" else device

    def _mapped(self, name: str):
        best = max((k for k in self.device_map if k == "" or name == k or name.startswith(k + ".")),
                   key=len, default=None)
        if best is None:
            raise KeyError(f"device map has no entry for {name}")
        return self.device_map[best]


def _as_device(value) -> torch.device:
    return torch.device(f"cuda:{value}" if isinstance(value, int) else value)


def weights_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def plan(model: nn.Module, device: str, device_map=None, max_memory: dict | None = None, *,
         remedies: tuple[str, ...] = ("dtype", "n_layers")) -> Placement:
    """Placement for the meta-built `model`; InputError when it cannot fit, suggesting those
    of `remedies` (see REMEDIES) that apply. A named device map ("auto", ...) needs a CUDA GPU:
    without one it is refused rather than silently run on the CPU."""
    if device_map is None:
        main = resolve_device(device)
        _check_fits(model, main, remedies)
        return Placement(main)
    if isinstance(device_map, str):
        check_device_map(device_map)
        device_map = _infer(model, device_map, max_memory)
    if "disk" in device_map.values():
        on_disk = [k or "the whole model" for k, v in device_map.items() if v == "disk"]
        raise InputError(f"{_size(weights_bytes(model))} of weights do not fit in the GPU and "
                         f"CPU memory available (left over: {', '.join(on_disk[:4])}"
                         f"{', ...' if len(on_disk) > 4 else ''}); archscope does not offload "
                         f"to disk. Try {_remedies(model, remedies, mapped=True)}")
    gpus = [v for v in device_map.values() if v not in ("cpu", "disk")]
    main = _as_device(gpus[0]) if gpus else torch.device("cpu")
    for value in set(device_map.values()):
        resolve_device(str(_as_device(value)))  # a map naming a missing GPU is bad input
    return Placement(main, dict(device_map))


def check_device_map(device_map) -> None:
    """Refuse a named device map ("auto", ...) where there is no CUDA GPU to spread over (it
    would silently run everything on the CPU)."""
    if isinstance(device_map, str) and not cuda_available():
        raise InputError(f"device_map {quote(device_map)} spreads a model over CUDA GPUs, but no "
                         f"CUDA GPU is available here; use device 'cpu' (no device_map)")


def _infer(model: nn.Module, kind: str, max_memory: dict | None) -> dict:
    from accelerate import infer_auto_device_map
    from accelerate.utils import get_balanced_memory

    if kind not in DEVICE_MAPS:
        raise InputError(f"device_map {quote(kind)}: expected one of {', '.join(DEVICE_MAPS)}")
    dtype = next(model.parameters()).dtype
    if kind != "sequential":  # auto = balanced, as in transformers: spread over the GPUs evenly
        max_memory = get_balanced_memory(model, max_memory, no_split_module_classes=NO_SPLIT,
                                         dtype=dtype)
    return dict(infer_auto_device_map(model, max_memory, no_split_module_classes=NO_SPLIT,
                                      dtype=dtype))


def cuda_available() -> bool:
    return torch.cuda.is_available()


def _check_fits(model: nn.Module, device: torch.device, remedies: tuple[str, ...]) -> None:
    need, free = weights_bytes(model), available_bytes(device)
    if free is not None and need > free:
        where = "free GPU memory" if device.type == "cuda" else "available RAM"
        raise InputError(f"the weights need {_size(need)} ({_dtype_name(model)}) but only "
                         f"{_size(free)} of {where} is free on {device}; nothing was loaded. "
                         f"Try {_remedies(model, remedies)}")


def _dtype_name(model: nn.Module) -> str:
    return str(next(model.parameters()).dtype).removeprefix("torch.")


def _remedies(model: nn.Module, offered: tuple[str, ...], mapped: bool = False) -> str:
    """The remedies among `offered` that would help, in words, ending with more memory."""
    fixes = []
    if "dtype" in offered and next(model.parameters()).element_size() > 2:
        fixes.append("a 16-bit dtype (bf16 or fp16: half the bytes)")
    if "device_map" in offered and not mapped and cuda_available():
        fixes.append("device_map='auto' to spread the weights over the GPUs and CPU memory")
    if "n_layers" in offered:
        fixes.append("fewer layers (the override n_layers=2)")
    fixes.append("a machine with more memory")
    return ", ".join(fixes[:-1]) + f" or {fixes[-1]}" if len(fixes) > 1 else fixes[0]


def _size(n: int) -> str:
    return f"{n / 1e9:,.2f} GB" if n >= 10**8 else f"{n / 1e6:,.2f} MB"


def dispatch(model: nn.Module, placement: Placement) -> nn.Module:
    """Attach accelerate's hooks when the map uses several devices (or offloads)."""
    if placement.device_map is None:
        return model
    model.hf_device_map = placement.device_map  # the attribute name transformers uses
    if len(set(placement.device_map.values())) > 1:
        from accelerate import dispatch_model

        model = dispatch_model(model, placement.device_map, main_device=placement.main)
    return model


def new_cache(model: nn.Module, placement: Placement | None, batch: int, max_len: int):
    """A static cache with each layer's part on the device where that layer runs."""
    from archscope.nn.cache import KVCache

    if placement is None or placement.device_map is None:
        return model.new_cache(batch, max_len)
    dtype = model.embed_tokens.weight.dtype
    return KVCache([layer.self_attn.new_cache(batch, max_len, placement.execution(f"layers.{i}"),
                                              dtype)
                    for i, layer in enumerate(model.layers)], max_len)
