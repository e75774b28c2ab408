"""EXAONE 4 (transformers' `exaone4`, Exaone4ForCausalLM): OLMo 2's block (each sublayer's
output normed, no input norm) with Qwen3's per-head QK-norm instead of OLMo's full-width one, no
biases, and hybrid attention: with a sliding_window, the layers `layer_types` marks slide and
rotate (RoPE) and the others attend globally without RoPE (NoPE); with none, every layer
rotates.

Exaone4Config derives `layer_types` from sliding_window_pattern when the file has none: layer i
is full when (i + 1) % pattern == 0. It does so only for an integer pattern (its documented
string form, "LLLG", and a null sliding_window, which sets the pattern to 0, make the class
fail), so those need layer_types here too. (The docstring's "the last layer is always global"
is not what the class does: the rule alone decides.)
"""

from __future__ import annotations

from archscope.spec.families.base import frozen

from archscope.spec.families._dense import layer_types, layer_windows, typed_windows
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.olmo2 import OLMO2
from archscope.spec.families.olmo2 import write as write_olmo2
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _patch, _select
from archscope.spec.schema import ModelSpec

_PATTERN = "sliding_window_pattern"


def _rule(c: Keys):
    """Exaone4Config's rule for layer_types, checked before the class would fail on it."""
    def types(n: int, window: int | None) -> list[str]:
        pattern = 0 if window is None else c.get(_PATTERN)
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
            why = ("sliding_window is null, which sets it to 0" if window is None
                   else f"{_PATTERN} is {what(pattern)[4:]}")
            raise c.error("layer_types", f"absent, and transformers' Exaone4Config derives it "
                                         f"as (i + 1) % {_PATTERN} only for a positive integer "
                                         f"pattern ({why}): give layer_types")
        return ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention"
                for i in range(n)]
    return types


def read(c: Keys) -> dict:
    out = _patch(read_llama(c, bias=()), norm={"position": "output"},
                 attention={"qk_norm": "head"})
    rule, n = _rule(c), out["n_layers"]
    out = layer_windows(c, out, rule, "Exaone4")  # refuses sliding layers without a window
    window = c.size("sliding_window", null=True)
    if window is None:
        return out  # every layer rotates
    full = [i for i, t in enumerate(layer_types(c, n, window, rule)) if t == "full_attention"]
    if len(full) == n:
        return _patch(out, attention={"rope": False})
    if full:  # the global layers do not rotate
        out["layers"] = [*out.get("layers", []), {"select": _select(full),
                                                  "attention": {"rope": False}}]
    return out


def write(s: ModelSpec) -> dict:
    """Exaone4Config's keys: Llama's without biases, the windows' layer_types (the NoPE of the
    global layers is implied by the window; the read-back names a spec that differs)."""
    return {**write_olmo2(s), **typed_windows(s), _PATTERN: None}


def _claims(s: ModelSpec) -> bool:
    return s.norm.position == "output" and s.attention.qk_norm == "head"


EXAONE4 = OLMO2.but(
    "exaone4", "Exaone4ForCausalLM", read=read, write=write, exports=_claims,
    names=("exaone",),  # OLMo 2's weight names: q_norm and k_norm are per head here
    # the default slides a 4,096-token window over a 2,048-token context, which archscope
    # refuses as a spec: the context raised to the window
    default_fix=frozen({"max_position_embeddings": 4096}),
    doc="OLMo 2's block + per-head QK-norm + sliding RoPE layers and global NoPE layers")
FAMILIES = (EXAONE4,)
