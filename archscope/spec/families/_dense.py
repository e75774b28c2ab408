"""What several dense families of the long tail read alike (not a family: the registry skips
modules whose name starts with an underscore): a head_dim their config class defaults to a
number, the RoPE a class's __post_init__ sets when the file has none, and one sliding window on
the layers `layer_types` marks."""

from __future__ import annotations

from typing import Callable

from archscope.spec.families.gpt_oss import sliding_select
from archscope.spec.hf_keys import Defaulted, Keys, what
from archscope.spec.hf_readers_base import _check_types, _patch, _rope
from archscope.spec.schema import ModelSpec

# (number of layers, sliding_window) -> layer_types: a config class's rule when the file has none
TypesRule = Callable[[int, "int | None"], list]


def class_head_dim(c: Keys, out: dict) -> dict:
    """`out` with head_dim as the config class has it when the file leaves it out: classes
    whose head_dim field defaults to a number (Gemma's 256, ERNIE 4.5's 128) use that number,
    not hidden_size // num_attention_heads, which the Llama reader derives."""
    if "head_dim" not in c.raw:  # null: derived, as the Llama reader does
        head_dim = c.size("head_dim", null=True)  # the class default, noted as taken
        if head_dim is not None:
            return _patch(out, attention={"head_dim": head_dim})
    return out


def class_rope(c: Keys, out: dict, default: dict, who: str) -> dict:
    """`out` with the RoPE `default` that config class `who` sets in its __post_init__ when
    the file has neither rope_parameters nor a (non-empty) rope_scaling; the class then keeps
    the default's own rope_theta and ignores a top-level one, which is refused if it differs
    (which one the file means is ambiguous)."""
    if c.raw.get("rope_parameters") is not None or c.raw.get("rope_scaling"):
        return out
    theta = default["rope_theta"]
    if "rope_theta" in c.raw and c.number("rope_theta") != theta:
        raise c.error("rope_theta", f"{what(c.raw['rope_theta'])}, but without rope_parameters "
                                    f"transformers' {who} takes its default RoPE, whose "
                                    f"rope_theta is {theta!r}, and ignores this key: say "
                                    "rope_parameters")
    c.defaulted.pop("rope_theta", None)  # the Llama reader's look-up: not what the class took
    c.defaulted.setdefault("rope_parameters", Defaulted("rope_parameters", default, c.where))
    return {**out, "position": _rope(Keys({"rope_parameters": default}, c.model_type, c.where))}


def layer_types(c: Keys, n: int, window: int | None, rule: TypesRule) -> list[str]:
    """The file's `layer_types` (checked), or the class's `rule` for them."""
    types = c.get("layer_types", None)
    if types is None:
        types = rule(n, window)
    _check_types(c, types, n)
    return types


def layer_windows(c: Keys, out: dict, rule: TypesRule, who: str) -> dict:
    """`out` with `sliding_window` on the layers layer_types marks sliding_attention (the whole
    model's attention when that is every layer, a `layers` override otherwise). `who`: the
    class named when a sliding layer has no window (its mask needs one: transformers fails)."""
    n = out["n_layers"]
    window = c.size("sliding_window", null=True)
    types = layer_types(c, n, window, rule)
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    if sliding and window is None:
        raise c.error("sliding_window", f"is null, but layer_types marks layer {sliding[0]} "
                                        f"sliding_attention: transformers' {who} builds that "
                                        "layer's mask from sliding_window and fails without one")
    if len(sliding) == n:
        return _patch(out, attention={"window": window})
    if sliding:
        out = {**out, "layers": [*out.get("layers", []),
                                 {"select": sliding_select(sliding, n),
                                  "attention": {"window": window}}]}
    return out


def typed_windows(s: ModelSpec) -> dict:
    """One sliding_window and the layer_types that place it (what `layer_windows` reads back;
    a spec with two window sizes reads back with one, and the exporter names the layer)."""
    windows = sorted({layer.window for layer in s.plan if layer.window})
    return {"sliding_window": windows[0] if windows else None,
            "layer_types": [layer.layer_type for layer in s.plan]}


def some_windowed(s: ModelSpec) -> bool:
    """Some layers slide and some do not: what a class with per-layer windows is for."""
    return len({layer.window is None for layer in s.plan}) == 2


def without_rope(c: Keys) -> Keys:
    """A view of `c` with its RoPE keys set aside, for a family that reads them its own way
    (one RoPE per layer type): another reader sees theta 1 and no scaling. It shares c's notes
    of the keys that took transformers' defaults."""
    raw = {k: v for k, v in c.raw.items() if k not in ("rope_parameters", "rope_scaling")}
    view = Keys({**raw, "rope_theta": 1.0}, c.model_type, c.where, c.fields, c.family)
    view.defaulted = c.defaulted
    return view
