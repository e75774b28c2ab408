"""Wording shared by several kinds' entries: suffixes and the diagram's RoPE and scale texts."""

from __future__ import annotations

from archscope.units import commas, num


def attention_extras(attn) -> str:
    """', bias q/k/v/o, sliding window 4096' for `show`'s one-line description."""
    text = ""
    if attn.bias or attn.has_out_bias:
        text += ", bias " + ("q/k/v/o" if attn.bias and attn.has_out_bias else
                             "q/k/v" if attn.bias else "o")
    if attn.window:
        text += f", sliding window {attn.window}"
    if attn.chunk:
        text += f", chunked attention {attn.chunk}"
    if attn.temperature_floor:
        text += (f", temperature tuning (floor {attn.temperature_floor}, "
                 f"scale {num(attn.temperature_scale)}"
                 + ("" if attn.temperature_offset is None else ", from the position"
                    if attn.temperature_offset == 0 else
                    f", from position + {attn.temperature_offset}") + ")")
    return text


def window_label(attn) -> str:
    if attn.chunk:
        return f" + chunks of {attn.chunk:,}"
    return f" + sliding window {attn.window:,}" if attn.window else ""


def window_short(attn) -> str:
    if attn.chunk:
        return f", chunk {commas(attn.chunk)}"
    return f", window {commas(attn.window)}" if attn.window else ""


def rope_text(spec) -> str:
    p = spec.position
    text = f"RoPE θ={num(p.theta)}" + (", adjacent pairs" if p.interleaved else "")
    text += ", turning the other way" if p.reversed else ""  # nanochat's
    return text + (f", {p.scaling.kind} ×{num(p.scaling.factor)}" if p.scaling else "")


def scale_text(spec, qk_dim: int) -> str:
    m = spec.mults.attention
    return f"scale {num(m)}" if m else f"/√{qk_dim}"


ACTIVATION_NAMES = {"silu": "SiLU", "gelu": "GELU", "gelu_tanh": "GELU (tanh)", "relu": "ReLU",
                    "relu2": "squared ReLU", "quick_gelu": "quick GELU x·σ(1.702x)",
                    "xielu": "xIELU"}
