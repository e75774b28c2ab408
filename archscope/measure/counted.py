"""Parameters and module tables counted on the built module (meta device: no memory is
touched), to check what the spec alone says (estimate/params.py, estimate/structure.py)."""

from __future__ import annotations

from torch import nn

from archscope.estimate.structure import layer_module_rows
from archscope.nn import build_model, count_parameters
from archscope.spec.schema import ModelSpec


def counted_params(spec: ModelSpec) -> int:
    """Unique parameters of the module built on the meta device."""
    return count_parameters(build_model(spec, device="meta"))


def module_rows(module: nn.Module, prefix: str = "") -> list[dict]:
    """One row per module that owns parameters: name, kind, weight shapes, parameters."""
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


def built_layer_module_rows(model: nn.Module) -> dict[tuple[int, ...], list[dict]]:
    """Module rows of each distinct layer structure of a built model, keyed by the layer
    indices that share it."""
    groups: dict[tuple, list[int]] = {}
    rows_of: dict[tuple, list[dict]] = {}
    for i, layer in enumerate(model.layers):
        rows = module_rows(layer)
        key = tuple((r["module"], r["type"], r["shapes"]) for r in rows)
        groups.setdefault(key, []).append(i)
        rows_of[key] = rows
    return {tuple(idx): rows_of[key] for key, idx in groups.items()}


def module_table_differences(spec: ModelSpec, model: nn.Module | None = None) -> list[str]:
    """Where the spec-derived module tables (estimate.structure.layer_module_rows) differ from
    the module built on meta (built here unless given): one line per difference, [] if none."""
    model = build_model(spec, device="meta") if model is None else model
    ours, built = layer_module_rows(spec), built_layer_module_rows(model)
    if list(ours) != list(built):
        return [f"layer groups differ: from the spec {list(ours)}, built {list(built)}"]
    out = []
    for layers, rows in ours.items():
        theirs = built[layers]
        for mine, real in zip(rows, theirs):
            if mine != real:
                out.append(f"layer {layers[0]}: from the spec {mine}, built {real}")
        if len(rows) != len(theirs):
            extra = rows[len(theirs):] or theirs[len(rows):]
            out.append(f"layer {layers[0]}: {len(rows)} modules from the spec, {len(theirs)} "
                       f"built; unmatched: {[r['module'] for r in extra]}")
    return out


def verify_structure(spec: ModelSpec) -> tuple[int, list[str]]:
    """Build on meta once: (its counted parameters, module_table_differences)."""
    model = build_model(spec, device="meta")
    return count_parameters(model), module_table_differences(spec, model)
