"""HF config.json -> spec mapping, for every model type a family module declares
(archscope/spec/families/), each read as its difference from a base family (the other direction
is `hf_export`; `hf` re-exports both).

The JSON is read as data (no code, no network). Every key a reader uses is checked (type and
range, `hf_keys.Keys`) before anything is built from it, and what transformers itself refuses
(heads that do not divide the width where its class demands it, unknown layer types, ...) is
refused here, each as a SpecError naming the file and the config.json key. A key the file lacks
takes transformers' class default, looked up only then (so a complete config.json loads without
importing torch), and is reported: `read_hf_config(...).defaulted`, and a `DefaultedKeyWarning`
per key from `mapping_from_hf_config`. What HF's schema cannot hold (name, source, notes, a
different spelling) comes from one extra key.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

from archscope.errors import _PLACE_MAX, MESSAGE_MAX, SpecError, quote
from archscope.reads import check_regular, is_regular
from archscope.spec.families.base import Family
from archscope.spec.families.registry import depth, families, find
from archscope.spec.fields import did_you_mean
from archscope.spec.hf_keys import JSON_BYTES_MAX, Defaulted, Keys, what
from archscope.spec.weight_formats import format_of_quantization

EXTRA_KEY = "archscope"


class DefaultedKeyWarning(UserWarning):
    """A config.json lacked a key; the import took transformers' class default for it."""


@dataclasses.dataclass(frozen=True)
class HFImport:
    """A config.json read: the spec mapping, and the keys that took transformers' defaults."""

    mapping: dict
    defaulted: tuple[Defaulted, ...] = ()


def read_hf_config(path: str | Path) -> HFImport:
    """An HF config.json (or a folder holding one) read and checked: the spec mapping (one
    that `fields.from_mapping` accepts) and the keys that took transformers' defaults."""
    raw, file, where = _raw(path)
    name = raw.get("_name_or_path")
    if name is not None and not isinstance(name, str):
        raise SpecError(f"expected a string or null, {what(name)}", where=where,
                        key="_name_or_path")
    name = Path(name or "").name or _name_from_path(file)
    mapping, keys = _read(raw, where, name, f"config.json at {file}")
    _check(mapping, raw, keys)
    return HFImport(mapping, tuple(keys.defaulted.values()))


def _name_from_path(file: Path) -> str:
    """A config with no `_name_or_path` is named after its folder, as HF names a model after
    its repository; a file beside it with another name (a variant: config-gqa.json) adds its
    stem, 'llama/config-gqa', so two configs in one folder are two names."""
    folder = file.resolve().parent.name
    if file.name == "config.json":
        return folder
    return f"{folder}/{file.stem}" if folder else file.stem


def model_type_of(path: str | Path) -> str | None:
    """The model_type a config.json (or its folder) names; None where it names none or cannot
    be read."""
    try:
        model_type = _raw(path)[0].get("model_type")
    except SpecError:
        return None
    return model_type if isinstance(model_type, str) else None


def _raw(path: str | Path) -> tuple[dict, Path, str]:
    """The JSON object of a config.json (or a folder holding one), its file and its name."""
    file = Path(path)
    where = str(file)
    try:
        if file.is_dir():
            file = file / "config.json"
            where = str(file)
        if file.exists() and not is_regular(file):  # a FIFO would block the open below
            check_regular(file, "config.json")
        with file.open("rb") as handle:
            data = handle.read(JSON_BYTES_MAX + 1)
    except OSError as err:
        raise SpecError(f"cannot read: {err.strerror or err}", where=where) from None
    if len(data) > JSON_BYTES_MAX:
        raise SpecError(f"larger than the {JSON_BYTES_MAX:,} bytes archscope reads from a "
                        "config.json", where=where)
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise SpecError(f"cannot read: not UTF-8 ({err.reason} at byte {err.start})",
                        where=where) from None
    except (ValueError, RecursionError) as err:  # JSONDecodeError, a 5,000-digit integer, depth
        raise SpecError(f"not valid JSON: {err}", where=where) from None
    if not isinstance(raw, dict):
        raise SpecError(f"expected a JSON object, got {type(raw).__name__}", where=where)
    return raw, file, where


def mapping_from_hf_config(path: str | Path) -> dict:
    """The raw spec mapping (preset keys) for an HF config.json, or a folder holding one.

    Each key that took transformers' class default is reported as a DefaultedKeyWarning
    (`str(warning.message)`: "<file> has no hidden_size; took transformers' default 4096").
    """
    result = read_hf_config(path)
    for note in result.defaulted:
        warnings.warn(DefaultedKeyWarning(str(note)), stacklevel=2)
    return result.mapping


def mapping_from_raw(raw: dict, where: str, name: str, source: str) -> dict:
    """The spec mapping for a parsed config.json; `where` names it in errors."""
    return _read(raw, where, name, source)[0]


def _read(raw: dict, where: str, name: str, source: str) -> tuple[dict, Keys]:
    model_type = raw.get("model_type")
    family = find(model_type) if isinstance(model_type, str) else None
    if family is None:
        # a non-string is named by its type: the list of model types leaves little room
        shown = quote(model_type) if isinstance(model_type, str) or model_type is None \
            else f"(a {type(model_type).__name__})"
        head = f"unsupported model type {shown}{did_you_mean(model_type, families())}; "
        tail = " (`archscope families` lists them all)"
        # the list takes what room the message leaves beside the file's name and the CLI's
        # "error: " (a path is cut to _PLACE_MAX there)
        place = min(len(where), _PLACE_MAX)
        room = MESSAGE_MAX - len(f"error: {'x' * place}: model_type: {head}{tail}")
        raise SpecError(head + _readable(room) + tail, where=where, key="model_type")
    for key, value in family.fixed.items():
        if raw.get(key, value) is not value:
            raise SpecError(f"archscope only models {json.dumps(value)}, {what(raw[key])}",
                            where=where, key=key)
    extras = raw.get(EXTRA_KEY, {})
    if not isinstance(extras, dict):
        raise SpecError(f"expected a mapping, {what(extras)}", where=where, key=EXTRA_KEY)
    # the extra keys are checked by the spec's converter
    keys = Keys(raw, family.class_of or model_type, where, family.key_fields, family)
    body = family.read(keys)
    checkpoint = format_of_quantization(raw.get("quantization_config"))
    return _merge({"name": name, "source": source, **_drop_none(body),
                   **({"weight_format": checkpoint} if checkpoint else {})}, extras), keys


def _readable(room: int) -> str:
    """What archscope reads, in a message's room: how many model types, and as many of them as
    fit, the families others are declared from first (llama, gpt2), then their differences."""
    table = {t: f for t, f in families().items() if not f.reads_nothing}
    names = sorted(table, key=lambda t: (depth(table[t]), t))
    head = f"archscope reads {len(names)} model types: "
    room -= len(head) + len(f" and {len(names)} more")
    shown = []
    for name in names:
        if len(", ".join([*shown, name])) > room:
            break
        shown.append(name)
    more = f" and {len(names) - len(shown)} more" if len(shown) < len(names) else ""
    return f"{head}{', '.join(shown)}{more}"


def _check(mapping: dict, raw: dict, keys: Keys) -> None:
    """Build the spec once, so that its own consistency checks name config.json keys."""
    from archscope.spec.fields import from_mapping
    from archscope.spec.schema import ModelSpec

    try:
        from_mapping(ModelSpec, mapping)
    except SpecError as err:
        extras = raw.get(EXTRA_KEY) or {}
        if _within(extras, err.key):
            key, detail = f"{EXTRA_KEY}.{err.key}", err.detail
        else:
            rope = "rope_parameters" if raw.get("rope_parameters") else "rope_scaling"
            key = hf_key(err.key, keys.family, rope) or err.key
            detail = err.detail if key == err.key else f"{err.detail} (archscope's {err.key})"
        raise SpecError(detail, where=keys.where, key=key) from None


def hf_key(spec_key: str | None, family: Family, rope: str) -> str | None:
    """The config.json key a spec key was read from, if the family's table knows it (`rope`:
    rope_parameters or rope_scaling, whichever the file uses)."""
    if not spec_key:
        return None
    key = spec_key
    if key.startswith("layers"):  # a per-layer component: the model-wide key it came from
        rest = key.split(".", 1)[1] if "." in key else ""
        key = rest if rest.split(".", 1)[0] in ("attention", "ffn") else "layers"
    if key in family.spec_keys:
        return family.spec_keys[key].format(rope=rope)
    if key.startswith("position.scaling."):  # the other RoPE keys keep their HF names
        return f"{rope}.{key.rsplit('.', 1)[1]}"
    return None


def _within(extras: dict, key: str | None) -> bool:
    """Whether the spec key (or a section holding it) comes from the extra key."""
    node: Any = extras
    for part in (key or "").split("."):
        part = part.split("[", 1)[0]
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
        if not isinstance(node, dict):
            return True
    return True


def _merge(base: dict, patch: dict) -> dict:
    out = dict(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        elif value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    return [_drop_none(v) for v in value] if isinstance(value, list) else value
