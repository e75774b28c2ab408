"""Components by `kind`: the builder looks up each layer's parts here and never branches on names.

Each entry is a factory `(spec, component_spec) -> nn.Module`. Other modules add kinds with
`register`; an unknown kind is an error that lists the valid ones.
"""

from __future__ import annotations

from archscope.errors import SpecError

ATTENTION: dict = {}
FFN: dict = {}


def register(table: dict, kind: str, factory) -> None:
    table[kind] = factory


def lookup(table: dict, kind: str, what: str):
    try:
        return table[kind]
    except KeyError:
        raise SpecError(f"no builder for {what} kind '{kind}'; available: {', '.join(sorted(table))}",
                        key=f"{what}.kind") from None


def _register_builtin() -> None:
    from archscope.nn import ffn
    from archscope.nn.attention import GQAAttention
    from archscope.nn.mla import MLAttention
    from archscope.nn.moe import MoE

    register(ATTENTION, "gqa", GQAAttention)
    register(ATTENTION, "mla", MLAttention)
    register(FFN, "mlp", ffn.mlp)
    register(FFN, "swiglu", ffn.swiglu)
    register(FFN, "moe", MoE)


_register_builtin()
