"""One checked claim: what was stated, what was computed, the verdict and its likely cause."""

from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class ClaimResult:
    file: str
    id: str
    document: str
    section: str
    model: str
    quantity: str
    stated: str
    unit: str
    verdict: str  # agree, wrong or unverifiable
    computed: float | int | str | None = None
    computed_text: str = ""
    cause: str = ""
    note: str = ""
    text: str = ""  # the sentence or cell the claim was read from (YAML: its note)
    conditions: dict = field(default_factory=dict)
    what_if: tuple[str, ...] = ()
    versus: dict | None = None

    def row(self) -> dict:
        """The JSON object `check-claims --format json` prints: every field, as it is (a
        shallow `dataclasses.asdict`, which deep-copied each value: a third of the time of a
        document with 85,000 claims)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def setting(self) -> str:
        """Conditions, what-if and comparison in one line, for tables."""
        parts = [", ".join(f"{k}={_cond(v)}" for k, v in self.conditions.items())]
        parts += [f"set {s}" for s in self.what_if]
        if self.versus:
            other = self.versus.get("model", "same model")
            sets = "".join(f" set {s}" for s in self.versus.get("set", ()))
            parts.append(f"{self.versus['relation']} vs {other}{sets}")
        return "; ".join(p for p in parts if p)


def _cond(value) -> str:
    return "+".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
