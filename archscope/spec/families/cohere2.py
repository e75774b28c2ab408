"""Cohere 2 (transformers' `cohere2`, Cohere2ForCausalLM: Command R7B, Command A): Cohere's
parallel block without QK-norm, head_dim always hidden_size / num_attention_heads (the config
class overwrites any head_dim), and two layer types (layer_types, else every
`sliding_window_pattern`-th layer, default 4, is global): sliding layers attend within
`sliding_window` with RoPE, global layers attend to everything without RoPE (Cohere2Attention
rotates only on sliding layers). In the spec: a window on the sliding layers, `rope: false` on
the global ones, as `layers` overrides."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.cohere import COHERE, read_base, write_base
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _check_types, _select, class_default
from archscope.spec.schema import ModelSpec

_PATTERN = 4  # Cohere2Config's sliding_window_pattern when a file has neither it nor layer_types


def layer_types(c: Keys, n: int) -> list[str]:
    """layer_types, else Cohere2Config's rule: layer i is global when (i + 1) % pattern == 0."""
    types = c.get("layer_types", None)
    if types is None:
        pattern = (c.size("sliding_window_pattern") if "sliding_window_pattern" in c.raw
                   else class_default(c, "sliding_window_pattern", _PATTERN))
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention"
                 for i in range(n)]
    _check_types(c, types, n)
    return types


def read(c: Keys) -> dict:
    width, heads = c.size("hidden_size"), c.size("num_attention_heads")
    out = read_base(c, head_dim=width // heads if width >= heads else None)
    n, window = out["n_layers"], c.size("sliding_window", null=True)
    types = layer_types(c, n)
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    if sliding and window is None:
        raise c.error("sliding_window", f"is null, but layer_types marks layer {sliding[0]} "
                                        "sliding_attention")
    if not full:
        out["attention"]["window"] = window
    elif not sliding:
        out["attention"]["rope"] = False
    else:
        out["layers"] = [{"select": _select(sliding), "attention": {"window": window}},
                         {"select": _select(full), "attention": {"rope": False}}]
    return out


def write(s: ModelSpec) -> dict:
    a = s.attention
    if a.head_dim * a.n_heads != s.d_model:
        raise SpecError(f"transformers' Cohere2 sizes heads as hidden_size / "
                        f"num_attention_heads ({s.d_model} / {a.n_heads}); head_dim is "
                        f"{a.head_dim}", key="attention.head_dim")
    windows = [layer.window for layer in s.plan if layer.window]
    return {**write_base(s), "sliding_window": windows[0] if windows else None,
            "layer_types": ["sliding_attention" if layer.window else "full_attention"
                            for layer in s.plan]}


def _claims(s: ModelSpec) -> bool:
    """Cohere's block with NoPE layers or windows: only Cohere 2's class has them."""
    return (s.norm.position == "parallel" and s.norm.kind == "layernorm"
            and any(layer.window or not layer.attention.rope for layer in s.plan
                    if layer.attention is not None))


COHERE2 = COHERE.but(
    "cohere2", "Cohere2ForCausalLM", read=read, write=write, exports=_claims,
    weights=tuple(r for r in COHERE.weights if "_norm." not in r.hf),
    spec_keys=COHERE.key_table(**{"attention.window": "sliding_window",
                                  "layers": "layer_types"}),
    doc="Cohere without QK-norm + sliding RoPE layers and global NoPE layers")
FAMILIES = (COHERE2,)
