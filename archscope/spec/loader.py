"""Load specs: presets by name, YAML files, HF config.json files or folders; `extends`; what-ifs."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Iterable

import yaml

from archscope.errors import InputError, SpecError, quote, shorten
from archscope.reads import read_text
from archscope.spec import limits
from archscope.spec.fields import did_you_mean, from_mapping, to_mapping
from archscope.spec.yaml_shape import check_yaml
from archscope.spec.schema import ModelSpec

PRESETS_DIR = Path(__file__).resolve().parents[2] / "model_specs"


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """A safe loader (libyaml's when present: ten times faster) that reads `1e-5` as a number
    and refuses a key given twice in one mapping.

    YAML 1.1 wants `1.0e-5`; people write `1e-5`.
    """

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):  # before merge keys (`<<`) are flattened in
            first: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key, line = self.construct_object(key_node, deep=deep), key_node.start_mark.line
                try:
                    if key in first:
                        raise _DuplicateKey(key, first[key] + 1, line + 1)
                    first[key] = line
                except TypeError:  # unhashable: the base class says so
                    continue
        return super().construct_mapping(node, deep=deep)


class _DuplicateKey(yaml.YAMLError):
    def __init__(self, key, first: int, again: int):
        super().__init__(key)
        self.key, self.lines = key, (first, again)


_FLOAT = re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X)
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:float"]
    for k, v in _Loader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
# YAML 1.1's integers less its base-60 form (`1:30` is 90) and its leading-zero octal (`017` is
# 15): both silently change a number a person wrote (and `select: 1:30` is a slice). Such text
# stays a string, which an integer key refuses by name.
_INT = re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$")
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:int"]
    for k, v in _Loader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))


def parse_yaml(text: str, where: str, key: str | None = None) -> Any:
    """YAML text -> plain data, within the limits of archscope/spec/limits.py; SpecError else.

    `key` names where the text sits (a --set key) for messages. Size is checked first, then
    nesting depth and alias-expanded size on libyaml's event stream (iterative, so no document
    can overflow a stack), and only then is the document composed and built.
    """
    try:
        check_yaml(text, _Loader, where, key)
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a safe loader
    except SpecError:
        raise
    except _DuplicateKey as err:
        dup = shorten(str(err.key))
        first, again = err.lines
        lines = f"lines {first} and {again}" if first != again else f"both on line {first}"
        raise SpecError(f"given twice in one mapping ({lines}); give each key once", where=where,
                        key=f"{key}.{dup}" if key else dup) from None
    except yaml.YAMLError as err:
        raise SpecError(f"not valid YAML{_yaml_problem(err)}", where=where, key=key) from None
    except (ValueError, OverflowError) as err:  # e.g. an integer of over 4,300 digits
        problem = "an integer too long to read" if "digits" in str(err) else err
        raise SpecError(f"a value cannot be read: {problem}", where=where, key=key) from None
    except (LookupError, AttributeError, TypeError):  # PyYAML's constructors on a value that
        # does not fit its explicit tag: `!!bool x` (KeyError), `!!int ''` (IndexError),
        # `!!timestamp x` (AttributeError)
        raise SpecError("a value cannot be read: a value that does not fit its tag (such as "
                        "!!bool x, !!timestamp x or an empty !!int)", where=where,
                        key=key) from None


def _yaml_problem(err: yaml.YAMLError) -> str:
    """libyaml's complaint on one line: what it was reading where, and what it found where."""
    parts = []
    for what, mark in (("context", "context_mark"), ("problem", "problem_mark")):
        text, at = getattr(err, what, None), getattr(err, mark, None)
        if text:
            parts.append(text + (f" (line {at.line + 1}, column {at.column + 1})" if at else ""))
    return ": " + ": ".join(parts or [str(err)])


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def load_spec(model: str | Path, overrides: Iterable[str] = ()) -> ModelSpec:
    """A preset name, a YAML spec path, or an HF config.json (file or folder) -> ModelSpec.

    `overrides` are `key=value` strings (dotted keys, YAML-typed values) applied last.
    """
    raw, where = _raw_mapping(model)
    return with_overrides(spec_from_mapping(raw, where), overrides)


def spec_from_mapping(raw: Any, where: str) -> ModelSpec:
    try:
        return from_mapping(ModelSpec, raw)
    except SpecError as err:
        raise err.located(where) from None


def is_config_path(model: str | Path) -> bool:
    """Whether MODEL names an HF config.json (the file, any .json, or a folder)."""
    path = Path(str(model))
    return _is(path, "is_dir") or path.name == "config.json" or path.suffix == ".json"


def _raw_mapping(model: str | Path) -> tuple[dict, str]:
    text = str(model)
    path = Path(text)
    if is_config_path(path):
        from archscope.spec.hf import mapping_from_hf_config

        return mapping_from_hf_config(path), str(path)
    if path.suffix in (".yaml", ".yml") or _is(path, "exists"):  # a FIFO or a device too:
        return _resolve_extends(_read_yaml(path), path, seen=()), text  # _read_yaml says so
    if _is(PRESETS_DIR / f"{text}.yaml", "is_file"):
        preset = PRESETS_DIR / f"{text}.yaml"
        return _resolve_extends(_read_yaml(preset), preset, seen=()), str(preset)
    close = did_you_mean(text, preset_names())
    presets = ", ".join(preset_names())
    listed = "`archscope list` names the presets" \
        if close or len(presets) + len(text) > 300 else f"Presets: {presets}"
    raise SpecError(f"unknown model: not a preset, a YAML spec or a config.json{close}. {listed}",
                    where=text)


def _is(path: Path, test: str) -> bool:
    """path.exists() and the like, False for a name no file can have (too long, a NUL)."""
    try:
        return getattr(path, test)()
    except (OSError, ValueError):
        return False


def _read_yaml(path: Path) -> dict:
    try:  # a regular file only (a FIFO would block, /dev/zero never end), within the limit
        text = read_text(path, limits.YAML_BYTES_MAX, "spec")
    except InputError as err:
        raise SpecError(str(err)) from None  # the message names the file
    data = parse_yaml(text, str(path))
    if not isinstance(data, dict):
        raise SpecError(f"a spec must be a YAML mapping, got {type(data).__name__}",
                        where=str(path))
    return data


def _resolve_extends(data: dict, path: Path, seen: tuple[str, ...]) -> dict:
    """Start from the `extends` preset (or file beside this one) and deep-merge this file over it."""
    parent = data.get("extends")
    if parent is None:
        return data
    if not isinstance(parent, str):
        raise SpecError(f"expected a preset name, got {quote(parent)}", where=str(path),
                        key="extends")
    if parent in seen:
        raise SpecError(f"extends cycle: {' -> '.join(seen + (parent,))}", where=str(path),
                        key="extends")
    if len(seen) >= limits.EXTENDS_MAX:
        raise SpecError(f"a chain of more than {limits.EXTENDS_MAX} files is beyond the limit "
                        f"({limits.WHERE})", where=str(path), key="extends")
    candidates = [path.parent / f"{parent}.yaml", PRESETS_DIR / f"{parent}.yaml"]
    base_path = next((p for p in candidates if _is(p, "is_file")), None)
    if base_path is None:
        raise SpecError(f"extends unknown preset {quote(parent)}"
                        + did_you_mean(parent, preset_names()), where=str(path), key="extends")
    base = _resolve_extends(_read_yaml(base_path), base_path, seen + (parent,))
    merged = deep_merge(base, data)
    merged["extends"] = parent
    return merged


def deep_merge(base: dict, top: dict) -> dict:
    """`top` over `base`; nested mappings merge, except that a new `kind` replaces the mapping."""
    out = copy.deepcopy(base)
    for key, value in top.items():
        old = out.get(key)
        if (isinstance(old, dict) and isinstance(value, dict)
                and value.get("kind", old.get("kind")) == old.get("kind")):
            out[key] = deep_merge(old, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def apply_overrides(raw: dict, overrides: Iterable[str]) -> dict:
    """Apply `key=value` what-ifs: dotted keys into the mapping, values typed as YAML."""
    out = copy.deepcopy(raw)
    for item in overrides:
        key, value = parse_override(item)
        set_dotted(out, key, value)
    return out


def parse_override(item: str) -> tuple[str, Any]:
    """'key=value' -> (the dotted key, the value typed as YAML; an empty value is None)."""
    if "=" not in item:
        raise SpecError(f"expected key=value, got {quote(item)}", where="overrides")
    key, text = item.split("=", 1)
    key = check_dotted_key(key)
    return key, parse_yaml(text, "overrides", key) if text.strip() else None


def check_dotted_key(key: str) -> str:
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise SpecError(f"expected a dotted key like attention.n_kv_heads, got {quote(key)}",
                        where="overrides")
    return key


def set_dotted(out: dict, key: str, value: Any, *, copy_path: bool = False) -> dict:
    """Set dotted `key` to `value` in mapping `out` (missing mappings on the way are made).
    `copy_path`: leave `out` as it is and return a copy that shares all but the mappings on
    the key's path (a sweep's variant costs a few dict copies, not a deep copy)."""
    root = node = dict(out) if copy_path else out
    parts = key.split(".")
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = {}
        if not isinstance(child, dict):
            raise SpecError(f"'{'.'.join(parts[:depth + 1])}' is not a mapping",
                            where="overrides", key=key)
        node[part] = child = dict(child) if copy_path else child
        node = child
    node[parts[-1]] = value
    return root


def with_overrides(spec: ModelSpec, overrides: Iterable[str]) -> ModelSpec:
    """A what-if on an already-loaded spec (dataclasses.replace through the same validation)."""
    overrides = list(overrides)
    if not overrides:
        return spec
    raw = apply_overrides(to_mapping(spec), overrides)
    try:
        return from_mapping(ModelSpec, raw)
    except SpecError as err:
        raise err.located("overrides") from None


def spec_to_yaml(spec: ModelSpec) -> str:
    return yaml.safe_dump(to_mapping(spec), sort_keys=False, allow_unicode=True)
