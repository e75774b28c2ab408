"""Check a checkpoint's tensors against the model before reading any weight data.

The expected layout is computed, not listed: the model built on the meta device gives our
parameter names and shapes, and `ours_to_hf` turns them into the HF names and shapes a
checkpoint of this spec holds (fused and transposed as HF stores them). The comparison is then
in the names the user sees in the files: missing, unexpected and mis-shaped tensors.
"""

from __future__ import annotations

import dataclasses
import re
import warnings

import torch
from torch import nn

from archscope.errors import CheckpointError
from archscope.spec.families.registry import find
from archscope.weights.files import CheckpointFiles, listing
from archscope.weights.mapping import Part, _regex, hf_to_ours, ours_to_hf


def unique_parameters(model: nn.Module) -> dict[str, torch.Tensor]:
    """What a checkpoint stores, by name: the parameters, a tied one once (under its first
    name, the embedding), and the persistent buffers (DeepSeek-V3's and GLM-4.5's router
    correction bias: not a parameter, but a tensor of the checkpoint, read and written)."""
    stored = model.state_dict(keep_vars=True)
    return {**dict(model.named_parameters()),
            **{k: b for k, b in model.named_buffers() if k in stored}}


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
    if isinstance(tensor, Part):  # an older name of a slice (Kimi's q/k/v_conv1d): the whole's
        if our_name not in our_shapes:
            return name
        tensor = torch.empty(our_shapes[our_name], device="meta")
    return next(iter(ours_to_hf(table, {our_name: tensor})), name)


def _is_part(table, name: str) -> bool:
    """Whether HF tensor `name` is a slice of one of ours (a `part` rule maps it)."""
    return any(rule.part is not None and _regex(rule).match(name) for rule in table)


def _slice_of(piece, whole) -> bool:
    """Whether shape `piece` is `whole` cut along one axis into equal slices."""
    differ = [i for i, (a, b) in enumerate(zip(piece, whole)) if a != b]
    return len(piece) == len(whole) and len(differ) == 1 and whole[differ[0]] % piece[differ[0]] == 0


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
            # a slice under an older name (a `part` alias) stands for the whole it fills
            found[key] = (expected[key] if key != name and _is_part(table, name)
                          and _slice_of(info.shape, expected[key]) else info.shape)
        elif key in aliases:
            skip.add(name)
        else:
            unexpected.append(f"{name} {list(info.shape)} in {info.file.name}")
    missing = [f"{n} {list(s)}" for n, s in expected.items() if n not in found]
    wrong = [f"{n}: checkpoint {list(found[n])}, expected {list(s)}"
             for n, s in expected.items() if n in found and found[n] != s]
    # weights are numbers with a fraction: an integer or boolean tensor (int16) is no weight of
    # any model archscope builds, and a cast would silently make one of it (MXFP4's packed
    # bytes are shown as the float tensor they encode, experts.merged_view)
    typed = [f"{name} is {info.dtype} in {info.file.name}" for name, info in ckpt.tensors.items()
             if name not in skip and not _floating(info.dtype)]
    problems = [(f"{len(missing)} missing", missing), (f"{len(unexpected)} unexpected", unexpected),
                (f"{len(wrong)} mis-shaped", wrong),
                (f"{len(typed)} not floating-point", typed)]
    problems = [(label, items) for label, items in problems if items]
    if problems:
        parts = "; ".join(f"{label}: {listing(items)}" for label, items in problems)
        raise CheckpointError(f"{ckpt.folder}: the checkpoint does not match the model "
                              f"({len(expected)} tensors expected): {parts}")
    return skip


def _floating(dtype: str) -> bool:
    """Whether a safetensors dtype ("F32", "BF16", "F8_E4M3") or a torch one ("torch.float16")
    is floating-point."""
    name = dtype.removeprefix("torch.").upper()
    return name.startswith(("F", "BF")) or name in ("HALF", "DOUBLE")


class SkippedMTPWarning(UserWarning):
    """A checkpoint's multi-token-prediction tensors were left unread (no model runs them)."""


def without_mtp(ckpt: CheckpointFiles, n_layers: int, mtp_layers: int) -> CheckpointFiles:
    """`ckpt` less the tensors of the MTP modules the spec declares (mtp_layers, HF
    num_nextn_predict_layers): DeepSeek-V3 and GLM-4.5 store them as decoder layers numbered
    after the model's, model.layers.<n_layers ...>.*. Neither transformers' class nor
    archscope's model builds them, so they are skipped with a SkippedMTPWarning; a layer past
    those stays unexpected (the check stays strict). Qwen3-Next stores them apart, under
    `mtp.*` (its class drops ^mtp.* on load): skipped the same way."""
    layer = re.compile(r"model\.layers\.(\d+)\.")
    mtp = [name for name in ckpt.tensors if (m := layer.match(name))
           and n_layers <= int(m[1]) < n_layers + mtp_layers
           or mtp_layers and name.startswith("mtp.")]
    if not mtp:
        return ckpt
    warnings.warn(SkippedMTPWarning(
        f"{ckpt.folder}: skipped {len(mtp):,} tensors of the {mtp_layers} multi-token-prediction "
        f"module(s) (model.layers.{n_layers}"
        f"{'' if mtp_layers == 1 else f'..{n_layers + mtp_layers - 1}'}.* or mtp.*), which the "
        "model does not run"), stacklevel=3)
    skipped = set(mtp)
    kept = {k: v for k, v in ckpt.tensors.items() if k not in skipped}
    return dataclasses.replace(ckpt, tensors=kept)


class SkippedVisionWarning(UserWarning):
    """A multimodal checkpoint's vision tensors were skipped: archscope builds the text model."""


def without_vision(ckpt: CheckpointFiles, model_type: str) -> CheckpointFiles:
    """`ckpt` less a multimodal wrapper's vision tower and projector (the family's
    `skipped_prefixes`, archscope/spec/families/), skipped with a SkippedVisionWarning:
    archscope models the text stack. Any other tensor the table does not know stays
    unexpected."""
    family = find(model_type)
    prefixes = family.skipped_prefixes if family else ()
    if not prefixes:
        return ckpt
    vision = [name for name in ckpt.tensors if name.startswith(prefixes)]
    if not vision:
        return ckpt
    warnings.warn(SkippedVisionWarning(
        f"{ckpt.folder}: skipped {len(vision):,} tensors of the {model_type} vision tower and "
        f"projector ({', '.join(p + '*' for p in prefixes)}); archscope builds the text model"),
        stacklevel=3)
    skipped = set(vision)
    kept = {k: v for k, v in ckpt.tensors.items() if k not in skipped}
    return dataclasses.replace(ckpt, tensors=kept)
