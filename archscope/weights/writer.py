"""Write a random-init checkpoint in HF's own format, so the real-weights path can be tried
(and tested) without downloading anything.

The folder holds what an HF model folder holds: config.json (archscope.spec.hf), the weights as
safetensors under their HF names (`ours_to_hf`; a tied lm_head is not stored, as HF does),
sharded with `model.safetensors.index.json` when larger than one shard, generation_config.json
with the end-of-sequence ids, and a small trained tokenizer with a chat template. The target is
checked first (archscope.writes); everything is written into a temporary folder beside it and
renamed into place at the end, so a failed, interrupted (Ctrl-C) or terminated (SIGTERM) run
leaves nothing half-written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import torch

from archscope.errors import InputError, quote
from archscope.spec import ModelSpec
from archscope.interrupts import cleanup_on_signals, signals_deferred
from archscope.writes import check_destination, remove_stale, write_error

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
DEFAULT_TOKENIZER_VOCAB = 4096  # the built-in text yields fewer merges; it is the upper bound


def parse_size(text: str | int) -> int:
    """'5GB', '500MB', '2GiB' or a plain byte count -> bytes (InputError otherwise)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(text))
    unit = m and _UNITS.get(m[2].upper())
    if not unit or float(m[1]) * unit < 1:
        raise InputError(f"shard_size {quote(text)}: expected a size like 5GB, 500MB or 2GiB")
    return int(float(m[1]) * unit)


def check_target(folder: str | Path, force: bool) -> Path:
    """Refuse, before any work, a folder that cannot (or must not) receive the checkpoint."""
    folder = check_destination(folder, "checkpoint folder")
    if folder.is_symlink():  # the swap into place would replace the link, not its folder
        raise InputError(f"checkpoint folder {folder}: is a symbolic link; give the folder it "
                         f"points to")
    if folder.is_dir():  # it is staged beside itself, then swapped in: its parent is written
        check_destination(folder.absolute().parent, "folder holding the checkpoint")
        if any(folder.iterdir()) and not force:
            raise InputError(f"{folder}: not empty; choose a new folder or pass force=True to "
                             f"replace its contents")
    return folder


def write_checkpoint(spec: ModelSpec, folder: str | Path, *, dtype: torch.dtype = torch.bfloat16,
                     seed: int = 0, shard_size: int = 5 * 10**9, device: str = "cpu",
                     force: bool = False, progress: Callable[[str], None] | None = None) -> dict:
    """Write the checkpoint; returns a summary (files, tensors, bytes, tokenizer vocab).
    `progress(label)` is called after each step: each layer's weights drawn ("layer k/n"),
    each shard written (its file name), the tokenizer trained.

    The folder is checked before anything is built; everything is written into a hidden
    `.NAME.PID-XXXXXX.partial` folder beside it, removed on any failure, Ctrl-C or SIGTERM; an
    OSError while writing (a full disk...) is an InputError naming the folder."""
    folder = check_target(folder, force)
    from archscope.nn.build import build_model
    from archscope.spec.hf import spec_to_hf_config
    from archscope.weights.placement import plan, weights_bytes
    from archscope.weights.tokenizer_train import MIN_VOCAB

    if spec.vocab_size < MIN_VOCAB:
        raise InputError(f"vocab_size {spec.vocab_size}: make-checkpoint's byte-level tokenizer "
                         f"needs at least {MIN_VOCAB} ids (256 bytes and special tokens)")
    model_type = spec_to_hf_config(spec)["model_type"]  # fails early if HF cannot hold it
    meta = build_model(spec, "meta", dtype)
    plan(meta, device)  # memory check before materialising
    _check_disk(folder, weights_bytes(meta))
    parent = folder.resolve().parent
    remove_stale(parent, folder.name, "partial")  # what a killed run left
    tmp = parent / f".{folder.name}.{os.getpid()}-{secrets.token_hex(3)}.partial"
    made: list[Path] = []
    with cleanup_on_signals() as guard, _write_errors(folder):
        try:
            _make_folders(parent, made)
            tmp.mkdir(mode=0o700)
            tick = progress or (lambda _label: None)
            model = build_model(spec, device, dtype, seed, progress=tick)
            summary = _write_all(spec, model_type, tmp, model, shard_size, tick)
            del model
            _usual_permissions(tmp)
            guard.check()
            with signals_deferred():
                _move_into_place(tmp, folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            for made_folder in reversed(made):
                with contextlib.suppress(OSError):
                    made_folder.rmdir()
            raise
    return {"folder": str(folder), "model_type": model_type, **summary}


@contextlib.contextmanager
def _write_errors(folder: Path):
    """OSError (and safetensors' I/O errors) while writing -> InputError naming `folder`."""
    from safetensors import SafetensorError

    try:
        yield
    except OSError as err:
        raise write_error(err, folder) from err
    except SafetensorError as err:
        if "I/O error" not in str(err):
            raise
        raise InputError(f"cannot write {folder}: {err}; nothing was written there") from err


def _make_folders(folder: Path, made: list[Path]) -> None:
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    for p in reversed(missing):
        p.mkdir(exist_ok=True)
        made.append(p)


def _write_all(spec: ModelSpec, model_type: str, out: Path, model, shard_size: int,
               tick: Callable[[str], None]) -> dict:
    from archscope.spec.hf import write_hf_config
    from archscope.weights.mapping import ours_to_hf, table_for
    from archscope.weights.tokenizer_train import end_ids, train_tokenizer
    from archscope.weights.validate import unique_parameters

    write_hf_config(spec, out)
    tensors = ours_to_hf(table_for(model_type), unique_parameters(model))
    files = write_shards(tensors, out, shard_size, tick)
    count = len(tensors)
    del tensors, model
    tokenizer = train_tokenizer(min(spec.vocab_size, DEFAULT_TOKENIZER_VOCAB))
    tick("tokenizer")
    tokenizer.save_pretrained(str(out))
    generation = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": end_ids(tokenizer),
                  "do_sample": False}
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    return {"files": files, "tensors": count,
            "bytes": sum((out / f).stat().st_size for f in files),
            "tokenizer_vocab": len(tokenizer)}


def write_shards(tensors: dict[str, torch.Tensor], out: Path, shard_size: int,
                 tick: Callable[[str], None] = lambda _label: None) -> list[str]:
    """Safetensors files of at most `shard_size` bytes (a larger tensor gets a file of its
    own), layer by layer; an index when there is more than one. Returns the file names."""
    from safetensors.torch import save_file

    shards = shard_groups(tensors, shard_size)
    n = len(shards)
    files = ["model.safetensors"] if n == 1 else \
        [f"model-{k + 1:05d}-of-{n:05d}.safetensors" for k in range(n)]
    for file, names in zip(files, shards):  # one shard's tensors on the CPU at a time
        save_file({k: tensors[k].detach().to("cpu").contiguous() for k in names}, out / file,
                  metadata={"format": "pt"})
        tick(file)
    if n > 1:
        index = {"metadata": {"total_size": sum(t.numel() * t.element_size()
                                                for t in tensors.values())},
                 "weight_map": {k: f for f, names in zip(files, shards) for k in names}}
        (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    return files


def shard_groups(tensors: dict[str, torch.Tensor], shard_size: int) -> list[list[str]]:
    """The tensor names of each shard, layer by layer: at most `shard_size` bytes each (a
    larger tensor gets a shard of its own). Shapes and dtypes only: meta tensors do."""
    shards: list[list[str]] = [[]]
    size = 0
    for name in sorted(tensors, key=_layer_order):
        nbytes = tensors[name].numel() * tensors[name].element_size()
        if shards[-1] and size + nbytes > shard_size:
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += nbytes
    return shards


def progress_units(spec: ModelSpec, dtype: torch.dtype, shard_size: int) -> int:
    """How many times `write_checkpoint` calls its progress callback: each layer drawn, each
    shard written, the tokenizer (counted on the meta device: nothing is allocated)."""
    from archscope.nn.build import build_model
    from archscope.spec.hf import spec_to_hf_config
    from archscope.weights.mapping import ours_to_hf, table_for
    from archscope.weights.validate import unique_parameters

    meta = build_model(spec, "meta", dtype)
    table = table_for(spec_to_hf_config(spec)["model_type"])
    shards = shard_groups(ours_to_hf(table, unique_parameters(meta)), shard_size)
    return len(meta.layers) + len(shards) + 1


def _layer_order(name: str):
    m = re.search(r"\.(\d+)\.", name)
    return (int(m[1]) if m else (-1 if "embed" in name or "wte" in name or "wpe" in name
                                 else 1 << 30), name)


def _check_disk(folder: Path, need: int) -> None:
    probe = next((p for p in [folder, *folder.resolve().parents] if p.exists()), Path("/"))
    free = shutil.disk_usage(probe).free
    if need * 1.05 > free:
        raise InputError(f"{folder}: the weights need {need / 1e9:,.2f} GB on disk but only "
                         f"{free / 1e9:,.2f} GB is free there; nothing was written")


def _usual_permissions(folder: Path) -> None:
    """Temporary files are private (0600/0700); the checkpoint gets the umask's usual modes."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(folder, 0o777 & ~umask)
    for path in folder.iterdir():
        os.chmod(path, 0o666 & ~umask)


def _move_into_place(tmp: Path, folder: Path) -> None:
    """Rename the finished folder into place; an existing (empty, or force=True) one goes after
    (and is put back if the swap fails)."""
    if not folder.exists():
        os.rename(tmp, folder)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".old", dir=tmp.parent))
    try:
        os.rename(folder, old / "previous")
    except BaseException:
        old.rmdir()
        raise
    try:
        os.rename(tmp, folder)
    except BaseException:
        os.rename(old / "previous", folder)
        old.rmdir()
        raise
    shutil.rmtree(old, ignore_errors=True)
