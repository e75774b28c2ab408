"""Parameters, per-sequence state and FLOPs of one Mamba-1 (selective scan) mixer, from its
spec alone.

Pure Python (no torch). Notation: d = d_model, I = d_inner, N = d_state, R = dt_rank,
K = conv_kernel. Source: the module in archscope/nn/mamba1.py, built as transformers 5.24 builds
MambaMixer, FalconMambaMixer and JambaMambaMixer. tests/nn/test_mamba1_mixer.py checks every
figure against the built modules, transformers' cache and FlopCounterMode.

State: transformers keeps the conv window in the activations' dtype (a copy of the conv's
inputs) and the SSM state [I, N] in fp32 whatever the model's dtype: its scan discretises in
fp32 (exp(dt*A) with A = -exp(A_log.float())), so the state it returns after a prompt is fp32,
the cache's recurrent state takes that dtype, and a decode step writes back in it.

FLOPs follow archscope's convention: 2 per multiply-add, matmuls only (the depthwise conv is
counted: it multiplies each weight once per token; so is dt_proj, a matmul R -> I). The scan
counts its readout y_t = h_t C_t, I*N multiply-adds per token, the matmul transformers' torch
path runs per token (FlopCounterMode counts it). Left out, as elementwise: softplus, exp, the
discretisation dt*B*x and the state update h = exp(dt*A)*h + dt*B*x (3*I*N multiplies and
I*N adds per token), the D skip, the silu gate and the dt/B/C norms of Falcon-Mamba and Jamba.
A prefill's scan is sequential (one state update per token): its FLOPs are T times a step's.
"""

from __future__ import annotations

from archscope.kinds.base import Part, StateMixerKind, Weight, linear, norm
from archscope.kinds.registry import register
from archscope.units import bias_text, commas

# transformers' torch path keeps the SSM state in fp32 whatever the model's dtype (see above)
SSM_STATE_BYTES = 4


def _channels(m) -> tuple[int, ...]:
    return (m.d_inner,) if m.n_heads == 1 else (m.n_heads, m.head_dim)


def _projections(m) -> list[Part]:
    """x_proj and dt_proj: nn.Linear, or per head (HeadLinear) with n_heads > 1."""
    i, r, w = m.d_inner, m.dt_rank, m.x_proj_width
    if m.n_heads == 1:
        return [linear("mixer.x_proj", i, w), linear("mixer.dt_proj", r, i, bias=True)]
    h, hd = m.n_heads, m.head_dim
    return [Part("mixer.x_proj", i * w, i * w,
                 weights=(Weight("x_proj", "HeadLinear", "weight", (h, w, hd)),)),
            Part("mixer.dt_proj", r * i + i, r * i,
                 weights=(Weight("dt_proj", "HeadLinear", "weight", (h, hd, r)),
                          Weight("dt_proj", "HeadLinear", "bias", (h, hd))))]


def parts(m, d: int) -> list[Part]:
    """One mixer's parameters and per-token multiply-adds, by module (transformers' names, in
    the order its classes register them):

    conv1d    I*K (+ I bias)          depthwise: K taps per channel; I*K MACs
    in_proj   d*2I (+ 2I bias)        d -> x | z
    x_proj    I*(R + 2N)              x -> dt | B | C, no bias
    dt_proj   R*I + I                 dt's low-rank expansion, always with a bias
    A_log     I*N                     per channel and state column, no matmul
    D         I
    out_proj  I*d (+ d bias)
    dt_layernorm, b_layernorm, c_layernorm   R, N, N (Jamba's weighted norms only)

    With n_heads = H > 1 (Zamba) the same counts, held per head: x_proj [H, R + 2N, I/H],
    dt_proj [H, I/H, R] + bias [H, I/H], A_log [H, I/H, N], D [H, I/H].
    """
    i, n = m.d_inner, m.d_state
    conv = i * m.conv_kernel
    conv_weights = (Weight("conv1d", "Conv1d", "weight", (i, 1, m.conv_kernel)),)
    conv_weights += (Weight("conv1d", "Conv1d", "bias", (i,)),) if m.conv_bias else ()
    out = [Part("mixer.conv1d", conv + (i if m.conv_bias else 0), conv, weights=conv_weights),
           linear("mixer.in_proj", d, 2 * i, m.proj_bias),
           *_projections(m),
           Part("mixer.A_log", i * n, weights=(Weight("", "MambaMixer", "A_log",
                                                      (*_channels(m), n)),)),
           Part("mixer.D", i, weights=(Weight("", "MambaMixer", "D", _channels(m)),)),
           linear("mixer.out_proj", i, d, m.proj_bias)]
    if m.dt_bc_norm == "weighted":
        out += [norm(f"mixer.{name}_layernorm", size)
                for name, size in (("dt", m.dt_rank), ("b", n), ("c", n))]
    return out


def param_count(m, d: int) -> int:
    """Sum of `parts`: I*K + 2dI + I(R + 2N) + RI + I + IN + I + Id, plus the biases (and Jamba's
    R + 2N norm weights)."""
    return sum(p.params for p in parts(m, d))


def state_elements(m) -> dict[str, int]:
    """Per sequence: the conv state keeps K columns of I channels (transformers keeps all K,
    though a step reads only K - 1), the SSM state an I x N matrix.

    conv = I*K,  ssm = I*N
    """
    return {"conv": m.d_inner * m.conv_kernel, "ssm": m.d_inner * m.d_state}


def state_bytes(m, conv_bytes: int, ssm_bytes: int = SSM_STATE_BYTES) -> int:
    """Bytes one sequence's state holds in one layer, constant in context length:
    I*K*conv_bytes + I*N*ssm_bytes. conv_bytes is the activations' dtype; ssm_bytes defaults
    to transformers' fp32."""
    e = state_elements(m)
    return e["conv"] * conv_bytes + e["ssm"] * ssm_bytes


def step_flops(m) -> dict[str, int]:
    """One decode step's matmul beyond the parts': the readout y = h C (h: I x N), 2*I*N."""
    return {"mixer.scan.readout": 2 * m.d_inner * m.d_state}


def scan_flops(m, seq_len: int) -> dict[str, int]:
    """A prompt of seq_len = T tokens from a fresh state, beyond the parts: T readouts,
    2*T*I*N. The scan runs token by token (no chunks, no padding): nothing else is a matmul."""
    if seq_len <= 0:
        return {}
    return {"mixer.scan.readout": 2 * seq_len * m.d_inner * m.d_state}


def decode_flops(m, d: int) -> dict[str, int]:
    """FLOPs of one token, by part: the parts' 2 * MACs (conv1d 2IK, in_proj 4dI, x_proj
    2I(R + 2N), dt_proj 2RI, out_proj 2Id) and the readout 2IN."""
    return {**{p.name: 2 * p.macs for p in parts(m, d) if p.macs}, **step_flops(m)}


def prefill_flops(m, d: int, seq_len: int) -> dict[str, int]:
    """FLOPs of one sequence of seq_len tokens: seq_len times decode_flops (the scan_flops
    convention: a sequential scan costs a step per token)."""
    if seq_len <= 0:
        return {}
    per_part = {p.name: 2 * seq_len * p.macs for p in parts(m, d) if p.macs}
    return {**per_part, **scan_flops(m, seq_len)}


_NORM_WORDS = {"none": "", "unweighted": "; dt, B, C RMS-normed (no weight)",
               "weighted": "; dt, B, C RMS-normed"}


def describe(m) -> str:
    heads = f", {m.n_heads} heads" if m.n_heads > 1 else ""
    return (f"Mamba-1 (selective scan): inner width {m.d_inner}{heads}, state {m.d_state}, "
            f"dt rank {m.dt_rank}, conv {m.conv_kernel}{_NORM_WORDS[m.dt_bc_norm]}")


def draw(g, spec, m):
    d, inner = commas(spec.d_model), commas(m.d_inner)
    proj = g.node("in_proj", f"in_proj{bias_text(m.proj_bias)}<br/>{d} → x {inner} | z {inner}")
    conv = g.node("conv", f"causal depthwise conv1d, {m.conv_kernel} taps, SiLU<br/>over x")
    xproj = g.node("x_proj", f"x_proj {inner} → dt {m.dt_rank} | B, C {m.d_state}<br/>"
                             f"dt_proj {m.dt_rank} → {inner}{_NORM_WORDS[m.dt_bc_norm]}")
    state = g.store("state", f"state per sequence<br/>conv {inner}×{m.conv_kernel}"
                             f" + SSM {inner}×{m.d_state} (fp32)")
    scan = g.node("scan", "selective scan: h = exp(dt·A)·h + dt·B·x, y = h·C + D·x<br/>"
                          "token by token, A per channel and state column")
    gate = g.node("gate", "y · SiLU(z)")
    out = g.node("out_proj", f"out_proj{bias_text(m.proj_bias)}<br/>{inner} → {d}")
    g.edge(proj, conv, "x")
    g.edge(conv, xproj)
    g.edge(conv, scan, "x")
    g.edge(xproj, scan, "dt, B, C")
    g.edge(state, scan, "h")
    g.edge(scan, gate)
    g.edge(proj, gate, "z")
    g.edge(gate, out)
    return [proj], out


def explain(m, d: int) -> str:
    """The selective state-space recurrence and its constant state."""
    s = state_elements(m)
    return (f"Mamba-1 in place of attention: in_proj maps x ({commas(d)}) to an input x' and a "
            f"gate z ({commas(m.d_inner)} each); a causal depthwise conv of width "
            f"{m.conv_kernel} mixes the last tokens of x'. x_proj makes a step dt (rank "
            f"{m.dt_rank}, widened by dt_proj to one step per channel) and B and C "
            f"({m.d_state} each) from every token{_NORM_WORDS[m.dt_bc_norm]}. Each of "
            f"{commas(m.d_inner)} channels keeps {m.d_state} state values h, updated per token "
            "as h ← exp(dt·A)·h + dt·B·x' and read as y = h·C + D·x'; y · silu(z) goes through "
            f"out_proj back to {commas(d)}. The state is {commas(m.d_inner)} × {m.d_state} = "
            f"{commas(s['ssm'])} values (fp32) plus a conv window of {commas(s['conv'])}, "
            "whatever the context: no cache grows with the tokens.")


register(StateMixerKind(
    name="mamba1", module="archscope.nn.mamba1:mamba1", parts=parts,
    state_bytes=lambda m, act_bytes: {"conv": state_elements(m)["conv"] * act_bytes,
                                      "ssm": state_elements(m)["ssm"] * SSM_STATE_BYTES},
    step_flops=step_flops, scan_flops=scan_flops,
    activation_width=lambda m: 2 * m.d_inner,
    display="Mamba-1", describe=describe,
    label=lambda m: f"Mamba-1 {m.d_inner}×{m.d_state}",
    title=lambda m: f"Mamba-1 mixer: inner width {m.d_inner}, state {m.d_state}",
    short=lambda m: f"Mamba-1 {m.d_inner}×{m.d_state}",
    draw=draw, explain=explain))
