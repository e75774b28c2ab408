"""The gated MLP of Gemma: down_proj(gelu_tanh(gate_proj(x)) * up_proj(x)).

SwiGLU's three matrices with GELU (tanh approximation) on the gate, which defines the kind (the
spec's activation is gelu_tanh; transformers' Gemma: gelu_pytorch_tanh). gate_proj and up_proj
d -> d_ff, down_proj d_ff -> d (biases when ffn.bias; Gemma has none); ffn.fused_gate_up
holds gate_proj and up_proj in one gate_up_proj d -> 2*d_ff, as swiglu's does.
Its activations: gate and up, 2 * d_ff per token.
"""

from __future__ import annotations

from archscope.kinds.base import FFNKind, gated_parts
from archscope.kinds.registry import register
from archscope.kinds.swiglu import draw_gated, explain_gated, fused_text
from archscope.kinds.wording import ACTIVATION_NAMES
from archscope.units import commas


def describe(f, d: int) -> str:
    bias = ", bias" if f.bias else ""
    return f"GeGLU {d}->{f.d_ff}->{d} ({f.activation}{bias}{fused_text(f)})"


register(FFNKind(
    name="geglu", module="archscope.nn.ffn:geglu",
    parts=lambda f, d: gated_parts("ffn", d, f.d_ff, f.bias, bool(f.fused_gate_up),
                                   bool(f.sub_norm)),
    hidden=lambda f: f.d_ff, activation_width=lambda f: 2 * f.d_ff,
    display="GeGLU", describe=describe, label=lambda f: "GeGLU",
    title=lambda f: "GeGLU MLP", short=lambda f: f"GeGLU MLP {commas(f.d_ff)}",
    draw=draw_gated, claim_names=lambda f: ["GeGLU", f.activation],
    explain=lambda f, d: explain_gated(f, d, ACTIVATION_NAMES[f.activation])))
