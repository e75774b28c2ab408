"""`profile --tp/--ep --weights DIR`: each rank fills its shards from the HF checkpoint, reading
from the safetensors files only the slices it holds where the file's tensor maps onto one
sharded parameter by a rename (or GPT-2's transpose).

A tensor that needs more than that to become ours (a fused q/k/v split into three, per-expert
tensors stacked into one, MXFP4 blocks decoded, an interleaved layout) is read whole, made
ours, and then cut to this rank's part: the record's `checkpoint_bytes_read` says what each rank
read, beside the bytes it holds. Where each rank's part starts and ends is asked of DTensor
itself (an index tensor sharded the way the parameter is), so the slices are DTensor's own.
The checks that read no tensor data (folder, config, every name and shape) are
weights.loader.open_checkpoint's, run by the CLI before any process starts and again here.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.distributed.tensor import DTensor, Shard, distribute_tensor

from archscope.errors import CheckpointError
from archscope.weights import experts
from archscope.weights.files import corrupt
from archscope.weights.loader import check_finite, finite_reader, open_checkpoint
from archscope.weights.mapping import Part, hf_to_ours, joined, route
from archscope.weights.validate import tied_aliases


def _local_range(param: DTensor, dim: int) -> tuple[int, int]:
    """[start, stop) along `dim` of the global tensor that this rank's part of `param` holds."""
    index = torch.arange(param.shape[dim], device=param.device_mesh.device_type)
    mine = distribute_tensor(index, param.device_mesh, [Shard(0)], src_data_rank=None)
    mine = mine.to_local()
    return (int(mine[0]), int(mine[-1]) + 1) if mine.numel() else (0, 0)


def _shard_dim(param) -> int | None:
    """The one dimension a DTensor parameter is split along; None for a whole tensor."""
    if not isinstance(param, DTensor):
        return None
    dims = [p.dim for p in param.placements if isinstance(p, Shard)]
    return dims[0] if dims else None


def _slice_plan(opened, params: dict) -> dict[str, tuple[str, int, int, int, bool]]:
    """HF name -> (our name, HF dim, start, stop, transposed) for the tensors read as slices."""
    plain = set(opened.ckpt.tensors) - set(getattr(opened.ckpt, "pieces", {})) \
        - set(getattr(opened.ckpt, "packed", {})) - set(getattr(opened.ckpt, "renamed", {})
                                                        .values())
    shapes = {name: tuple(p.shape) for name, p in params.items()}
    out = {}
    for name in plain - opened.skip:
        routed = route(opened.table, name, shapes)
        if routed is None:  # check_tensors refuses such a file; read whole, it is named there
            continue
        rule, targets = routed
        dim = _shard_dim(params.get(targets[0])) if len(targets) == 1 else None
        if dim is None or rule.layout is not None or rule.part is not None:
            continue
        transposed = rule.conv1d and len(opened.ckpt.tensors[name].shape) == 2
        start, stop = _local_range(params[targets[0]], dim)
        out[name] = (targets[0], 1 - dim if transposed else dim, start, stop, transposed)
    return out


def _expert_pieces(opened, params: dict) -> tuple[dict, set[str]]:
    """Per-expert checkpoints (experts.merged_view's pieces) under expert parallelism: source
    name -> (our name, local expert, row slice) for this rank's experts only, and the fused
    names so covered (the other ranks' experts are not read at all)."""
    shapes = {name: tuple(p.shape) for name, p in params.items()}
    out, covered = {}, set()
    for fused, pieces in getattr(opened.ckpt, "pieces", {}).items():
        routed = route(opened.table, fused, shapes)
        if routed is None:
            continue
        rule, targets = routed
        if len(targets) != 1 or rule.layout is not None or _shard_dim(params[targets[0]]) != 0:
            continue
        first, stop = _local_range(params[targets[0]], 0)
        for piece in pieces:
            if first <= piece.expert < stop:
                rows = piece.info.shape[0]
                out[piece.source] = (targets[0], piece.expert - first,
                                     slice(piece.half * rows, (piece.half + 1) * rows),
                                     piece.info.file)
        covered.add(fused)
    return out, covered


def _read_slice(handle, name: str, dim: int, start: int, stop: int) -> torch.Tensor:
    part = handle.get_slice(name)
    index = tuple(slice(start, stop) if d == dim else slice(None)
                  for d in range(len(part.get_shape())))
    return part[index]


@torch.no_grad()
def load_shards(model, folder: str | Path, spec, dtype: torch.dtype) -> int:
    """Fill `model` (sharded by styles.shard_model, allocated by to_empty) from `folder`;
    the bytes this rank read from the files."""
    from safetensors import safe_open

    opened = open_checkpoint(folder, spec, dtype)
    if opened.ckpt.format != "safetensors":
        raise CheckpointError(f"{folder}: sharded runs read safetensors only")
    params = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    aliases = tied_aliases(model)
    sliced, read = _slice_plan(opened, params), 0
    pieces, assembled = _expert_pieces(opened, params)

    filled: set[str] = set()

    def put(our_name: str, tensor: torch.Tensor) -> None:
        if our_name in aliases:
            return
        filled.add(our_name)
        target = params[our_name]
        if isinstance(target, DTensor):
            target = target.to_local()
            if tuple(tensor.shape) != tuple(target.shape):  # a whole tensor: keep our part
                tensor = distribute_tensor(tensor.to(target.device), params[our_name]
                                           .device_mesh, params[our_name].placements,
                                           src_data_rank=None).to_local()
        target.copy_(tensor)

    for file in opened.ckpt.files:
        names = [n for n in sliced if opened.ckpt.tensors[n].file == file] + \
            [n for n, piece in pieces.items() if piece[-1] == file]
        if not names:
            continue
        try:
            handle = safe_open(file, framework="pt", device="cpu")
        except OSError as err:
            raise corrupt(file, err) from None
        with handle:
            for name in names:
                if name in sliced:
                    our_name, dim, start, stop, transposed = sliced[name]
                    part = _read_slice(handle, name, dim, start, stop)
                else:
                    part = handle.get_tensor(name)
                check_finite(name, part, file)
                read += part.numel() * part.element_size()
                if name in sliced:
                    put(our_name, part.t() if transposed else part)
                else:
                    our_name, expert, rows, _ = pieces[name]
                    params[our_name].to_local()[expert, rows].copy_(part)
                    filled.add(our_name)
    def counted(ckpt, file, names, device):  # the bytes as they come off the file
        nonlocal read
        for name, tensor in finite_reader(ckpt, file, names, device):
            read += tensor.numel() * tensor.element_size()
            yield name, tensor

    whole = set(opened.ckpt.tensors) - opened.skip - set(sliced) - assembled
    shapes = {name: tuple(p.shape) for name, p in params.items()}
    pending: dict = {}  # a `part` rule's slices of one of ours, until all have come
    for _, name, tensor in experts.tensors(opened.ckpt, whole, torch.device("cpu"), counted):
        ours, unmatched = hf_to_ours(opened.table, {name: tensor}, shapes)
        if unmatched:  # check_tensors accepted it, so the table must map it
            raise CheckpointError(f"{folder}: no mapping for tensor {name}")
        for our_name, part in ours.items():
            if isinstance(part, Part):
                part = joined(pending, our_name, part)
            if part is not None:
                put(our_name, part)
    # to_empty left every shard uninitialised: one the checkpoint did not fill would be garbage
    left = set(model.state_dict()) - aliases - filled
    if left:  # check_tensors makes this unreachable
        raise CheckpointError(f"{folder}: no weights were read for {', '.join(sorted(left)[:5])}")
    model.tie_weights()
    return read
