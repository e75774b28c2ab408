"""Load an HF checkpoint folder into archscope's own model, straight onto the target device.

Order, so that bad input costs nothing: the spec (from config.json, or a given one checked
against it), the model built on the meta device, every tensor's name and shape checked from the
file headers, the memory checked, and only then the weights read, one tensor at a time: each is
read onto its device, renamed (and split/transposed) through the weight-name table, cast and
assigned in place of its meta parameter. No second copy of the model exists at any moment.
A tensor holding NaN or inf is refused as it is read (one `isfinite` pass per tensor), and a
progress bar (archscope.progress: stderr, on a terminal only) counts the tensors read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from archscope.errors import CheckpointError
from archscope.nn.build import build_model
from archscope.nn.model import DecoderLM
from archscope.progress import progress_bar
from archscope.spec import ModelSpec
from archscope.weights import experts
from archscope.weights.files import (CheckpointFiles, check_entries, find_checkpoint,
                                      read_tensors)
from archscope.weights.mapping import Part, hf_to_ours, joined, table_for
from archscope.weights.placement import Placement, dispatch, plan
from archscope.weights.spec_check import (check_not_packed, check_same_network, config_path,
                                          folder_spec, model_type)
from archscope.weights.validate import (check_tensors, tied_aliases, without_mtp,
                                        without_vision)


def load_checkpoint(folder: str | Path, spec: ModelSpec | None = None,
                    device: str = "cpu", dtype: torch.dtype = torch.float32, *,
                    device_map: str | dict | None = None, max_memory: dict | None = None,
                    allow_pickle: bool = False, progress: bool = True
                    ) -> tuple[DecoderLM, ModelSpec]:
    """(model in eval mode, its spec) for the checkpoint in `folder`.

    `spec`: check it against the folder's config.json (InputError naming the differing keys)
    and build it; None builds the config's own spec. `device_map`: None (everything on
    `device`), "auto"/"balanced"/"sequential" or an explicit {module: device} map, with
    `max_memory` as in accelerate. The result's `placement` attribute says where inputs go and
    where each layer runs (see `placement.new_cache`). `progress`: a bar on stderr while the
    tensors are read (shown only when stderr is a terminal).
    """
    opened = open_checkpoint(folder, spec, dtype, allow_pickle)
    spec, table, ckpt, model, skip = (opened.spec, opened.table, opened.ckpt, opened.model,
                                      opened.skip)
    placement = plan(model, device, device_map, max_memory, remedies=("dtype", "device_map"))
    _read_into(model, table, ckpt, skip, placement, dtype, progress)
    model.tie_weights()
    left = [name for name, p in [*model.named_parameters(), *model.named_buffers()] if p.is_meta]
    if left:  # check_tensors makes this unreachable; a silent meta weight would be far worse
        raise CheckpointError(f"{folder}: no weights were read for {', '.join(left[:5])}")
    model = dispatch(model, placement)
    model.placement = placement
    return model, spec


@dataclass(frozen=True)
class OpenCheckpoint:
    """A checkpoint checked against its model, before any weight is read."""

    spec: ModelSpec
    table: tuple  # the weight-name table (mapping.table_for)
    ckpt: CheckpointFiles  # per-expert and MXFP4 tensors shown as the fused ones they make
    model: DecoderLM  # built on meta
    skip: set[str]  # checkpoint names not to read (tied copies of the embedding)


def open_checkpoint(folder: str | Path, spec: ModelSpec | None = None,
                    dtype: torch.dtype = torch.float32, allow_pickle: bool = False
                    ) -> OpenCheckpoint:
    """Every check that reads no tensor data: the folder, `spec` against its config.json (or
    the config's own spec), and each tensor's name and shape from the file headers
    (CheckpointError / InputError naming what is wrong)."""
    check_folder(folder)
    check_not_packed(folder)
    found = folder_spec(folder)
    if spec is not None:
        check_same_network(spec, found, str(config_path(folder)))
    spec = spec or found
    table = table_for(model_type(folder))
    ckpt = without_mtp(find_checkpoint(folder, allow_pickle), spec.n_layers, spec.mtp_layers)
    ckpt = without_vision(ckpt, model_type(folder))
    ckpt = experts.merged_view(ckpt, model_type(folder))
    model = build_model(spec, "meta", dtype)
    return OpenCheckpoint(spec, table, ckpt, model, check_tensors(table, model, ckpt))


def check_folder(folder: str | Path) -> Path:
    """`folder` as a Path; CheckpointError when it does not exist or is not a folder (the first
    check, so a mistyped path is not reported as a missing config or tokenizer)."""
    path = Path(folder)
    if not path.exists():
        raise CheckpointError(f"{folder}: the checkpoint folder does not exist")
    if not path.is_dir():
        raise CheckpointError(f"{folder}: not a folder; a checkpoint is a folder holding "
                              f"config.json and the weights")
    check_entries(path)
    return path


def finite_reader(ckpt: CheckpointFiles, file: Path, names: set[str], device):
    """`read_tensors`, refusing a floating-point tensor that holds NaN or inf (named, with its
    file and count) as soon as it is read."""
    for name, tensor in read_tensors(ckpt, file, names, device):
        check_finite(name, tensor, file)
        yield name, tensor


def check_finite(name: str, tensor: torch.Tensor, file: Path) -> None:
    """CheckpointError naming the tensor, its file and its count of NaN/inf values, if any."""
    if tensor.is_floating_point():
        values = tensor if tensor.element_size() > 1 else tensor.float()  # fp8: no isfinite
        if not bool(torch.isfinite(values).all()):
            bad = int(values.numel() - torch.isfinite(values).sum())
            raise CheckpointError(f"{name} has {bad:,} NaN/inf values (in {file.name}); "
                                  f"the checkpoint is corrupt, nothing was loaded")


@torch.no_grad()
def _read_into(model: DecoderLM, table, ckpt: CheckpointFiles, skip: set[str],
               placement: Placement, dtype: torch.dtype, progress: bool = True) -> None:
    our_shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    aliases = tied_aliases(model)
    # On one device, safetensors reads each tensor onto it directly; with a device map each
    # tensor is read on the CPU and moved to the device of the module it belongs to.
    read_on = placement.main if placement.device_map is None else torch.device("cpu")
    wanted = set(ckpt.tensors) - skip
    pending: dict = {}  # slices of one of our tensors (a `part` rule's), until all have come
    with progress_bar(f"loading {Path(ckpt.folder).name}", len(wanted), "tensor",
                      shown=progress) as tick:
        for file, name, tensor in experts.tensors(ckpt, wanted, read_on, finite_reader):
            ours, unmatched = hf_to_ours(table, {name: tensor}, our_shapes)
            if unmatched:  # check_tensors accepted it, so the table must map it
                raise CheckpointError(f"{file}: no mapping for tensor {name}")
            for our_name, part in ours.items():
                if isinstance(part, Part):
                    part = joined(pending, our_name, part)
                    if part is None:
                        continue
                if our_name not in aliases:
                    target = placement.storage(our_name)
                    assign(model, our_name, part.to(device=target, dtype=dtype).contiguous())
            del tensor, ours  # one tensor at a time
            tick()


def assign(model: nn.Module, name: str, tensor: torch.Tensor) -> None:
    """Replace parameter `name` (on meta) by `tensor`, keeping it a frozen nn.Parameter; a
    buffer (a router's correction bias) stays a buffer, in the dtype the model built it in."""
    module_name, _, leaf = name.rpartition(".")
    module = model.get_submodule(module_name)
    buffer = leaf in module._buffers
    old = module._buffers[leaf] if buffer else module._parameters[leaf]
    if tuple(old.shape) != tuple(tensor.shape):  # check_tensors makes this unreachable
        raise CheckpointError(f"{name}: shape {list(tensor.shape)}, expected {list(old.shape)}")
    if buffer:
        module._buffers[leaf] = tensor.to(old.dtype)
    else:
        module._parameters[leaf] = nn.Parameter(tensor, requires_grad=False)


def input_device(model: nn.Module) -> torch.device:
    """Where token ids go: the placement's main device, else the embedding's device."""
    placement = getattr(model, "placement", None)
    return placement.main if placement is not None else model.embed_tokens.weight.device
