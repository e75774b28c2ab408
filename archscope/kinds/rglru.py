"""What an RG-LRU layer (Griffin's recurrent block, RecurrentGemma's `recurrent` layers) weighs,
holds and costs.

Pure arithmetic on an RglruSpec (`g` below) and d_model (`d`); no torch. Notation:
w = lru_width, H = n_heads (the gates' blocks), b = w / H (block_width), K = conv_kernel.
Source: transformers 5's RecurrentGemmaRecurrentBlock and RecurrentGemmaRglru, which
archscope/nn/rglru.py builds under the same names; tests/nn/test_rglru.py checks the figures
against that class, its own state buffers and FlopCounterMode.

FLOPs follow archscope's convention: 2 per multiply-add, matmuls only. Counted: the three
projections, the depthwise conv (K multiply-adds a channel a token, which FlopCounterMode
counts too) and the two block-diagonal gates (w*b multiply-adds each a token: one b x b
matmul per block, which transformers runs as baddbmm). Left out as elementwise: the
recurrence itself, h = a*h + sqrt(1 - a^2)*(i*x) (w multiply-adds a token, diagonal: no
matmul, and FlopCounterMode counts none of it), the sigmoids, softplus, exp, sqrt, the GELU
and the y * h product. So the recurrence adds nothing beyond the parts: step_flops and
scan_flops are empty, and a prefill costs exactly tokens times a decode step.
Per sequence: times batch for a batch.
"""

from __future__ import annotations

from archscope.kinds.base import Part, StateMixerKind, Weight, linear
from archscope.kinds.registry import register
from archscope.kinds.wording import ACTIVATION_NAMES
from archscope.units import commas

# RecurrentGemmaRglru computes the recurrence in fp32 (_rnn_scan's acc_dtype) and its block
# keeps rg_lru.recurrent_states in fp32 whatever the model's dtype (_setup_cache: "always
# computed in full precision"); the conv state is in the activations' dtype
RECURRENT_BYTES = 4


def _gate(name: str, g) -> Part:
    """A block-diagonal gate: H blocks of b x b plus a bias per channel; w*b MACs a token."""
    h, b = g.n_heads, g.block_width
    return Part(f"mixer.rg_lru.{name}", h * b * b + g.lru_width, g.lru_width * b,
                weights=(Weight("rg_lru", "Rglru", f"{name}_weight", (h, b, b)),
                         Weight("rg_lru", "Rglru", f"{name}_bias", (h, b))))


def parts(g, d: int) -> list[Part]:
    """The layer's parameters and per-token multiply-adds, by transformers' module names:

        linear_y        d*w + w        the y branch (then the activation)
        linear_x        d*w + w        the x branch (into the conv)
        conv_1d         w*K + w        depthwise, with a bias; K MACs a channel
        rg_lru.recurrent_param   w     per channel: the decay's softplus(recurrent_param)
        rg_lru.input_gate        H*b*b + w   block-diagonal, w*b MACs
        rg_lru.recurrent_gate    H*b*b + w   block-diagonal, w*b MACs
        linear_out      w*d + d
    """
    w, k = g.lru_width, g.conv_kernel
    conv = Part("mixer.conv_1d", w * k + w, w * k,
                weights=(Weight("conv_1d", "Conv1d", "weight", (w, 1, k)),
                         Weight("conv_1d", "Conv1d", "bias", (w,))))
    recurrent = Part("mixer.rg_lru.recurrent_param", w,
                     weights=(Weight("rg_lru", "Rglru", "recurrent_param", (w,)),))
    return [linear("mixer.linear_y", d, w, bias=True),
            linear("mixer.linear_x", d, w, bias=True),
            linear("mixer.linear_out", w, d, bias=True),
            conv, recurrent, _gate("input_gate", g), _gate("recurrent_gate", g)]


def params(g, d: int) -> int:
    """3*d*w + 2*w + d + w*K + w + w + 2*(H*b*b + w): the sum of `parts`."""
    return sum(p.params for p in parts(g, d))


def state_elements(g) -> dict[str, int]:
    """Per sequence, constant in the context:

        conv       w * (K - 1)     the x branch's last K - 1 inputs (transformers'
                                   conv1d_state [B, w, K - 1]: the step brings the K-th)
        recurrent  w               the LRU's hidden state h, one value per channel
    """
    return {"conv": g.lru_width * g.conv_columns, "recurrent": g.lru_width}


def state_bytes(g, conv_bytes: int, batch: int = 1,
                recurrent_bytes: int = RECURRENT_BYTES) -> dict[str, int]:
    """batch * (w*(K-1)*conv_bytes + w*recurrent_bytes), by part: the conv state in the
    activations' dtype (a copy of the conv's inputs), h in fp32 (RECURRENT_BYTES)."""
    e = state_elements(g)
    return {"conv": batch * e["conv"] * conv_bytes,
            "recurrent": batch * e["recurrent"] * recurrent_bytes}


def decode_flops(g, d: int) -> dict[str, int]:
    """One token, by part: 2 * its multiply-adds (see parts); the recurrence adds none under
    the convention (module doc)."""
    return {p.name.removeprefix("mixer."): 2 * p.macs for p in parts(g, d) if p.macs}


def prefill_flops(g, d: int, tokens: int) -> dict[str, int]:
    """A prompt of `tokens`: tokens times decode_flops (no chunking, no padding)."""
    return {name: tokens * n for name, n in decode_flops(g, d).items()}


def recurrence_macs(g) -> int:
    """Multiply-adds of the diagonal recurrence h = a*h + x per token (w), which the convention
    leaves out as elementwise: stated for whoever counts elementwise work."""
    return g.lru_width


def step_flops(g) -> dict[str, int]:
    """Nothing beyond the parts: the recurrence is elementwise (module doc)."""
    return {}


def scan_flops(g, tokens: int) -> dict[str, int]:
    """Nothing beyond the parts: the scan is elementwise (module doc)."""
    return {}


def describe(g) -> str:
    return (f"RG-LRU (Griffin recurrent block): width {g.lru_width}, gates {g.n_heads} blocks "
            f"x {g.block_width}, conv {g.conv_kernel}")


def draw(g_, spec, g):
    d, w = commas(spec.d_model), commas(g.lru_width)
    act = ACTIVATION_NAMES[g.activation]
    y = g_.node("linear_y", f"linear_y + bias<br/>{d} → {w}, {act}")
    x = g_.node("linear_x", f"linear_x + bias<br/>{d} → {w}")
    conv = g_.node("conv", f"causal depthwise conv1d, {g.conv_kernel} taps, bias")
    state = g_.store("state", f"state per sequence<br/>conv {w}×{g.conv_columns} + h {w} (fp32)")
    lru = g_.node("rg_lru", f"RG-LRU: gates i, r ({g.n_heads} blocks {g.block_width}×"
                            f"{g.block_width})<br/>a = exp(−8·r·softplus(Λ)), "
                            "h = a·h + √(1−a²)·(i·x)")
    out = g_.node("linear_out", f"linear_out + bias<br/>{act}(y) · h: {w} → {d}")
    g_.edge(x, conv)
    g_.edge(conv, lru)
    g_.edge(state, lru, "h")
    g_.edge(lru, out)
    g_.edge(y, out, "y")
    return [y, x], out


def explain(g, d: int) -> str:
    """The RG-LRU and its constant state."""
    s = state_elements(g)
    return (f"Griffin's recurrent block in place of attention: two projections of {commas(d)} "
            f"to {commas(g.lru_width)}, a gate branch y through "
            f"{ACTIVATION_NAMES[g.activation]} and an x branch through a causal depthwise conv "
            f"of width {g.conv_kernel}, then the RG-LRU: per channel an input gate i and a "
            f"recurrence gate r (block-diagonal, {g.n_heads} blocks of {g.block_width}), a "
            "decay a = exp(−8·r·softplus(Λ)) and h ← a·h + √(1 − a²)·(i·x); y·h is projected "
            f"back to {commas(d)}. The state is h ({commas(s['recurrent'])} values, fp32) plus "
            f"a conv window of {commas(s['conv'])}, whatever the context.")


register(StateMixerKind(
    name="rglru", module="archscope.nn.rglru:rglru", parts=parts,
    state_bytes=lambda g, act_bytes: state_bytes(g, act_bytes),
    step_flops=step_flops, scan_flops=scan_flops,
    activation_width=lambda g: 2 * g.lru_width,
    display="RG-LRU", describe=describe,
    label=lambda g: f"RG-LRU {g.lru_width}",
    title=lambda g: f"RG-LRU recurrent block: width {g.lru_width}, {g.n_heads} gate blocks",
    short=lambda g: f"RG-LRU {commas(g.lru_width)}",
    draw=draw, explain=explain))
