"""Parameters, per-sequence state and FLOPs of one Mamba-2 (SSD) mixer, from its spec alone.

Pure Python (no torch). Notation: d = d_model, H = n_heads, P = head_dim, N = d_state,
G = n_groups, K = conv_kernel, Q = chunk_size, I = H*P (d_inner), W = I + 2*G*N (conv_dim).
Source: the module in archscope/nn/mamba2.py, built as transformers 5.23 builds
GraniteMoeHybridMambaLayer, NemotronHMamba2Mixer and BambaMixer; the scan's terms are the
matmuls of the chunked SSD algorithm (Mamba-2 paper, section 6), which transformers' torch
path and archscope's module run. tests/nn/test_mamba2_mixer.py checks every figure against
the built modules and FlopCounterMode.

FLOPs follow archscope's convention: 2 per multiply-add, matmuls only (the depthwise conv is
counted: it multiplies each weight once per token). Left out, as elementwise: softplus, exp,
the decays, the D skip (I per token), the gate and the norm, and in decode the state update
(the decay H*P*N multiplies and the outer product dt*x*B^T, H*P*N multiply-adds).
"""

from __future__ import annotations

from archscope.kinds.base import Part, StateMixerKind, Weight, linear, norm, own_weights
from archscope.kinds.registry import register
from archscope.units import bias_text, commas

# transformers' torch path keeps the SSM state in fp32 whatever the model's dtype (its scan
# runs in fp32 and returns its final state so; decode writes back in the state's dtype)
SSM_STATE_BYTES = 4


def parts(m, d: int) -> list[Part]:
    """One mixer's parameters and per-token multiply-adds, by module (transformers' names):

    in_proj   d*(2I + 2GN + H) (+ 2I + 2GN + H bias)   d -> z | x B C | dt
    conv1d    W*K (+ W bias)                            depthwise: K taps per channel; W*K MACs
    dt_bias, A_log, D   H each                          per head, no matmul
    norm      I                                         the gated RMSNorm's weight (none
                                                        without a gated norm: gated_norm false)
    out_proj  I*d (+ d bias)
    """
    conv = m.conv_dim * m.conv_kernel
    conv_weights = (Weight("conv1d", "Conv1d", "weight", (m.conv_dim, 1, m.conv_kernel)),)
    conv_weights += (Weight("conv1d", "Conv1d", "bias", (m.conv_dim,)),) if m.conv_bias else ()
    return [linear("mixer.in_proj", d, m.in_proj_width, m.proj_bias),
            Part("mixer.conv1d", conv + (m.conv_dim if m.conv_bias else 0), conv,
                 weights=conv_weights),
            *own_weights("mixer", "Mamba2Mixer", dict.fromkeys(("dt_bias", "A_log", "D"),
                                                               m.n_heads)),
            *([norm("mixer.norm", m.d_inner, module_type="GatedRMSNorm")] if m.gated_norm
              else []),
            linear("mixer.out_proj", m.d_inner, d, m.proj_bias)]


def param_count(m, d: int) -> int:
    """Sum of `parts`: d*(2I + 2GN + H) + W*K + 3H + I + I*d, plus the biases."""
    return sum(p.params for p in parts(m, d))


def state_elements(m) -> dict[str, int]:
    """Per sequence: the conv state keeps K columns of W channels (transformers keeps all K,
    though a step reads only K - 1), the SSM state a P x N matrix per head.

    conv = W*K,  ssm = H*P*N
    """
    return {"conv": m.conv_dim * m.conv_kernel, "ssm": m.n_heads * m.head_dim * m.d_state}


def state_bytes(m, conv_bytes: int, ssm_bytes: int = SSM_STATE_BYTES) -> int:
    """Bytes one sequence's state holds in one layer, constant in context length:
    W*K*conv_bytes + H*P*N*ssm_bytes. conv_bytes is the activations' dtype (the conv state is
    a copy of the conv's inputs); ssm_bytes defaults to transformers' fp32."""
    e = state_elements(m)
    return e["conv"] * conv_bytes + e["ssm"] * ssm_bytes


def _flops(macs: dict[str, int]) -> dict[str, int]:
    return {name: 2 * n for name, n in macs.items()}


def step_flops(m) -> dict[str, int]:
    """One decode step's matmul beyond the parts': the readout y = h C per head (h: P x N),
    2*H*P*N."""
    return {"mixer.ssm.readout": 2 * m.n_heads * m.head_dim * m.d_state}


def decode_flops(m, d: int) -> dict[str, int]:
    """FLOPs of one token through the recurrence, by part; independent of the context length.

    in_proj   2*d*(2I + 2GN + H)
    conv1d    2*W*K          one output per channel from the K newest inputs
    ssm.readout  2*H*P*N     y = h C per head (h: P x N)
    out_proj  2*I*d
    """
    per_token = {p.name: p.macs for p in parts(m, d) if p.macs}
    return {"mixer.in_proj": 2 * per_token["mixer.in_proj"],
            "mixer.conv1d": 2 * per_token["mixer.conv1d"], **step_flops(m),
            "mixer.out_proj": 2 * per_token["mixer.out_proj"]}


def scan_flops(m, seq_len: int) -> dict[str, int]:
    """The chunked scan's matmuls over seq_len = T tokens (the parts' matmuls apart).

    Convention: chunks of Q = chunk_size tokens, the prompt zero-padded to c = ceil(T/Q) whole
    chunks; each chunk's Q x Q blocks are counted whole (the scan computes them whole and
    masks them, as FlopCounterMode counts), and states pass between chunks as one dense
    (c+1) x (c+1) decay matrix per head (the initial state is chunk -1), as the SSD listing
    writes it. Per head, with B and C repeated from groups to heads:

    ssd.scores        2*c*Q*Q*H*N      C_l . B_s inside each chunk
    ssd.intra         2*c*Q*Q*H*P      masked scores times dt*x inside each chunk
    ssd.chunk_states  2*c*Q*H*P*N      each chunk's own contribution to its end state
    ssd.state_passing 2*(c+1)^2*H*P*N  the states at chunk starts (and the final one)
    ssd.readout       2*c*Q*H*P*N      each chunk's start state read out by C

    What the fused kernels do differs (they form C.B per group, not per head, skip tiles above
    the diagonal and pass states by an elementwise scan), so for them this is an upper bound.
    """
    if seq_len <= 0:
        return {}
    q, hpn = m.chunk_size, m.n_heads * m.head_dim * m.d_state
    c = -(-seq_len // q)
    macs = {
        "ssd.scores": c * q * q * m.n_heads * m.d_state,
        "ssd.intra": c * q * q * m.n_heads * m.head_dim,
        "ssd.chunk_states": c * q * hpn,
        "ssd.state_passing": (c + 1) ** 2 * hpn,
        "ssd.readout": c * q * hpn,
    }
    return _flops({f"mixer.{k}": v for k, v in macs.items()})


def prefill_flops(m, d: int, seq_len: int) -> dict[str, int]:
    """FLOPs of one sequence of seq_len tokens, by part: in_proj, conv1d and out_proj seq_len
    times their decode_flops, and the scan's terms (scan_flops, with its convention)."""
    if seq_len <= 0:
        return {}
    token = decode_flops(m, d)
    return {"mixer.in_proj": seq_len * token["mixer.in_proj"],
            "mixer.conv1d": seq_len * token["mixer.conv1d"],
            **scan_flops(m, seq_len),
            "mixer.out_proj": seq_len * token["mixer.out_proj"]}


def describe(m) -> str:
    return (f"Mamba-2 (SSD): {m.n_heads} heads x {m.head_dim}, state {m.d_state}, "
            f"{m.n_groups} B/C group{'s' if m.n_groups > 1 else ''}, conv {m.conv_kernel}; "
            f"inner width {m.d_inner}")


def draw(g, spec, m):
    d, inner = commas(spec.d_model), commas(m.d_inner)
    proj = g.node("in_proj", f"in_proj{bias_text(m.proj_bias)}<br/>{d} → z {inner} | x {inner} "
                             f"| B, C {m.n_groups}×{m.d_state} | dt {m.n_heads}")
    conv = g.node("conv", f"causal depthwise conv1d, {m.conv_kernel} taps, SiLU<br/>over x, B, C")
    state = g.store("state", f"state per sequence<br/>conv {commas(m.conv_dim)}×{m.conv_kernel}"
                             f" + SSM {m.n_heads}×{m.head_dim}×{m.d_state} (fp32)")
    scan = g.node("scan", f"selective scan: h = exp(dt·A)·h + dt·x·Bᵀ, y = h·C + D·x<br/>"
                          f"{m.n_heads} heads, chunks of {m.chunk_size} in a prompt")
    norm_ = g.node("gated_norm", f"RMSNorm(y · SiLU(z)), {m.n_groups} group"
                                 f"{'s' if m.n_groups > 1 else ''}" if m.gated_norm
                   else "y · SiLU(z) (no norm)")
    out = g.node("out_proj", f"out_proj{bias_text(m.proj_bias)}<br/>{inner} → {d}")
    g.edge(proj, conv, "x, B, C")
    g.edge(conv, scan)
    g.edge(proj, scan, "dt")
    g.edge(state, scan, "h")
    g.edge(scan, norm_)
    g.edge(proj, norm_, "z")
    g.edge(norm_, out)
    return [proj], out


def explain(m, d: int) -> str:
    """The selective state-space recurrence and its constant state."""
    s = state_elements(m)
    return (f"Mamba-2 (SSD) in place of attention: in_proj maps x ({commas(d)}) to a gate z and "
            f"an input x' ({commas(m.d_inner)} each), B and C ({m.n_groups} group(s) × "
            f"{m.d_state}) and one step size dt per head; a causal depthwise conv of width "
            f"{m.conv_kernel} mixes the last tokens. Each of {m.n_heads} heads keeps a "
            f"{m.head_dim} × {m.d_state} state S, updated per token as S ← exp(dt·A)·S + "
            "dt·x'·Bᵀ and read as y = S·C + D·x'; y is "
            f"{'normed with' if m.gated_norm else 'multiplied by SiLU of'} the gate z and "
            f"out_proj maps it back to {commas(d)}. The state is {m.n_heads} × {m.head_dim} × {m.d_state} = "
            f"{commas(s['ssm'])} values (fp32) plus a conv window of {commas(s['conv'])}, whatever "
            "the context: no cache grows with the tokens.")


register(StateMixerKind(
    name="mamba2", module="archscope.nn.mamba2:mamba2", parts=parts,
    state_bytes=lambda m, act_bytes: {"conv": state_elements(m)["conv"] * act_bytes,
                                      "ssm": state_elements(m)["ssm"] * SSM_STATE_BYTES},
    step_flops=step_flops, scan_flops=scan_flops,
    activation_width=lambda m: m.in_proj_width,
    display="Mamba-2", describe=describe,
    label=lambda m: f"Mamba-2 {m.n_heads}×{m.head_dim}, state {m.d_state}",
    title=lambda m: f"Mamba-2 mixer: {m.n_heads} heads × {m.head_dim}, state {m.d_state}",
    short=lambda m: f"Mamba-2 {m.n_heads}×{m.head_dim}",
    draw=draw, explain=explain))
