"""Per-expert MoE checkpoints -> the fused 3-D expert tensors archscope and transformers 5 use.

Mixtral and DeepSeek-V2 as published (and anything saved by transformers < 5) store one 2-D
tensor per expert and projection, e.g. `...experts.7.w1.weight`. The weight tables name the
fused layout (`experts.gate_up_proj` [E, 2*d_expert, d], gate rows first, and
`experts.down_proj` [E, d, d_expert]), so this module presents a per-expert checkpoint as the
fused one: `merged_view` rewrites the tensor index (each fused tensor's shape from its pieces),
and `tensors` assembles each fused tensor while reading, one layer's experts at a time, into a
buffer on the target device. The per-expert names are the family's (`per_expert` and
`renamed_tensors` in archscope/spec/families/), found by the config's model_type like the tables.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import torch

from archscope.errors import CheckpointError
from archscope.spec.families.registry import weight_family
from archscope.weights import mxfp4
from archscope.weights.files import CheckpointFiles, TensorInfo, listing

@dataclass(frozen=True)
class Piece:
    source: str  # the per-expert tensor's name in the file
    expert: int
    half: int
    halves: int
    info: TensorInfo  # the piece's own shape, dtype and file


@dataclass(frozen=True)
class MergedCheckpoint(CheckpointFiles):
    pieces: dict = dataclasses.field(default_factory=dict)  # fused name -> [Piece]
    renamed: dict = dataclasses.field(default_factory=dict)  # source name -> current name
    packed: dict = dataclasses.field(default_factory=dict)  # name -> (NAME_blocks, NAME_scales)


def _regex(pattern: str) -> re.Pattern:
    return re.compile(re.escape(pattern).replace(r"\{i\}", r"(?P<i>\d+)")
                      .replace(r"\{j\}", r"(?P<j>\d+)") + "$")


def merged_view(ckpt: CheckpointFiles, model_type: str) -> CheckpointFiles:
    """`ckpt` with per-expert tensors shown as fused ones and MXFP4 pairs (NAME_blocks and
    NAME_scales, gpt-oss's experts) as the float tensor NAME they encode (unchanged when it has
    neither)."""
    packed = mxfp4.packed_pairs(ckpt.tensors)
    family = weight_family(model_type)
    rules = [(_regex(src), dst, half, n) for src, dst, half, n in
             (family.per_expert if family else ())]
    renames = [(_regex(src), dst) for src, dst in (family.renamed_tensors if family else ())]
    tensors, pieces, renamed = {}, {}, {}
    in_pairs = {source for pair in packed.values() for source in pair}
    for name, info in ckpt.tensors.items():
        if name in in_pairs:
            continue
        hit = next(((m, dst, half, n) for rx, dst, half, n in rules if (m := rx.match(name))), None)
        if hit is not None:
            m, dst, half, n = hit
            target = dst.replace("{i}", m["i"])
            pieces.setdefault(target, []).append(Piece(name, int(m["j"]), half, n, info))
            continue
        rename = next((dst.replace("{i}", m.groupdict().get("i") or "")  # (a name without {i})
                       for rx, dst in renames if (m := rx.match(name))), None)
        if rename is not None:
            renamed[name] = rename
        tensors[rename or name] = info
    if not pieces and not renamed and not packed:
        return ckpt
    for target, (blocks, _) in packed.items():
        info = ckpt.tensors[blocks]
        tensors[target] = TensorInfo(mxfp4.dequantised_shape(info.shape), "F32", info.file)
    for target, parts in pieces.items():
        tensors[target] = _fused_info(target, parts, ckpt.tensors)
    return MergedCheckpoint(ckpt.folder, ckpt.format, ckpt.files, tensors, pieces, renamed,
                            packed)


def _fused_info(target: str, parts: list[Piece], infos: dict) -> TensorInfo:
    """The fused tensor's shape, after checking every expert has every piece, alike in shape."""
    n_experts, halves = max(p.expert for p in parts) + 1, parts[0].halves
    have = {(p.expert, p.half) for p in parts}
    missing = [f"expert {e}{' (' + ('gate', 'up')[h] + ')' if halves == 2 else ''}"
               for e in range(n_experts) for h in range(halves) if (e, h) not in have]
    shapes = {infos[p.source].shape for p in parts}
    if missing or len(shapes) != 1 or len(next(iter(shapes))) != 2:
        problem = (f"missing {listing(missing)}" if missing else
                   f"pieces of different shapes {sorted(map(list, shapes))}")
        raise CheckpointError(f"{target}: cannot assemble it from per-expert tensors "
                              f"(e.g. {parts[0].source}): {problem}")
    rows, cols = next(iter(shapes))
    first = infos[parts[0].source]
    return TensorInfo((n_experts, halves * rows, cols), first.dtype, first.file)


Reader = Callable[[CheckpointFiles, Path, set, torch.device], Iterator[tuple[str, torch.Tensor]]]


def tensors(ckpt: CheckpointFiles, wanted: set[str], device: torch.device, reader: Reader
            ) -> Iterator[tuple[Path, str, torch.Tensor]]:
    """(file, name, tensor) for every wanted tensor, fused ones assembled as their pieces come."""
    pieces = getattr(ckpt, "pieces", {})
    renamed = getattr(ckpt, "renamed", {})
    packed = {t: pair for t, pair in getattr(ckpt, "packed", {}).items() if t in wanted}
    halves = {source: target for target, pair in packed.items() for source in pair}
    by_source = {p.source: (target, p) for target, ps in pieces.items() if target in wanted
                 for p in ps}
    sources = (wanted - set(pieces) - set(renamed.values()) - set(packed)) | set(by_source) | \
        {src for src, dst in renamed.items() if dst in wanted} | set(halves)
    read: dict[str, torch.Tensor] = {}  # MXFP4 halves waiting for their other half
    buffers: dict[str, list] = {}  # fused name -> [tensor, pieces still to come]
    for file in ckpt.files:
        for name, tensor in reader(ckpt, file, sources, device):
            if name in halves:
                read[name] = tensor
                target = halves[name]
                blocks, scales = packed[target]
                if blocks in read and scales in read:
                    yield file, target, mxfp4.dequantise(read.pop(blocks), read.pop(scales))
                continue
            if name not in by_source:
                yield file, renamed.get(name, name), tensor
                continue
            target, p = by_source[name]
            if target not in buffers:
                shape = ckpt.tensors[target].shape
                buffers[target] = [tensor.new_empty(shape), len(pieces[target])]
            buf = buffers[target]
            rows = tensor.shape[0]
            buf[0][p.expert, p.half * rows:(p.half + 1) * rows].copy_(tensor)
            buf[1] -= 1
            if buf[1] == 0:
                yield file, target, buffers.pop(target)[0]
