"""Error types. Anything a user can cause by bad input is an `InputError` (CLI exit code 2).

A message is one short paragraph: `quote` shows a bad value cut to QUOTE_MAX characters, and a
SpecError's whole text is cut to MESSAGE_MAX (archscope/spec/limits.py lists every input limit).
"""

from __future__ import annotations

import re
import reprlib

QUOTE_MAX = 60  # a quoted value: enough to recognise it, never the whole of a hostile one
MESSAGE_MAX = 400  # a whole message: file, key, what was expected, a did-you-mean
_PLACE_MAX = 160  # a file name or key inside a message (the tail of a path is kept)

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, QUOTE_MAX, QUOTE_MAX, QUOTE_MAX
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6
_BREAKS = re.compile(r"\s*\n\s*")


def shorten(text: str, limit: int = QUOTE_MAX, *, keep_tail: bool = False) -> str:
    """`text` on one line, cut to `limit` characters with "..." (at the start if keep_tail)."""
    text = _BREAKS.sub(" ", str(text))
    if len(text) <= limit:
        return text
    return "..." + text[-(limit - 3):] if keep_tail else text[:limit - 3] + "..."


def quote(value) -> str:
    """repr(value) as a message shows it: bounded work, at most QUOTE_MAX characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 192:
        return f"<an integer of {value.bit_length():,} bits>"  # repr would be long (or refuse)
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a hostile object's repr must not replace the message
        text = f"<{type(value).__name__}>"
    return shorten(text, QUOTE_MAX)


class InputError(Exception):
    """Bad input from the user: a spec, a flag, a checkpoint. The message is shown as-is."""


class SpecError(InputError, ValueError):
    """A model spec that cannot be loaded or is inconsistent.

    `where` names the file (or "overrides", "config.json", ...) and `key` the dotted key at fault,
    so every message reads "<where>: <key>: <what was expected>", on one line, at most
    MESSAGE_MAX characters.
    """

    def __init__(self, message: str, *, where: str | None = None, key: str | None = None):
        self.where, self.key, self.detail = where, key, shorten(message, MESSAGE_MAX)
        parts = [shorten(where, _PLACE_MAX, keep_tail=True) if where else None,
                 shorten(key, _PLACE_MAX) if key else None]
        prefix = ": ".join(p for p in parts if p)
        super().__init__(shorten(f"{prefix}: {self.detail}" if prefix else self.detail,
                                 MESSAGE_MAX))

    def located(self, where: str) -> "SpecError":
        """The same error, attributed to `where` unless it already names a place."""
        return self if self.where else SpecError(self.detail, where=where, key=self.key)


class CheckpointError(InputError):
    """A checkpoint with missing, unexpected or mis-shaped tensors, or an unsafe/corrupt file."""
