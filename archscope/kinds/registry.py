"""The registry of component kinds: kind name -> entry, and the lookups that name the valid ones."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.kinds.base import AttentionKind, FFNKind, StateMixerKind

ATTENTION: dict[str, AttentionKind] = {}
FFN: dict[str, FFNKind] = {}
MIXER: dict[str, StateMixerKind] = {}


def register(entry: AttentionKind | FFNKind | StateMixerKind) -> None:
    table = {AttentionKind: ATTENTION, FFNKind: FFN, StateMixerKind: MIXER}[type(entry)]
    table[entry.name] = entry


def _lookup(table: dict, kind: str, what: str):
    try:
        return table[kind]
    except KeyError:
        raise SpecError(f"unknown {what} kind '{kind}'; available: {', '.join(sorted(table))}",
                        key=f"{what}.kind") from None


def attention_kind(kind: str) -> AttentionKind:
    """The entry of an attention kind ('gqa', 'mla', ...); an unknown kind lists the valid ones."""
    return _lookup(ATTENTION, kind, "attention")


def ffn_kind(kind: str) -> FFNKind:
    """The entry of an FFN kind ('mlp', 'swiglu', 'moe', ...)."""
    return _lookup(FFN, kind, "ffn")


def mixer_kind(kind: str) -> StateMixerKind:
    """The entry of a state mixer kind ('mamba2', 'gated_deltanet')."""
    return _lookup(MIXER, kind, "mixer")
