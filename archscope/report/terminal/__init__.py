"""Terminal rendering: records -> aligned text for `show`, `compare` and `profile`."""
