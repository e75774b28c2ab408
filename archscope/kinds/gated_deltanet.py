"""What a Gated DeltaNet layer (Qwen3-Next's `linear_attention`) weighs, holds and costs.

Pure arithmetic on a GatedDeltaNetSpec (`g` below) and d_model (`d`); no torch. Notation:
H_k = n_key_heads, H_v = n_value_heads, d_k = key_head_dim, d_v = value_head_dim,
K = conv_kernel, C = chunk_size, key_dim = H_k*d_k, value_dim = H_v*d_v,
conv_dim = 2*key_dim + value_dim.

FLOPs follow archscope's convention: 2 per multiply-add, matmuls only (the depthwise conv is
counted too: it is multiply-adds, and FlopCounterMode counts it). Left out: L2 norms, the
gated RMSNorm, silu, sigmoid, softplus, exp, the state's elementwise decay. Per sequence:
times batch for a batch.
"""

from __future__ import annotations

from archscope.kinds.base import Part, StateMixerKind, Weight, linear, norm, own_weights
from archscope.kinds.registry import register
from archscope.units import commas

RECURRENT_BYTES = 4  # transformers' torch path and cache keep the DeltaNet state in fp32


def parts(g, d: int, prefix: str = "mixer") -> list[Part]:
    """The layer's parameters and per-token multiply-adds, by transformers' module names:

        in_proj_qkvz  d * (2*key_dim + 2*value_dim)        q, k, v and the gate z
        in_proj_ba    d * 2*H_v                            beta's and the decay's inputs
        conv1d        conv_dim * K                         depthwise, no bias; K MACs a channel
        dt_bias       H_v
        A_log         H_v
        norm          d_v                                  one weight shared by the heads
        out_proj      value_dim * d
    (projections "split": in_proj_qkv d * conv_dim, in_proj_z d * value_dim, in_proj_b and
    in_proj_a d * H_v each: the same total, Qwen3.5's names)
    """
    conv = Part(f"{prefix}.conv1d", g.conv_dim * g.conv_kernel, g.conv_dim * g.conv_kernel,
                weights=(Weight("conv1d", "Conv1d", "weight", (g.conv_dim, 1, g.conv_kernel)),))
    if g.projections == "split":
        inputs = [linear(f"{prefix}.in_proj_{name}", d, width) for name, width in
                  (("qkv", g.conv_dim), ("z", g.value_dim), ("b", g.n_value_heads),
                   ("a", g.n_value_heads))]
    else:
        inputs = [linear(f"{prefix}.in_proj_qkvz", d, g.qkvz_width),
                  linear(f"{prefix}.in_proj_ba", d, g.ba_width)]
    return [*inputs,
            conv,
            *own_weights(prefix, "GatedDeltaNet", dict.fromkeys(("dt_bias", "A_log"),
                                                                g.n_value_heads)),
            norm(f"{prefix}.norm", g.value_head_dim, module_type="GatedRMSNorm"),
            linear(f"{prefix}.out_proj", g.value_dim, d)]


def params(g, d: int) -> int:
    """d*(2*key_dim + 2*value_dim) + d*2*H_v + conv_dim*K + 2*H_v + d_v + value_dim*d."""
    return sum(p.params for p in parts(g, d))


def state_elements(g) -> dict[str, int]:
    """Per sequence, constant in the context:

        conv       conv_dim * K        the last K inputs of q, k and v (all K columns, as
                                       transformers' cache keeps them; the conv reads K - 1)
        recurrent  H_v * d_k * d_v     one d_k x d_v matrix per value head
    """
    return {"conv": g.conv_dim * g.conv_kernel,
            "recurrent": g.n_value_heads * g.key_head_dim * g.value_head_dim}


def state_bytes(g, conv_bytes: int, batch: int = 1,
                recurrent_bytes: int = RECURRENT_BYTES) -> dict[str, int]:
    """batch * (conv_dim*K*conv_bytes + H_v*d_k*d_v*recurrent_bytes), by part. conv_bytes is
    the activations' dtype (the conv state takes the dtype of what enters the conv);
    recurrent_bytes is 4 by default: transformers computes and caches the state in fp32
    whatever the model's dtype (FLA's kernels return it in fp32 as well)."""
    elements = state_elements(g)
    return {"conv": batch * elements["conv"] * conv_bytes,
            "recurrent": batch * elements["recurrent"] * recurrent_bytes}


def _projections(g, d: int, tokens: int) -> dict[str, int]:
    """2 * tokens * MACs of the projections and the conv (their MACs per token, from parts)."""
    return {p.name.rpartition(".")[2]: 2 * tokens * p.macs for p in parts(g, d) if p.macs}


def decode_flops(g, d: int) -> dict[str, int]:
    """One new token, one step of the recurrence, by part:

        in_proj_qkvz  2 * d * (2*key_dim + 2*value_dim)
        in_proj_ba    2 * d * 2*H_v
        conv1d        2 * conv_dim * K
        state_read    2 * H_v*d_k*d_v      S'^T k: what the decayed state predicts for k
        state_write   2 * H_v*d_k*d_v      S' + k (beta (v - S'^T k))^T: a rank-1 update
        output        2 * H_v*d_k*d_v      S^T q
        out_proj      2 * value_dim * d
    The decay exp(g) S (H_v*d_k*d_v multiplies, no adds) is elementwise: left out.
    """
    flops = _projections(g, d, 1)
    out_proj = flops.pop("out_proj")
    return {**flops, **step_flops(g), "out_proj": out_proj}


def step_flops(g) -> dict[str, int]:
    """The recurrence's matmuls in one decode step (the parts' apart): state_read, state_write
    and output, 2 * H_v*d_k*d_v each (see decode_flops)."""
    per_state = 2 * g.n_value_heads * g.key_head_dim * g.value_head_dim
    return {"state_read": per_state, "state_write": per_state, "output": per_state}


def n_chunks(g, tokens: int, chunk: int | None = None) -> int:
    """Chunks the prefill runs: ceil(tokens / C), the last one padded to C tokens."""
    chunk = chunk or g.chunk_size
    return -(-tokens // chunk)


def prefill_flops(g, d: int, tokens: int, chunk: int | None = None) -> dict[str, int]:
    """A prompt of `tokens` (from a zero state) by the chunked algorithm, by part.

    Convention: whole chunks of C tokens (C = chunk or g.chunk_size), the last padded, and the
    chunk's square matrices computed whole, triangles included, as transformers' torch path
    and FLA's chunked kernels run them. N = ceil(tokens / C) chunks, P = N*C padded tokens:

        in_proj_qkvz, in_proj_ba, conv1d, out_proj   as decode, times tokens (not padded)
        intra_kk     2 * P*C*d_k * H_v     beta k k^T within each chunk (the UT system)
        intra_qk     2 * P*C*d_k * H_v     q k^T within each chunk
        ut_solve     N * C*(C-1) * (d_k + d_v) * H_v
                                           two unit-triangular solves per chunk, for v and
                                           for k: C*(C-1)/2 MACs a right-hand column
        state_read   2 * 2*P*d_k*d_v * H_v  w S0 (corrections) and q S0 (outputs) each chunk
        intra_av     2 * P*C*d_v * H_v     the chunk's scores times its corrections
        state_write  2 * P*d_k*d_v * H_v   k^T times the corrections into the state
    FlopCounterMode counts every term but ut_solve (it has no rule for triangular solves),
    and counts the conv over padded outputs (see the parity test).
    """
    flops = _projections(g, d, tokens)
    out_proj = flops.pop("out_proj")
    return {**flops, **scan_flops(g, tokens, chunk), "out_proj": out_proj}


def scan_flops(g, tokens: int, chunk: int | None = None) -> dict[str, int]:
    """The chunked delta rule's terms of prefill_flops (intra_kk .. state_write), the
    projections and the conv apart."""
    chunk = chunk or g.chunk_size
    n = n_chunks(g, tokens, chunk)
    padded = n * chunk
    h, dk, dv = g.n_value_heads, g.key_head_dim, g.value_head_dim
    return {"intra_kk": 2 * padded * chunk * dk * h,
            "intra_qk": 2 * padded * chunk * dk * h,
            "ut_solve": n * chunk * (chunk - 1) * (dk + dv) * h,
            "state_read": 2 * 2 * padded * dk * dv * h,
            "intra_av": 2 * padded * chunk * dv * h,
            "state_write": 2 * padded * dk * dv * h}


def describe(g) -> str:
    share = f", {g.heads_per_key} value heads per key head" if g.heads_per_key > 1 else ""
    return (f"Gated DeltaNet: {g.n_key_heads} q/k heads x {g.key_head_dim}, {g.n_value_heads} "
            f"v heads x {g.value_head_dim}{share}, conv {g.conv_kernel}")


def draw(g_, spec, g):
    d = commas(spec.d_model)
    split = g.projections == "split"
    qkvz = g_.node("in_proj_qkvz", f"{'in_proj_qkv, in_proj_z' if split else 'in_proj_qkvz'}"
                                   f"<br/>{d} → q, k {g.n_key_heads}×{g.key_head_dim}"
                                   f" | v, z {g.n_value_heads}×{g.value_head_dim}")
    ba = g_.node("in_proj_ba", f"{'in_proj_b, in_proj_a' if split else 'in_proj_ba'}<br/>"
                               f"{d} → b, a {g.n_value_heads} each")
    conv = g_.node("conv", f"causal depthwise conv1d, {g.conv_kernel} taps, SiLU<br/>"
                           "over q, k, v; then L2-normalise q and k")
    state = g_.store("state", f"state per sequence<br/>conv {commas(g.conv_dim)}×{g.conv_kernel}"
                              f" + {g.n_value_heads} matrices {g.key_head_dim}×"
                              f"{g.value_head_dim} (fp32)")
    rule = g_.node("delta", "gated delta rule: S = exp(g)·S + β·k·(v − Sᵀk)ᵀ, o = Sᵀq<br/>"
                            f"chunks of {g.chunk_size} in a prompt")
    norm_ = g_.node("gated_norm", "RMSNorm(o) · SiLU(z), per value head")
    out = g_.node("out_proj", f"out_proj<br/>{commas(g.value_dim)} → {d}")
    g_.edge(qkvz, conv, "q, k, v")
    g_.edge(conv, rule)
    g_.edge(ba, rule, "β, decay")
    g_.edge(state, rule, "S")
    g_.edge(rule, norm_)
    g_.edge(qkvz, norm_, "z")
    g_.edge(norm_, out)
    return [qkvz, ba], out


def explain(g, d: int) -> str:
    """The gated delta rule and its constant state."""
    s = state_elements(g)
    return (f"Gated DeltaNet in place of attention: q and k ({g.n_key_heads} heads × "
            f"{g.key_head_dim}) and v ({g.n_value_heads} heads × {g.value_head_dim}) pass a causal "
            f"conv of width {g.conv_kernel}; each value head keeps a {g.key_head_dim} × "
            f"{g.value_head_dim} state S, updated per token by the gated delta rule "
            "S ← α·S·(I − β·k·kᵀ) + β·v·kᵀ (α a learned decay, β a write strength) and read as "
            "o = S·q, then normed, gated and projected back to "
            f"{commas(d)}. The state is {g.n_value_heads} × {g.key_head_dim} × {g.value_head_dim} "
            f"= {commas(s['recurrent'])} values (fp32) plus a conv window of {commas(s['conv'])}, "
            "whatever the context.")


register(StateMixerKind(
    name="gated_deltanet", module="archscope.nn.gated_deltanet:gated_deltanet", parts=parts,
    state_bytes=lambda g, act_bytes: state_bytes(g, act_bytes),
    step_flops=step_flops, scan_flops=lambda g, tokens: scan_flops(g, tokens),
    activation_width=lambda g: g.qkvz_width + g.ba_width,
    display="Gated DeltaNet", describe=describe,
    label=lambda g: f"Gated DeltaNet {g.n_value_heads}×{g.key_head_dim}×{g.value_head_dim}",
    title=lambda g: (f"Gated DeltaNet mixer: {g.n_key_heads} q/k heads, {g.n_value_heads} "
                     "value heads"),
    short=lambda g: f"Gated DeltaNet {g.n_key_heads}/{g.n_value_heads} heads",
    draw=draw, explain=explain))
