"""Check a checkpoint's tensors against the model before reading any weight data.

The expected layout is computed, not listed: the model built on the meta device gives our
parameter names and shapes, and `ours_to_hf` turns them into the HF names and shapes a
checkpoint of this spec holds (fused and transposed as HF stores them). The comparison is then
in the names the user sees in the files: missing, unexpected and mis-shaped tensors.
"""

from __future__ import annotations

import torch
from torch import nn

from archscope.errors import CheckpointError
from archscope.weights.files import CheckpointFiles, listing
from archscope.weights.mapping import hf_to_ours, ours_to_hf


def unique_parameters(model: nn.Module) -> dict[str, torch.Tensor]:
    """Parameters by name, a tied one once (under its first name, the embedding)."""
    return dict(model.named_parameters())


def tied_aliases(model: nn.Module) -> set[str]:
    """Our names that are another parameter under a second name (a tied lm_head)."""
    return set(model.state_dict()) - set(unique_parameters(model))


def expected_hf_shapes(table, model: nn.Module) -> dict[str, tuple[int, ...]]:
    """HF tensor name -> shape for a checkpoint of `model` (built on any device, meta is best)."""
    meta = {k: torch.empty(p.shape, device="meta") for k, p in unique_parameters(model).items()}
    return {name: tuple(t.shape) for name, t in ours_to_hf(table, meta).items()}


def _alias_hf_names(table, model: nn.Module) -> set[str]:
    """HF names of tied aliases: a checkpoint may carry them (a copy of the embedding)."""
    shapes = dict(model.state_dict())
    meta = {k: torch.empty(shapes[k].shape, device="meta") for k in tied_aliases(model)}
    return set(ours_to_hf(table, meta))


def canonical_name(table, name: str, shape: tuple[int, ...], our_shapes: dict) -> str:
    """An older alias name (a table rule marked `alias`) as its current HF name."""
    ours, unmatched = hf_to_ours(table, {name: torch.empty(shape, device="meta")}, our_shapes)
    if unmatched or len(ours) != 1:
        return name
    (our_name, tensor), = ours.items()
    return next(iter(ours_to_hf(table, {our_name: tensor})), name)


def check_tensors(table, model: nn.Module, ckpt: CheckpointFiles) -> set[str]:
    """Raise CheckpointError listing every missing, unexpected and mis-shaped tensor.

    Returns the checkpoint names to skip while loading (tied copies of the embedding).
    """
    expected = expected_hf_shapes(table, model)
    our_shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    aliases = _alias_hf_names(table, model)
    found: dict[str, tuple[int, ...]] = {}
    unexpected, skip = [], set()
    for name, info in ckpt.tensors.items():
        key = name if name in expected else canonical_name(table, name, info.shape, our_shapes)
        if key in expected:
            found[key] = info.shape
        elif key in aliases:
            skip.add(name)
        else:
            unexpected.append(f"{name} {list(info.shape)} in {info.file.name}")
    missing = [f"{n} {list(s)}" for n, s in expected.items() if n not in found]
    wrong = [f"{n}: checkpoint {list(found[n])}, expected {list(s)}"
             for n, s in expected.items() if n in found and found[n] != s]
    problems = [(f"{len(missing)} missing", missing), (f"{len(unexpected)} unexpected", unexpected),
                (f"{len(wrong)} mis-shaped", wrong)]
    problems = [(label, items) for label, items in problems if items]
    if problems:
        parts = "; ".join(f"{label}: {listing(items)}" for label, items in problems)
        raise CheckpointError(f"{ckpt.folder}: the checkpoint does not match the model "
                              f"({len(expected)} tensors expected): {parts}")
    return skip
