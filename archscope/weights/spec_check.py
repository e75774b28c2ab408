"""The spec of a checkpoint folder, and the check that a given spec describes the same network.

A preset and a config.json may spell one network differently (a `layers` override versus a
top-level key, a default left out), so both sides are compared resolved: every key that shapes
the network, per layer, with defaults filled in. The first differences are reported by key with
both values, e.g. "attention.n_kv_heads: llama-3.2-1b has 8, the checkpoint's config.json has 4".
"""

from __future__ import annotations

import math
from pathlib import Path

from archscope.errors import CheckpointError, InputError, quote
from archscope.reads import check_regular, read_json
from archscope.spec import ModelSpec
from archscope.spec.families.registry import find
from archscope.spec.hf_keys import JSON_BYTES_MAX
from archscope.spec.limits import JSON_DEPTH_MAX
from archscope.spec.resolved import resolved


def config_path(folder: str | Path) -> Path:
    path = Path(folder) / "config.json"
    if not path.exists():
        raise CheckpointError(f"{folder}: no config.json: an HF checkpoint folder holds its "
                              f"config.json beside the weights")
    check_regular(path, "config.json")  # a FIFO would block its reader
    return path


def model_type(folder: str | Path) -> str:
    """The config.json's model_type (it picks the weight-name table), as the transformers type
    whose class the file names when transformers registers none (Kimi K2: deepseek_v3)."""
    path = config_path(folder)
    data = read_json(path, JSON_BYTES_MAX, JSON_DEPTH_MAX, "config.json")
    found = data.get("model_type") if isinstance(data, dict) else None
    if not isinstance(found, str):
        raise CheckpointError(f"{path}: model_type: expected the name of a transformers model "
                              f"type, got {quote(found)}")
    family = find(found)
    return family.class_of or found if family is not None else found


# quantization methods whose checkpoints the loader turns into float weights (weights/mxfp4.py)
DEQUANTISED = ("mxfp4",)


def check_not_packed(folder: str | Path) -> None:
    """CheckpointError naming quantization_config.quant_method when transformers would load the
    folder through a quantizer archscope has no reader for: its tensors are packed (BitNet's
    ternary: uint8, four weights a byte, a weight_scale per tensor) and its forward quantized,
    so no float model of the same network loads from it."""
    path = config_path(folder)
    try:
        quant = read_json(path, JSON_BYTES_MAX, JSON_DEPTH_MAX, "config.json").get(
            "quantization_config")
    except (InputError, OSError, ValueError, AttributeError):
        return  # model_type() and the spec's own read name what is wrong with the file
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    if method is not None and method not in DEQUANTISED:
        raise CheckpointError(f"{path}: quantization_config.quant_method is {method!r}: its "
                              "tensors are stored packed for transformers' quantizer (and its "
                              "forward quantizes), which archscope does not read; it loads "
                              f"float checkpoints ({', '.join(DEQUANTISED)} is dequantised). "
                              "The format's size: archscope fit --weight-format")


def folder_spec(folder: str | Path) -> ModelSpec:
    from archscope.spec import load_spec

    return load_spec(config_path(folder))


def check_same_network(given: ModelSpec, found: ModelSpec, where: str) -> None:
    """InputError naming each differing key and both values, when the networks differ."""
    ours, theirs = resolved(given), resolved(found)
    common = min(given.n_layers, found.n_layers)  # extra layers: n_layers already differs
    diffs: dict[str, list] = {}
    for key in dict.fromkeys([*ours, *theirs]):
        if key[1] is not None and key[1] >= common:
            continue
        a, b = ours.get(key), theirs.get(key)
        if not _same(a, b):
            name, layer = key
            diffs.setdefault(name, []).append((layer, a, b))
    if not diffs:
        return
    lines = [_describe(name, rows, given.name, common) for name, rows in diffs.items()]
    shown = "; ".join(lines[:6]) + (f"; and {len(lines) - 6} more" if len(lines) > 6 else "")
    raise InputError(f"{where} describes a different network than {given.name}: {shown}. "
                     f"Pass spec=None to use the checkpoint's own config, or fix the overrides")


def _describe(name: str, rows: list, given: str, n_layers: int) -> str:
    layer, a, b = rows[0]
    at = ""
    if layer is not None and len(rows) < n_layers:
        at = f" (layer{'s' if len(rows) > 1 else ''} {', '.join(str(r[0]) for r in rows[:5])}" \
             f"{', ...' if len(rows) > 5 else ''})"
    return f"{name}{at}: {given} has {_show(a)}, the checkpoint's config.json has {_show(b)}"


def _show(value) -> str:
    return "nothing" if value is None else repr(value)


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return (isinstance(a, (int, float)) and isinstance(b, (int, float))
                and math.isclose(a, b, rel_tol=1e-9))
    return a == b


