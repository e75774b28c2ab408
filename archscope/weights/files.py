"""What an HF checkpoint folder holds: its weight files and, per tensor, shape, dtype and file.

Reading the index costs no tensor data: safetensors headers give names, shapes and dtypes, so
the whole checkpoint is checked against the model before a single weight is read. Layouts:
`model.safetensors`, shards listed by `model.safetensors.index.json`, and (only when the caller
allows pickles) `pytorch_model.bin` / its shards / `*.pt`, read with `weights_only=True`.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import torch

from archscope.errors import CheckpointError

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


def _listed(folder: Path, index_name: str, single: str, pattern: str) -> tuple[Path, ...]:
    """The files an index lists (each must exist), else the single file, else any match."""
    index = folder / index_name
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            names = sorted(set(weight_map.values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise CheckpointError(f"{index}: not a valid index ({type(err).__name__}: {err}); "
                                  f"expected JSON with a 'weight_map' of tensor -> file") from None
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise CheckpointError(f"{index}: lists shard(s) that are not in the folder: "
                                  f"{', '.join(missing)}")
        return tuple(folder / n for n in names)
    if (folder / single).is_file():
        return (folder / single,)
    return tuple(sorted(folder.glob(pattern)))


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
    weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
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
