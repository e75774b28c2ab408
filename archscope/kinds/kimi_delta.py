"""What a Kimi Delta Attention layer (KDA, Kimi Linear's `linear_attention`) weighs, holds
and costs.

Pure arithmetic on a KimiDeltaSpec (`m` below) and d_model (`d`); no torch. Notation:
H = n_heads, h = head_dim (q, k and v all H heads of h: d_k = d_v = h), Q = H*h (qkv_dim),
K = conv_kernel, C = chunk_size, W = 3Q (conv_dim).

FLOPs follow archscope's convention: 2 per multiply-add, matmuls only (the depthwise conv is
counted too: it multiplies each weight once per token, and FlopCounterMode counts it). Left
out: the L2 norms, the gated RMSNorm, silu, sigmoid, softplus, exp and the state's per-channel
decay (elementwise). The recurrence's terms are Gated DeltaNet's (kinds/gated_deltanet.py) with
H heads of h x h: the per-channel decay changes the elementwise work, not the matmuls. Per
sequence: times batch for a batch.
"""

from __future__ import annotations

from archscope.kinds.base import Part, StateMixerKind, Weight, linear, norm
from archscope.kinds.registry import register
from archscope.units import commas

# transformers' KimiLinearDeltaAttention computes the recurrence in fp32 and caches the state
# as fp32 (update_recurrent_state(state.to(torch.float32))) whatever the model's dtype
RECURRENT_BYTES = 4


def parts(m, d: int, prefix: str = "mixer") -> list[Part]:
    """The layer's parameters and per-token multiply-adds, by transformers' module names, in
    the order the class registers them. gates low_rank (KimiLinearDeltaAttention):

        q_proj, k_proj, v_proj   d * Q each
        conv1d                   W * K              depthwise over q|k|v, no bias
        forget_gate.dt_bias      Q                  per key channel (fp32 in transformers)
        forget_gate.A_log        H                  per head, held as [1, 1, H, 1]
        forget_gate.f_a_proj     d * h              the decay's low-rank input
        forget_gate.f_b_proj     h * Q
        b_proj                   d * H              beta per head
        g_a_proj                 d * h              the output gate's low-rank input
        g_b_proj                 h * Q
        o_norm                   h                  one weight shared by the heads
        o_proj                   Q * d
    gates full_rank (BailingHybridDeltaAttention): forget_gate.A_log (H, held [H]),
    forget_gate.dt_bias (Q), forget_gate.f_proj (d * Q) in place of the forget gate's, and
    g_proj (d * Q, registered after o_proj) in place of g_a_proj and g_b_proj.
    """
    q, h = m.qkv_dim, m.head_dim
    gate = "forget_gate"
    conv = Part(f"{prefix}.conv1d", m.conv_dim * m.conv_kernel, m.conv_dim * m.conv_kernel,
                weights=(Weight("conv1d", "Conv1d", "weight", (m.conv_dim, 1, m.conv_kernel)),))
    low = m.gates == "low_rank"
    a_shape = (1, 1, m.n_heads, 1) if low else (m.n_heads,)
    own = {"dt_bias": Part(f"{prefix}.{gate}.dt_bias", q,
                           weights=(Weight(gate, "KimiDeltaForgetGate", "dt_bias", (q,)),)),
           "A_log": Part(f"{prefix}.{gate}.A_log", m.n_heads,
                         weights=(Weight(gate, "KimiDeltaForgetGate", "A_log", a_shape),))}
    qkv = [linear(f"{prefix}.{n}", d, q) for n in ("q_proj", "k_proj", "v_proj")]
    beta = linear(f"{prefix}.b_proj", d, m.n_heads)
    out = [norm(f"{prefix}.o_norm", h, module_type="SigmoidGatedRMSNorm"),
           linear(f"{prefix}.o_proj", q, d)]
    if not low:
        return [*qkv, conv, own["A_log"], own["dt_bias"],
                linear(f"{prefix}.{gate}.f_proj", d, q, module=f"{gate}.f_proj"),
                beta, *out, linear(f"{prefix}.g_proj", d, q)]
    return [*qkv, conv, own["dt_bias"], own["A_log"],
            linear(f"{prefix}.{gate}.f_a_proj", d, h, module=f"{gate}.f_a_proj"),
            linear(f"{prefix}.{gate}.f_b_proj", h, q, module=f"{gate}.f_b_proj"),
            beta, linear(f"{prefix}.g_a_proj", d, h), linear(f"{prefix}.g_b_proj", h, q), *out]


def params(m, d: int) -> int:
    """low_rank: 3dQ + WK + Q + H + dh + hQ + dH + dh + hQ + h + Qd; full_rank: the gates'
    dh + hQ twice become dQ twice."""
    return sum(p.params for p in parts(m, d))


def state_elements(m) -> dict[str, int]:
    """Per sequence, constant in the context:

        conv       W * K        the last K inputs of q, k and v (all K columns, as transformers'
                                cache keeps them; the conv reads K - 1)
        recurrent  H * h * h    one h x h matrix per head
    """
    return {"conv": m.conv_dim * m.conv_kernel, "recurrent": m.n_heads * m.head_dim ** 2}


def state_bytes(m, conv_bytes: int, batch: int = 1,
                recurrent_bytes: int = RECURRENT_BYTES) -> dict[str, int]:
    """batch * (W*K*conv_bytes + H*h*h*recurrent_bytes), by part. conv_bytes is the
    activations' dtype (the conv state is a copy of the conv's inputs); recurrent_bytes is 4 by
    default: transformers casts the state to fp32 before caching it, whatever the model's
    dtype (FLA's chunk_kda returns it in fp32 as well)."""
    elements = state_elements(m)
    return {"conv": batch * elements["conv"] * conv_bytes,
            "recurrent": batch * elements["recurrent"] * recurrent_bytes}


def _projections(m, d: int, tokens: int) -> dict[str, int]:
    """2 * tokens * MACs of the projections and the conv (their MACs per token, from parts)."""
    return {p.name.partition(".")[2]: 2 * tokens * p.macs for p in parts(m, d) if p.macs}


def step_flops(m) -> dict[str, int]:
    """The recurrence's matmuls in one decode step: state_read (S'^T k), state_write (the
    rank-1 update) and output (S^T q), 2 * H*h*h each."""
    per_state = 2 * m.n_heads * m.head_dim ** 2
    return {"state_read": per_state, "state_write": per_state, "output": per_state}


def decode_flops(m, d: int) -> dict[str, int]:
    """One new token: the parts' matmuls (2 * MACs) and step_flops."""
    flops = _projections(m, d, 1)
    out_proj = flops.pop("o_proj")
    return {**flops, **step_flops(m), "o_proj": out_proj}


def n_chunks(m, tokens: int, chunk: int | None = None) -> int:
    """Chunks the prefill runs: ceil(tokens / C), the last one padded to C tokens."""
    return -(-tokens // (chunk or m.chunk_size))


def scan_flops(m, tokens: int, chunk: int | None = None) -> dict[str, int]:
    """The chunked delta rule of a prompt of `tokens` (from a zero state), the projections and
    the conv apart. Convention: whole chunks of C tokens, the last padded, the chunk's square
    matrices computed whole; N = ceil(tokens / C) chunks, P = N*C padded tokens:

        intra_kk     2 * P*C*h * H     beta k k^T within each chunk, decayed per channel
        intra_qk     2 * P*C*h * H     q k^T within each chunk, decayed per channel
        ut_solve     N * C*(C-1) * 2h * H   two unit-triangular solves per chunk (for v and k)
        state_read   2 * 2*P*h*h * H   w S0 (corrections) and q S0 (outputs) each chunk
        intra_av     2 * P*C*h * H     the chunk's scores times its corrections
        state_write  2 * P*h*h * H     k^T times the corrections into the state
    transformers' torch path forms intra_kk and intra_qk as elementwise products summed over
    the channel axis and the solve as a row loop, none of which FlopCounterMode counts
    (tests/conformance/family_cases.py's kimi_linear gap)."""
    chunk = chunk or m.chunk_size
    n = n_chunks(m, tokens, chunk)
    padded, hd, heads = n * chunk, m.head_dim, m.n_heads
    return {"intra_kk": 2 * padded * chunk * hd * heads,
            "intra_qk": 2 * padded * chunk * hd * heads,
            "ut_solve": n * chunk * (chunk - 1) * 2 * hd * heads,
            "state_read": 2 * 2 * padded * hd * hd * heads,
            "intra_av": 2 * padded * chunk * hd * heads,
            "state_write": 2 * padded * hd * hd * heads}


def prefill_flops(m, d: int, tokens: int, chunk: int | None = None) -> dict[str, int]:
    """The projections and conv over `tokens` (not padded) plus scan_flops."""
    flops = _projections(m, d, tokens)
    out_proj = flops.pop("o_proj")
    return {**flops, **scan_flops(m, tokens, chunk), "o_proj": out_proj}


def describe(m) -> str:
    gates = "" if m.gates == "low_rank" else ", full-rank gates"
    bound = "" if m.gate_lower_bound is None else f", decay bounded at {m.gate_lower_bound:g}"
    return (f"Kimi Delta Attention: {m.n_heads} heads x {m.head_dim}, per-channel decay, "
            f"conv {m.conv_kernel}{gates}{bound}")


def draw(g_, spec, m):
    d = commas(spec.d_model)
    qkv = g_.node("qkv", f"q_proj, k_proj, v_proj<br/>{d} → {m.n_heads}×{m.head_dim} each")
    rank = f"f_a → f_b<br/>{d} → {m.head_dim} → " if m.gates == "low_rank" else f"f_proj<br/>{d} → "
    gate = g_.node("forget_gate", f"forget gate {rank}{commas(m.qkv_dim)}: a decay per channel; "
                                  "b_proj → β")
    conv = g_.node("conv", f"causal depthwise conv1d, {m.conv_kernel} taps, SiLU<br/>"
                           "over q, k, v; then L2-normalise q and k")
    state = g_.store("state", f"state per sequence<br/>conv {commas(m.conv_dim)}×{m.conv_kernel}"
                              f" + {m.n_heads} matrices {m.head_dim}×{m.head_dim} (fp32)")
    rule = g_.node("delta", "gated delta rule: S = diag(exp(g))·S + β·k·(v − Sᵀk)ᵀ, o = Sᵀq<br/>"
                            f"chunks of {m.chunk_size} in a prompt")
    norm_ = g_.node("gated_norm", "RMSNorm(o) · sigmoid(gate(x)), per head<br/>" +
                    (f"g_a {d} → {m.head_dim} → g_b" if m.gates == "low_rank" else f"g_proj {d} →")
                    + f" {commas(m.qkv_dim)}")
    out = g_.node("o_proj", f"o_proj<br/>{commas(m.qkv_dim)} → {d}")
    g_.edge(qkv, conv, "q, k, v")
    g_.edge(conv, rule)
    g_.edge(gate, rule, "β, decay")
    g_.edge(state, rule, "S")
    g_.edge(rule, norm_)
    g_.edge(norm_, out)
    return [qkv, gate, norm_], out


def explain(m, d: int) -> str:
    """The gated delta rule with a decay per channel, and its constant state."""
    s = state_elements(m)
    return (f"Kimi Delta Attention in place of attention: q, k and v ({m.n_heads} heads × "
            f"{m.head_dim}) pass a causal conv of width {m.conv_kernel}; each head keeps a "
            f"{m.head_dim} × {m.head_dim} state S, updated per token by the gated delta rule "
            "S ← diag(α)·S + β·k·(v − (diag(α)·S)ᵀk)ᵀ, where α holds one learned decay per key "
            "channel (Gated DeltaNet's is one per head) from a low-rank projection, β a write "
            "strength, and read as o = Sᵀq, then normed, gated by a low-rank sigmoid gate and "
            f"projected back to {commas(d)}. The state is {m.n_heads} × {m.head_dim} × "
            f"{m.head_dim} = {commas(s['recurrent'])} values (fp32) plus a conv window of "
            f"{commas(s['conv'])}, whatever the context.")


register(StateMixerKind(
    name="kimi_delta", module="archscope.nn.kimi_delta:kimi_delta", parts=parts,
    state_bytes=lambda m, act_bytes: state_bytes(m, act_bytes),
    step_flops=step_flops, scan_flops=lambda m, tokens: scan_flops(m, tokens),
    activation_width=lambda m: 3 * m.qkv_dim,
    display="Kimi Delta Attention", describe=describe,
    label=lambda m: f"KDA {m.n_heads}×{m.head_dim}×{m.head_dim}",
    title=lambda m: f"Kimi Delta Attention mixer: {m.n_heads} heads × {m.head_dim}",
    short=lambda m: f"KDA {m.n_heads} heads",
    draw=draw, explain=explain))
