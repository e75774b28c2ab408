"""What an HF checkpoint folder holds: its weight files and, per tensor, shape, dtype and file.

Reading the index costs no tensor data: safetensors headers give names, shapes and dtypes, so
the whole checkpoint is checked against the model before a single weight is read. Layouts:
`model.safetensors`, shards listed by `model.safetensors.index.json`, and (only when the caller
allows pickles) `pytorch_model.bin` / its shards / `*.pt`, read with `weights_only=True`.
"""

from __future__ import annotations

import os
import pickle
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import torch

from archscope.errors import CheckpointError, InputError, quote
from archscope.reads import kind_of, read_json
from archscope.spec.limits import CHECKPOINT_JSON_BYTES_MAX, JSON_DEPTH_MAX

SAFETENSORS_INDEX = "model.safetensors.index.json"
try:
    from safetensors import SafetensorError
except ImportError:  # older safetensors: only the Rust module exports it
    from safetensors._safetensors_rust import SafetensorError
_READ_ERRORS = (SafetensorError, OSError, ValueError)
PICKLE_INDEX = "pytorch_model.bin.index.json"


@dataclass(frozen=True)
class TensorInfo:
    shape: tuple[int, ...]
    dtype: str
    file: Path


@dataclass(frozen=True)
class CheckpointFiles:
    folder: Path
    format: str  # "safetensors" or "pickle"
    files: tuple[Path, ...]
    tensors: dict[str, TensorInfo]

    @property
    def nbytes(self) -> int:
        return sum(p.stat().st_size for p in self.files)


def find_checkpoint(folder: str | Path, allow_pickle: bool = False) -> CheckpointFiles:
    """The folder's weight files and tensor index; CheckpointError for anything unusable."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: no such checkpoint folder")
    check_entries(folder)
    safetensors = _listed(folder, SAFETENSORS_INDEX, "model.safetensors", "*.safetensors")
    if safetensors:
        return CheckpointFiles(folder, "safetensors", safetensors, _safetensors_index(safetensors,
                                                                                    folder))
    pickles = _listed(folder, PICKLE_INDEX, "pytorch_model.bin", "*.bin") or \
        tuple(sorted(folder.glob("*.pt")))
    if not pickles:
        raise CheckpointError(f"{folder}: no weights found (expected model.safetensors, "
                              f"{SAFETENSORS_INDEX} with its shards, or *.safetensors)")
    if not allow_pickle:
        names = ", ".join(p.name for p in pickles[:3])
        raise CheckpointError(
            f"{folder}: only pickle weights ({names}); a pickle can run code when loaded, so "
            f"archscope reads safetensors only. Convert the checkpoint to safetensors, or pass "
            f"allow_pickle=True to read it with torch.load(weights_only=True)")
    return CheckpointFiles(folder, "pickle", pickles, _pickle_index(pickles))


def check_entries(folder: Path) -> None:
    """CheckpointError naming the first entry of `folder` that is neither a regular file nor a
    folder (a FIFO, a device, a socket, a broken link): transformers and safetensors would
    block on a FIFO or read a device without end. Only names, no contents, are looked at."""
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                mode = os.stat(entry.path).st_mode  # through links, as a reader would go
            except OSError:
                raise CheckpointError(f"{entry.path}: a broken link in the checkpoint folder; "
                                      f"remove it") from None
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise CheckpointError(f"{entry.path}: is {kind_of(mode)}; a checkpoint folder "
                                      f"holds regular files")


def read_index(index: Path) -> dict[str, str]:
    """An index file's weight_map (tensor name -> shard file name in the folder), checked."""
    try:
        data = read_json(index, CHECKPOINT_JSON_BYTES_MAX, JSON_DEPTH_MAX, "index")
    except InputError as err:
        raise CheckpointError(str(err)) from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise CheckpointError(f"{index}: not a valid index: expected a JSON object with a "
                              f"'weight_map' of tensor name -> file name, got "
                              f"{quote(weight_map if isinstance(data, dict) else data)}")
    for name, file in weight_map.items():
        if not isinstance(file, str) or not file or file != Path(file).name or \
                file in (".", ".."):
            raise CheckpointError(f"{index}: weight_map[{quote(name)}]: expected the name of a "
                                  f"file in the folder, got {quote(file)}")
    return weight_map


def _listed(folder: Path, index_name: str, single: str, pattern: str) -> tuple[Path, ...]:
    """The files an index lists (each must exist), else the single file, else any match."""
    index = folder / index_name
    if index.exists():
        names = sorted(set(read_index(index).values()))
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise CheckpointError(f"{index}: lists shard(s) that are not in the folder: "
                                  f"{listing(missing)}")
        return tuple(folder / n for n in names)
    if (folder / single).is_file():
        return (folder / single,)
    return tuple(p for p in sorted(folder.glob(pattern)) if p.is_file())


def _safetensors_index(files: tuple[Path, ...], folder: Path) -> dict[str, TensorInfo]:
    from safetensors import safe_open

    out: dict[str, TensorInfo] = {}
    for file in files:
        try:
            with safe_open(file, framework="pt", device="cpu") as handle:
                for name in handle.keys():
                    part = handle.get_slice(name)
                    info = TensorInfo(tuple(part.get_shape()), part.get_dtype(), file)
                    _add(out, name, info)
        except _READ_ERRORS as err:
            raise corrupt(file, err) from None
    _check_index_agrees(folder / SAFETENSORS_INDEX, out)
    return out


def _check_index_agrees(index: Path, tensors: dict[str, TensorInfo]) -> None:
    """An index that names a tensor its shard lacks is a half-copied checkpoint."""
    if not index.is_file():
        return
    weight_map = read_index(index)
    wrong = [f"{name} (index says {file}, "
             f"{'found in ' + tensors[name].file.name if name in tensors else 'in no shard'})"
             for name, file in weight_map.items()
             if name not in tensors or tensors[name].file.name != file]
    if wrong:
        raise CheckpointError(f"{index}: the index and the shards disagree: "
                              f"{listing(wrong)}")


def _pickle_index(files: tuple[Path, ...]) -> dict[str, TensorInfo]:
    out: dict[str, TensorInfo] = {}
    for file in files:
        for name, tensor in _load_pickle(file).items():
            _add(out, name, TensorInfo(tuple(tensor.shape), str(tensor.dtype), file))
    return out


def _add(out: dict, name: str, info: TensorInfo) -> None:
    if name in out:
        raise CheckpointError(f"tensor {name} is in both {out[name].file.name} and "
                              f"{info.file.name}")
    out[name] = info


def _load_pickle(file: Path) -> dict[str, torch.Tensor]:
    """torch.load with weights_only=True (no code runs); memory-mapped when the format allows."""
    try:
        try:
            data = torch.load(file, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as err:
            if "mmap" not in str(err):
                raise
            data = torch.load(file, map_location="cpu", weights_only=True)  # legacy format
    except pickle.UnpicklingError as err:
        raise CheckpointError(f"{file}: refused: it holds objects other than tensors, which "
                              f"torch.load(weights_only=True) will not build (a pickle can run "
                              f"code): {_first_line(err)}") from None
    except Exception as err:
        raise corrupt(file, err) from None
    if not isinstance(data, dict) or not all(isinstance(t, torch.Tensor) for t in data.values()):
        raise CheckpointError(f"{file}: expected a mapping of tensor names to tensors")
    return data


def read_tensors(ckpt: CheckpointFiles, file: Path, names: set[str],
                 device: str | torch.device = "cpu") -> Iterator[tuple[str, torch.Tensor]]:
    """The tensors `names` of one file, read one at a time onto `device` (safetensors reads
    each straight from the file; a pickle is memory-mapped where its format allows)."""
    if ckpt.format == "pickle":
        yield from ((k, t) for k, t in _load_pickle(file).items() if k in names)
        return
    from safetensors import safe_open

    try:
        handle = safe_open(file, framework="pt", device=str(device))
    except _READ_ERRORS as err:
        raise corrupt(file, err) from None
    with handle:
        for name in handle.keys():
            if name in names:
                yield name, _get(handle, name, file)


def _get(handle, name: str, file: Path) -> torch.Tensor:
    try:
        return handle.get_tensor(name)
    except _READ_ERRORS as err:
        raise corrupt(file, err) from None


def corrupt(file: Path, err: Exception) -> CheckpointError:
    return CheckpointError(f"{file}: cannot read it: truncated or corrupt "
                           f"({type(err).__name__}: {_first_line(err)}). Copy or download the "
                           f"file again")


def _first_line(err: Exception) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else ""


def listing(items: list[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
