"""The gated MLP of Llama: down_proj(act(gate_proj(x)) * up_proj(x)), SiLU by default.

Three matrices: gate_proj and up_proj d -> d_ff, down_proj d_ff -> d (biases when ffn.bias);
with ffn.fused_gate_up (Phi-3/Phi-4) gate_up_proj d -> 2*d_ff holds the first two, gate rows
first: the same parameters and multiply-adds, named as the checkpoint's tensor.
With ffn.sub_norm (BitNet) an RMSNorm of d_ff, ffn_sub_norm, normalises act(gate) * up before
down_proj: d_ff weights, no matmul. With activation relu2 the gate is a squared ReLU (BitNet).
With ffn.limit (gpt-oss's swiglu_limit, here and in moe's experts) the unit is clamped:
gate at most `limit`, up within [-limit, limit], and the product is act(gate) * (up + 1); with
activation quick_gelu (x·sigmoid(1.702x)) that is gpt-oss's expert exactly. Elementwise, so
no parameter and no matmul changes.
Its activations: gate and up, 2 * d_ff per token.
"""

from __future__ import annotations

from archscope.kinds.registry import register
from archscope.kinds.base import FFNKind, gated_parts
from archscope.kinds.wording import ACTIVATION_NAMES
from archscope.units import bias_text, commas, num


def clamp_text(f) -> str:
    """', clamped ±7, up + 1' for a gated unit with a limit (gpt-oss), else ''."""
    return f", clamped ±{num(f.limit)}, up + 1" if f.limit is not None else ""


def draw_gated(g, spec, f, prefix: str = "", width: int | None = None, act_name: str | None = None):
    """A gated MLP's nodes; MoE draws its shared experts with it too (`prefix`, `width`)."""
    d, ff = commas(spec.d_model), commas(width or f.d_ff)
    if f.fused_gate_up and not prefix:  # one matrix, gate rows then up rows
        gate = up = g.node("gate_up", f"gate_up_proj{bias_text(f.bias)}<br/>{d} → 2×{ff}, "
                                      "split gate, up")
    else:
        gate = g.node(prefix + "gate", f"{prefix}gate_proj{bias_text(f.bias)}<br/>{d} → {ff}")
        up = g.node(prefix + "up", f"{prefix}up_proj{bias_text(f.bias)}<br/>{d} → {ff}")
    act = g.node(prefix + "act", (act_name or ACTIVATION_NAMES[f.activation]) + clamp_text(f))
    mul = g.circle(prefix + "mul", "⊙")
    sub = " (after ffn_sub_norm, RMSNorm)" if f.sub_norm and not prefix else ""  # BitNet's
    down = g.node(prefix + "down", f"{prefix}down_proj{bias_text(f.bias)}{sub}<br/>{ff} → {d}")
    g.edge(gate, act, "gate" if gate == up else None)
    g.edge(act, mul)
    g.edge(up, mul, "up" if gate == up else None)
    g.edge(mul, down)
    return list(dict.fromkeys([gate, up])), down


def fused_text(f) -> str:
    """What a gated MLP adds to its three matrices: ', fused gate_up_proj, sub-norm'."""
    return (", fused gate_up_proj" if f.fused_gate_up else "") + (
        ", RMSNorm before down_proj" if f.sub_norm else "")


# what a gated unit is called when its gate is not SiLU's (BitNet's squared ReLU)
GATED_NAMES = {"relu2": "ReLU²-GLU"}


def gated_name(f) -> str:
    return GATED_NAMES.get(f.activation, "SwiGLU")


def describe(f, d: int) -> str:
    bias = ", bias" if f.bias else ""
    return (f"{gated_name(f)} {d}->{f.d_ff}->{d} "
            f"({f.activation}{bias}{fused_text(f)}{clamp_text(f)})")


def explain_gated(f, d: int, act: str) -> str:
    """A gated MLP (SwiGLU, GeGLU): why three matrices, and the two-matrix MLP it compares to."""
    ff = f.d_ff
    return (f"out = W_down·({act}(W_gate·x) ⊙ W_up·x), {commas(d)} → {commas(ff)} → {commas(d)}: "
            f"an expansion of {commas(ff)} / {commas(d)} = {ff / d:.2f}×. Gating needs three "
            f"matrices: gate_proj makes the gate that {act} turns into per-unit weights, up_proj "
            "makes the values those weights multiply elementwise (two independent projections "
            "of the same x), and down_proj maps the product back. That is "
            f"3 × {commas(d)} × {commas(ff)} = {commas(3 * d * ff)} weights, where a two-matrix "
            f"MLP as wide holds {commas(2 * d * ff)} (1.5× fewer); for equal parameters a "
            f"two-matrix MLP would be {commas(3 * ff // 2)} wide.")


register(FFNKind(
    name="swiglu", module="archscope.nn.ffn:swiglu",
    parts=lambda f, d: gated_parts("ffn", d, f.d_ff, f.bias, bool(f.fused_gate_up),
                                   bool(f.sub_norm)),
    hidden=lambda f: f.d_ff, activation_width=lambda f: 2 * f.d_ff,
    display="SwiGLU", describe=describe, label=gated_name,
    title=lambda f: f"{gated_name(f)} MLP",
    short=lambda f: f"{gated_name(f)} MLP {commas(f.d_ff)}",
    draw=draw_gated, claim_names=lambda f: [gated_name(f)],
    explain=lambda f, d: explain_gated(f, d, ACTIVATION_NAMES[f.activation])))
