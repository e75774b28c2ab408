"""What a gated short convolution (LFM2's `conv` layers) weighs, holds and costs.

Pure arithmetic on a ShortConvSpec (`m` below) and d_model (`d`); no torch. Notation:
w = width (d in every LFM2 model), K = conv_kernel. Source: archscope/nn/short_conv.py, built as
transformers 5.24 builds Lfm2ShortConv (and Lfm2MoeShortConv, the same class);
tests/nn/test_short_conv.py checks the figures against transformers' modules and cache.

FLOPs follow archscope's convention: 2 per multiply-add, matmuls only, the depthwise conv
counted (K multiply-adds per channel and token; FlopCounterMode counts it). Left out, as
elementwise: the gates B*x and C*conv(Bx) (w multiplies each per token) and the biases. The
layer has no recurrence: nothing beyond its parts, in decode or in a prefill (step_flops and
scan_flops are empty).
"""

from __future__ import annotations

from archscope.kinds.base import Part, StateMixerKind, Weight, linear
from archscope.kinds.registry import register
from archscope.units import bias_text, commas


def parts(m, d: int, prefix: str = "mixer") -> list[Part]:
    """The layer's parameters and per-token multiply-adds, by transformers' module names:

        in_proj   d * 3w (+ 3w bias)        d -> B | C | x
        conv      w * K (+ w bias)          depthwise: K taps per channel; w*K MACs
        out_proj  w * d (+ d bias)
    """
    conv = m.width * m.conv_kernel
    weights = (Weight("conv", "Conv1d", "weight", (m.width, 1, m.conv_kernel)),)
    weights += (Weight("conv", "Conv1d", "bias", (m.width,)),) if m.bias else ()
    return [linear(f"{prefix}.in_proj", d, m.in_proj_width, m.bias),
            Part(f"{prefix}.conv", conv + (m.width if m.bias else 0), conv, weights=weights),
            linear(f"{prefix}.out_proj", m.width, d, m.bias)]


def params(m, d: int) -> int:
    """d*3w + w*K + w*d, plus 3w + w + d biases with `bias`."""
    return sum(p.params for p in parts(m, d))


def state_elements(m) -> dict[str, int]:
    """Per sequence, constant in the context: the conv's last K inputs Bx of its w channels
    (all K columns, as transformers' cache keeps them; a step reads K - 1). conv = w*K."""
    return {"conv": m.width * m.conv_kernel}


def state_bytes(m, conv_bytes: int, batch: int = 1) -> dict[str, int]:
    """batch * w*K*conv_bytes. conv_bytes is the activations' dtype: transformers' cache
    allocates the conv state in the dtype of what enters the conv (Bx, the in_proj output's
    dtype), and so does archscope's; there is no fp32 state here."""
    return {"conv": batch * state_elements(m)["conv"] * conv_bytes}


def decode_flops(m, d: int) -> dict[str, int]:
    """One new token, by part: in_proj 2*d*3w, conv 2*w*K, out_proj 2*w*d."""
    return {p.name.rpartition(".")[2]: 2 * p.macs for p in parts(m, d)}


def prefill_flops(m, d: int, tokens: int) -> dict[str, int]:
    """A prompt of `tokens`: decode_flops times tokens (no term grows faster; the conv's
    outputs are exactly the tokens', see the parity tests for what transformers pads)."""
    return {name: tokens * f for name, f in decode_flops(m, d).items()}


def describe(m) -> str:
    return (f"gated short conv (LFM2): width {m.width}, conv {m.conv_kernel}"
            f"{', biases' if m.bias else ''}")


def draw(g, spec, m):
    d, w = commas(spec.d_model), commas(m.width)
    proj = g.node("in_proj", f"in_proj{bias_text(m.bias)}<br/>{d} → B, C, x {w} each")
    gate_in = g.node("gate_in", "B · x")
    conv = g.node("conv", f"causal depthwise conv1d, {m.conv_kernel} taps, no activation")
    state = g.store("state", f"state per sequence<br/>conv {w}×{m.conv_kernel}")
    gate_out = g.node("gate_out", "C · conv(B·x)")
    out = g.node("out_proj", f"out_proj{bias_text(m.bias)}<br/>{w} → {d}")
    g.edge(proj, gate_in, "B, x")
    g.edge(gate_in, conv)
    g.edge(state, conv, "last inputs")
    g.edge(conv, gate_out)
    g.edge(proj, gate_out, "C")
    g.edge(gate_out, out)
    return [proj], out


def explain(m, d: int) -> str:
    """The gated short convolution and its constant state."""
    s = state_elements(m)
    return (f"A gated short convolution in place of attention (LFM2): in_proj maps x "
            f"({commas(d)}) to B, C and x' ({commas(m.width)} each); the input gate B·x' passes a "
            f"causal depthwise conv of width {m.conv_kernel} (each channel mixes its last "
            f"{m.conv_kernel} tokens, no activation), the output gate C multiplies the result and "
            f"out_proj maps it back to {commas(d)}. Nothing but the conv window is kept per "
            f"sequence: {commas(m.width)} × {m.conv_kernel} = {commas(s['conv'])} values in the "
            "activations' dtype, whatever the context; it sees only the last "
            f"{m.conv_kernel} tokens, so LFM2 puts attention layers among these for the rest.")


register(StateMixerKind(
    name="short_conv", module="archscope.nn.short_conv:short_conv", parts=parts,
    state_bytes=lambda m, act_bytes: state_bytes(m, act_bytes),
    step_flops=lambda m: {}, scan_flops=lambda m, tokens: {},
    activation_width=lambda m: m.in_proj_width,
    display="Short conv", describe=describe,
    label=lambda m: f"Short conv {m.width}, {m.conv_kernel} taps",
    title=lambda m: f"Gated short conv: width {m.width}, {m.conv_kernel} taps",
    short=lambda m: f"short conv {m.conv_kernel}",
    draw=draw, explain=explain))
