"""Reading input files safely: regular files only, within a size limit, never blocking.

Every file archscope reads that a user names (specs, config.json, checkpoint JSON and weights,
documents, claims files, report data) goes through here. The path is stat'ed before it is
opened: a FIFO, a device (/dev/zero), a socket or a folder is refused as an `InputError` naming
it, since opening a FIFO blocks until a writer comes and reading a device never ends. The open
itself is non-blocking (a file swapped for a FIFO after the stat cannot hang it) and checked
again; at most `limit` bytes are read. JSON is checked for nesting before it is parsed (Python's
parser recurses). Symbolic links are followed: reading through one is what the user asked for.
Standard library only (and archscope.errors); the limits themselves are
archscope/spec/limits.py's, passed in by the callers.
"""

from __future__ import annotations

import json
import os
import re
import stat
from itertools import accumulate
from pathlib import Path
from typing import Any

from archscope.errors import InputError, shorten

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) \
    | getattr(os, "O_CLOEXEC", 0)


def kind_of(mode: int) -> str:
    """What a file of this st_mode is, for a message: 'a FIFO (named pipe)', 'a folder', ..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def is_regular(path: str | os.PathLike) -> bool:
    """Whether `path` is a regular file (following links); False for anything unreadable."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def check_regular(path: str | os.PathLike, what: str = "file") -> os.stat_result:
    """The stat of `path`, a regular file; InputError naming it when it is missing or is
    anything else. Never opens the path, so never blocks."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, ValueError) as err:  # a name too long, a NUL, no permission on a folder
        raise InputError(f"{path}: cannot read the {what}: {_reason(err)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: is {kind_of(st.st_mode)}; the {what} must be a regular file")
    return st


def read_bytes(path: str | os.PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of regular file `path`, at most `limit` of them (InputError beyond)."""
    st = check_regular(path, what)
    if st.st_size > limit:
        raise InputError(_too_large(path, what, st.st_size, limit))
    try:
        fd = os.open(path, _FLAGS)
    except OSError as err:
        raise InputError(f"{path}: cannot read the {what}: {_reason(err)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced since the stat above
            raise InputError(f"{path}: is {kind_of(mode)}; the {what} must be a regular file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise InputError(f"{path}: cannot read the {what}: {_reason(err)}") from None
    finally:
        os.close(fd)
    if size > limit:  # it grew since the stat
        raise InputError(_too_large(path, what, size, limit))
    return b"".join(chunks)


def read_text(path: str | os.PathLike, limit: int, what: str = "file") -> str:
    """`read_bytes` decoded as UTF-8 (InputError naming the first bad byte)."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: cannot read as UTF-8 text: the {what} has {err.reason} at "
                         f"byte {err.start:,}") from None


def read_json(path: str | os.PathLike, limit: int, depth: int, what: str = "JSON file") -> Any:
    """The JSON value of regular file `path`: at most `limit` bytes, nested at most `depth`."""
    return parse_json(read_text(path, limit, what), f"{path}", depth)


# A string, to its closing quote or to the end when unterminated (consumed either way, so the
# scan stays linear).
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def deeper_than(text: str, depth: int) -> bool:
    """Whether JSON `text` nests more than `depth` levels: one lazy pass, no recursion, stopping
    at the first level past `depth`. Malformed text gets some answer; the parser then says
    what is wrong with it."""
    bare = _STRING.sub("", text)
    if bare.count("[") + bare.count("{") <= depth:  # the common case, at C speed
        return False
    steps = (1 if m[0] in "[{" else -1 for m in _BRACKET.finditer(bare))
    return any(level > depth for level in accumulate(steps))


def parse_json(text: str, where: str, depth: int) -> Any:
    """json.loads within `depth` levels; InputError naming `where` for anything it refuses."""
    if deeper_than(text, depth):
        raise InputError(f"{where}: nested deeper than {depth} levels, the limit "
                         f"(archscope/spec/limits.py)")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:  # JSONDecodeError, an over-long integer
        raise InputError(f"{where}: not valid JSON ({shorten(str(err), 120)})") from None


def _too_large(path, what: str, size: int, limit: int) -> str:
    return (f"{path}: the {what} is {size:,} bytes, beyond the limit of {limit:,} "
            f"(archscope/spec/limits.py)")


def _reason(err: Exception) -> str:
    return getattr(err, "strerror", None) or str(err) or type(err).__name__


def folder_files(folder: str | os.PathLike, pattern: str) -> list[Path]:
    """The regular files in `folder` matching glob `pattern`, sorted; a FIFO or a device of
    that name is refused (InputError), never skipped silently."""
    out = []
    for path in sorted(Path(folder).glob(pattern)):
        if path.is_dir():
            continue
        check_regular(path)
        out.append(path)
    return out
