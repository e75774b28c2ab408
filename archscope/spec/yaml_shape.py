"""YAML documents checked for shape before they are built: size, nesting depth and nodes with
aliases expanded, within archscope/spec/limits.py, on libyaml's event stream (no recursion)."""

from __future__ import annotations

import yaml

from archscope.errors import SpecError, shorten
from archscope.spec.limits import WHERE, YAML_BYTES_MAX, YAML_DEPTH_MAX, YAML_NODES_MAX

_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def check_yaml(text: str, loader, where: str, key: str | None) -> None:
    """Refuse YAML text beyond YAML_BYTES_MAX, nesting beyond YAML_DEPTH_MAX, or more than
    YAML_NODES_MAX nodes with aliases expanded (memoised per anchor: an alias adds the size of
    what it names), before anything is composed. One pass over `loader`'s event stream, which
    libyaml makes without recursion: no document can overflow a stack here, and the composer
    that follows never sees a deep or exploding one. yaml.YAMLError for malformed text.
    """
    if len(text) > YAML_BYTES_MAX:  # characters: at most the bytes
        raise SpecError(f"{len(text):,} characters is beyond the limit {YAML_BYTES_MAX:,} "
                        f"({WHERE})", where=where, key=key)
    try:
        _walk(yaml.parse(text, Loader=loader), where, key)
    except yaml.scanner.ScannerError as err:
        if "nesting depth" not in str(err.problem):
            raise
        # libyaml 0.2.6 (in PyYAML 6.0.4's wheels) refuses flow nesting past 1,000 levels
        # itself, while it looks ahead for a key, before this walk sees the 64th level, so
        # its message names no key. Python's own scanner (iterative too; at most 1 MiB of
        # text) has no such limit: walk its events to refuse at our limit, naming the key.
        _walk(yaml.parse(text, Loader=yaml.SafeLoader), where, key)
        raise


def _walk(events, where: str, key: str | None) -> None:
    stack: list[list] = []  # per open collection: [is_mapping, children, last key, start, anchor]
    sizes: dict[str, int] = {}  # anchor -> expanded node count; -1 while still open
    total = 0  # nodes so far, aliases expanded
    for event in events:
        if isinstance(event, _OPEN):
            if len(stack) >= YAML_DEPTH_MAX:
                _shape_error(f"nested deeper than {YAML_DEPTH_MAX} levels", event, stack, where,
                             key)
            if stack and stack[-1][0] and stack[-1][1] % 2 == 0:  # a mapping's complex key
                stack[-1][2] = "?"
            stack.append([isinstance(event, yaml.MappingStartEvent), 0, "?", total, event.anchor])
            if event.anchor:
                sizes[event.anchor] = -1
            size = 1
        elif isinstance(event, _CLOSE):
            *_, start, anchor = stack.pop()
            if anchor:
                sizes[anchor] = total - start
            size = 0
        elif isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor, 1)  # an unknown anchor: the composer says so
            if size < 0:
                raise SpecError(f"alias *{shorten(event.anchor)} is inside the node it names",
                                where=where, key=_path(stack, key))
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor:
                sizes[event.anchor] = 1
        else:  # stream and document start and end
            continue
        total += size
        if total > YAML_NODES_MAX:
            _shape_error(f"more than {YAML_NODES_MAX:,} YAML nodes once aliases are expanded",
                         event, stack, where, key)
        if stack and not isinstance(event, _OPEN):  # a child of stack[-1] is complete
            parent = stack[-1]
            if parent[0] and parent[1] % 2 == 0 and isinstance(event, yaml.ScalarEvent):
                parent[2] = shorten(str(event.value))  # a mapping's key
            parent[1] += 1


def _shape_error(what: str, event, stack: list[list], where: str, key: str | None):
    mark = event.start_mark
    raise SpecError(f"{what}, the limit (line {mark.line + 1}, column {mark.column + 1}; "
                    f"{WHERE})", where=where, key=_path(stack, key))


def _path(stack: list[list], key: str | None) -> str | None:
    """The dotted key of the node being read, such as `layers[0].ffn`."""
    out = key or ""
    for is_mapping, children, last, *_ in stack:
        if is_mapping:
            part = last if children % 2 else "?"  # an odd count: a value follows its key
            out = f"{out}.{part}" if out else part
        else:
            out += f"[{children}]"
    return shorten(out) if out else None
