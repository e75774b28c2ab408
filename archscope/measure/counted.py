"""Parameters counted on the built module (meta device: no memory is touched)."""

from __future__ import annotations

from torch import nn

from archscope.nn import build_model, count_parameters
from archscope.spec.schema import ModelSpec


def counted_params(spec: ModelSpec) -> int:
    """Unique parameters of the module built on the meta device."""
    return count_parameters(build_model(spec, device="meta"))


def module_rows(module: nn.Module, prefix: str = "") -> list[dict]:
    """One row per leaf module that owns parameters: name, kind, weight shapes, parameters."""
    rows = []
    for name, child in module.named_modules(prefix=prefix):
        own = list(child.named_parameters(recurse=False))
        if not own:
            continue
        shapes = ", ".join(f"{p}{list(t.shape)}" for p, t in own)
        rows.append({"module": name, "type": type(child).__name__, "shapes": shapes,
                     "weights": {p: list(t.shape) for p, t in own},
                     "params": sum(t.numel() for _, t in own)})
    return rows


def layer_module_rows(spec: ModelSpec) -> dict[tuple[int, ...], list[dict]]:
    """Module rows of each distinct layer structure, keyed by the layer indices that share it."""
    model = build_model(spec, device="meta")
    groups: dict[tuple, list[int]] = {}
    rows_of: dict[tuple, list[dict]] = {}
    for i, layer in enumerate(model.layers):
        rows = module_rows(layer)
        key = tuple((r["module"], r["type"], r["shapes"]) for r in rows)
        groups.setdefault(key, []).append(i)
        rows_of[key] = rows
    return {tuple(idx): rows_of[key] for key, idx in groups.items()}
