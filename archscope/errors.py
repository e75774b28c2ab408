"""Error types. Anything a user can cause by bad input is an `InputError` (CLI exit code 2)."""


class InputError(Exception):
    """Bad input from the user: a spec, a flag, a checkpoint. The message is shown as-is."""


class SpecError(InputError, ValueError):
    """A model spec that cannot be loaded or is inconsistent.

    `where` names the file (or "overrides", "config.json", ...) and `key` the dotted key at fault,
    so every message reads "<where>: <key>: <what was expected>".
    """

    def __init__(self, message: str, *, where: str | None = None, key: str | None = None):
        self.where, self.key, self.detail = where, key, message
        prefix = ": ".join(p for p in (where, key) if p)
        super().__init__(f"{prefix}: {message}" if prefix else message)

    def located(self, where: str) -> "SpecError":
        """The same error, attributed to `where` unless it already names a place."""
        return self if self.where else SpecError(self.detail, where=where, key=self.key)


class CheckpointError(InputError):
    """A checkpoint with missing, unexpected or mis-shaped tensors, or an unsafe/corrupt file."""
