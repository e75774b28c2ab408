"""What a lightning-attention layer (MiniMax-01's `linear_attention` layers) weighs, holds and
costs.

Pure arithmetic on a LightningSpec (`g` below) and d_model (`d`); no torch. Notation:
H = n_heads, d_h = head_dim, W = H * d_h, B = block_size.

The state: one d_h x d_h matrix per head, kept in the activations' dtype. transformers'
MiniMaxLightningAttention makes it in the dtype of v (the model's: bf16 under bf16 weights,
no fp32 upcast) and MiniMaxCache keeps that tensor as it is ([batch, H, d_h, d_h] per layer in
`linear_cache`). There is no conv window.

FLOPs follow archscope's convention: 2 per multiply-add, matmuls only. Left out: the
activation on q, k, v, the decays (elementwise multiplies), the RMSNorm and the sigmoid gate's
product. Per sequence: times batch for a batch.
"""

from __future__ import annotations

from archscope.kinds.base import Part, StateMixerKind, linear, norm
from archscope.kinds.registry import register
from archscope.units import commas


def parts(g, d: int, prefix: str = "mixer") -> list[Part]:
    """The layer's parameters and per-token multiply-adds, by transformers' module names and in
    the order MiniMaxLightningAttention registers them:

        norm         W                 RMSNorm over the heads' outputs end to end
        qkv_proj     d * 3W            q, k, v per head
        out_proj     W * d
        output_gate  d * W             sigmoid gate on the normed output
    The decay rates are buffers derived from the depth (spec/lightning.py), not parameters.
    """
    return [norm(f"{prefix}.norm", g.width),
            linear(f"{prefix}.qkv_proj", d, 3 * g.width),
            linear(f"{prefix}.out_proj", g.width, d),
            linear(f"{prefix}.output_gate", d, g.width)]


def params(g, d: int) -> int:
    """W + 3dW + Wd + dW = W (5d + 1)."""
    return sum(p.params for p in parts(g, d))


def state_elements(g) -> dict[str, int]:
    """Per sequence, constant in the context: recurrent H * d_h * d_h (one k^T v sum a head)."""
    return {"recurrent": g.n_heads * g.head_dim * g.head_dim}


def state_bytes(g, act_bytes: int, batch: int = 1) -> dict[str, int]:
    """batch * H * d_h * d_h * act_bytes: the state in the activations' dtype (see the module
    doc: transformers neither upcasts nor casts it)."""
    return {"recurrent": batch * state_elements(g)["recurrent"] * act_bytes}


def step_flops(g) -> dict[str, int]:
    """One decode step's recurrence, besides the projections (transformers' recurrent path):

        state_write  2 * H * d_h^2     k^T v, the outer product added to the decayed state
        output       2 * H * d_h^2     q S
    The decay exp(-s) S (H d_h^2 multiplies, no adds) is elementwise: left out.
    """
    per_state = 2 * g.n_heads * g.head_dim * g.head_dim
    return {"state_write": per_state, "output": per_state}


def blocks(g, tokens: int) -> list[int]:
    """The blocks a prompt of `tokens` runs in: B tokens each, the last one what is left (not
    padded: transformers slices it)."""
    full, rest = divmod(tokens, g.block_size)
    return [g.block_size] * full + ([rest] if rest else [])


def scan_flops(g, tokens: int) -> dict[str, int]:
    """A prompt of `tokens` from a zero state by the blocked algorithm, besides the projections.

    Convention: transformers' blocked path as it runs, every block of c tokens (the last one
    shorter, not padded) computing its whole c x c square (the causal mask is a multiplicative
    decay of zeros above the diagonal, so the masked half is computed too), and the first
    block's read of the zero state as well. Per head, summed over the blocks:

        intra_qk     2 * c^2 * d_h     q k^T within the block
        intra_av     2 * c^2 * d_h     the decayed scores times v
        state_read   2 * c * d_h^2     (decayed q) S: what earlier blocks contribute
        state_write  2 * c * d_h^2     (decayed k)^T v into the state
    FlopCounterMode counts exactly these matmuls over transformers' eager model.
    """
    squares = sum(c * c for c in blocks(g, tokens))
    h, dh = g.n_heads, g.head_dim
    return {"intra_qk": 2 * squares * dh * h, "intra_av": 2 * squares * dh * h,
            "state_read": 2 * tokens * dh * dh * h, "state_write": 2 * tokens * dh * dh * h}


def describe(g) -> str:
    return (f"lightning attention: {g.n_heads} heads x {g.head_dim}, decay per head, "
            f"blocks of {g.block_size}")


def draw(g_, spec, g):
    d = commas(spec.d_model)
    qkv = g_.node("qkv_proj", f"qkv_proj<br/>{d} → q, k, v {g.n_heads}×{g.head_dim}, "
                              f"{g.activation}")
    gate = g_.node("output_gate", f"output_gate<br/>{d} → {commas(g.width)}, sigmoid")
    state = g_.store("state", f"state per sequence<br/>{g.n_heads} matrices {g.head_dim}×"
                              f"{g.head_dim} (activations' dtype)")
    rule = g_.node("lightning", "S = exp(−s_h)·S + kᵀv, o = q·S<br/>"
                                f"s_h from the head and the depth; blocks of {g.block_size}")
    norm_ = g_.node("norm", f"RMSNorm over {commas(g.width)} · gate")
    out = g_.node("out_proj", f"out_proj<br/>{commas(g.width)} → {d}")
    g_.edge(qkv, rule, "q, k, v")
    g_.edge(state, rule, "S")
    g_.edge(rule, norm_)
    g_.edge(gate, norm_, "gate")
    g_.edge(norm_, out)
    return [qkv, gate], out


def explain(g, d: int) -> str:
    """The decayed linear attention and its constant state."""
    s = state_elements(g)
    return (f"Lightning attention in place of softmax attention: q, k and v ({g.n_heads} heads "
            f"× {g.head_dim}, through {g.activation}) feed a linear attention with no softmax. "
            f"Each head keeps a {g.head_dim} × {g.head_dim} state S ← exp(−s_h)·S + kᵀv, read as "
            "o = q·S, its decay s_h fixed by the head and the layer's depth (no weight holds "
            "it); the outputs are RMS-normed, gated by sigmoid(output_gate(x)) and projected "
            f"back to {commas(d)}. A prompt runs in blocks of {g.block_size} tokens: a decayed "
            "q·kᵀ square inside each block, the state across them. The state is "
            f"{g.n_heads} × {g.head_dim} × {g.head_dim} = {commas(s['recurrent'])} values in the "
            "activations' dtype, whatever the context.")


register(StateMixerKind(
    name="lightning", module="archscope.nn.lightning:lightning", parts=parts,
    state_bytes=lambda g, act_bytes: state_bytes(g, act_bytes),
    step_flops=step_flops, scan_flops=scan_flops,
    activation_width=lambda g: 4 * g.width,
    display="lightning attention", describe=describe,
    label=lambda g: f"lightning {g.n_heads}×{g.head_dim}×{g.head_dim}",
    title=lambda g: f"Lightning attention mixer: {g.n_heads} heads of {g.head_dim}",
    short=lambda g: f"lightning attention {g.n_heads} heads",
    draw=draw, explain=explain, per_layer=True))
