"""Mixture of experts: a router d -> n_experts (a bias with router.bias, gpt-oss), n_experts
routed gated experts (SwiGLU; gpt-oss's clamped unit with ffn.limit, see swiglu) of
d_expert, top_k per token, and the shared experts as ONE SwiGLU of n_shared_experts*d_expert
(or d_shared), optionally scaled by a sigmoid gate d -> 1 (Qwen3-Next's shared_expert_gate).
With ffn.expert mlp or relu2 every expert, routed and shared, is an ungated two-matrix MLP
(up_proj, act, down_proj: Nemotron-H's squared ReLU), two matrices where SwiGLU has three.

DeepSeek-V3's e_score_correction_bias (n_experts numbers per MoE layer, selection only) is a
buffer in transformers, not a parameter, so it is not counted here (it is in the checkpoint).
ERNIE 4.5 holds the same bias as a parameter (router.correction_bias_parameter): counted, one
part `ffn.router_bias`, used by every token (it chooses).

Phi-3.5-MoE's sparsemixer router (router.method sparsemixer) picks its experts one round at a
time from masked logits: the same gate matrix, so the same parameters and matmul FLOPs.
A token uses the router, top_k routed experts and the shared ones (the `active` count).
Its activations: gate and up (ungated: up) of every expert a token visits, plus the router's
logits.
"""

from __future__ import annotations

from dataclasses import replace

from archscope.kinds.registry import register
from archscope.kinds.base import FFNKind, Part, Weight, gated_parts, linear, merged
from archscope.kinds.wording import ACTIVATION_NAMES
from archscope.kinds.swiglu import clamp_text
from archscope.units import commas, num


def expert_weights(ffn, d: int) -> tuple[Weight, ...]:
    """The routed experts as transformers 5.x stores them: every expert's gate and up rows in
    one 3-D tensor (ungated: its up rows, `up_proj`), its down_proj in another (and gpt-oss's
    biases likewise stacked)."""
    n, h = ffn.n_experts, ffn.d_expert
    up, rows = ("gate_up_proj", 2 * h) if ffn.expert is None else ("up_proj", h)
    shapes = {up: (n, rows, d), "down_proj": (n, d, h)}
    if ffn.bias:
        shapes |= {f"{up}_bias": (n, rows), "down_proj_bias": (n, d)}
    return tuple(Weight("experts", "RoutedExperts", name, s) for name, s in shapes.items())


def unit_parts(ffn, prefix: str, d: int, h: int):
    """One expert of width h: a gated MLP, or (ffn.expert mlp, relu2) up_proj and down_proj."""
    if ffn.expert is None:
        return gated_parts(prefix, d, h, ffn.bias)
    return [linear(f"{prefix}.up_proj", d, h, ffn.bias), linear(f"{prefix}.down_proj", h, d,
                                                                ffn.bias)]


def unit_name(f) -> str:
    """'SwiGLU', or an ungated expert's 'squared-ReLU MLP' / 'MLP (gelu)'."""
    if f.expert is None:
        return "SwiGLU"
    return "squared-ReLU MLP" if f.expert == "relu2" else f"MLP ({f.activation})"


def matrices(f) -> int:
    return 3 if f.expert is None else 2


def parts(ffn, d: int):
    w = ffn.d_latent or d  # what the routed experts read and write
    expert = unit_parts(ffn, "expert", w, ffn.d_expert)
    experts = merged("ffn.experts", expert, copies=ffn.n_experts, active=ffn.top_k)
    out = [linear("ffn.router", d, ffn.n_experts, ffn.routing.bias, module="gate",
                  module_type="Router"),
           replace(experts, weights=expert_weights(ffn, w))]
    if ffn.routing.correction_bias_parameter:
        out.insert(1, Part("ffn.router_bias", ffn.n_experts, weights=(
            Weight("gate", "Router", "e_score_correction_bias", (ffn.n_experts,)),)))
    if ffn.shared_experts:
        shared = unit_parts(ffn, "shared", d, ffn.shared_width)
        out.append(merged("ffn.shared_experts", shared, module="shared_experts"))
    if ffn.shared_gate:
        out.append(linear("ffn.shared_expert_gate", d, 1))
    if ffn.d_latent:  # Nemotron-H's latent MoE: d -> d_latent before the experts, back after
        out += [linear("ffn.fc1_latent_proj", d, w, ffn.bias),
                linear("ffn.fc2_latent_proj", w, d, ffn.bias)]
    return out


def _shared(f) -> str:
    return f" + {f.n_shared_experts} shared" if f.shared_experts else ""


def _method(r) -> str:
    """'greedy', 'noaux_tc (1 of 2 groups)', 'sparsemixer (relative gap 2×0.01)'."""
    if r.method == "sparsemixer":
        return f"sparsemixer (relative gap 2×{num(r.jitter_eps)})"
    return r.method + (f" ({r.topk_group} of {r.n_group} groups)" if r.method != "greedy"
                       else "")


def describe(f, d: int) -> str:
    r = f.routing
    routing = _method(r)
    routing += ", sigmoid" if r.scoring == "sigmoid" else ""
    unit = f" ({f.activation}{', bias' if f.bias else ''}{clamp_text(f)})" \
        if f.limit is not None or f.bias else ""
    routing += ", bias" if r.bias else ""
    routing += ", correction bias (a parameter)" if r.correction_bias_parameter else ""
    routing += ", weight on the expert's input" if r.weights == "input" else ""
    w = f.d_latent or d
    latent = f" in a {w}-wide latent ({d}->{w}, {w}->{d})" if f.d_latent else ""
    return (f"MoE: {f.n_experts} experts, top-{f.top_k}{_shared(f)}, each {unit_name(f)} "
            f"{w}->{f.d_expert}->{w}{unit}{latent}; router {routing}")


def draw(g, spec, f):
    d, r = commas(spec.d_model), f.routing
    groups = (f", best {r.topk_group} of {r.n_group} groups"
              if r.method in ("group_limited_greedy", "noaux_tc") else "")
    bias = ((" (+ bias to choose, a parameter)" if r.correction_bias_parameter
             else " (+ bias to choose)") if r.correction_bias else "")
    pick = (f"sparsemixer: {f.top_k} rounds, each a softmax within 2×{num(r.jitter_eps)} of "
            "the best left" if r.method == "sparsemixer" else
            f"{r.scoring}{bias}, top-{f.top_k}{groups}")
    router = g.node("router", f"router<br/>{d} → {f.n_experts}, {pick}")
    w = commas(f.d_latent) if f.d_latent else d
    experts = g.node("experts", f"{f.n_experts} routed experts, {f.top_k} per token<br/>"
                                f"each {unit_name(f)} {w} → {commas(f.d_expert)} → {w}"
                                f"{clamp_text(f)}"
                                + (f"<br/>in a latent: {d} → {w} before, {w} → {d} after"
                                   if f.d_latent else ""))
    weights = "weights renormalised" if r.normalize else f"{r.scoring} weights"
    weights = ("each pick's masked softmax" + (", renormalised" if r.normalize else "")
               if r.method == "sparsemixer" else weights)
    scale = f" × {num(r.scaling_factor)}" if r.scaling_factor != 1 else ""
    combine = g.circle("combine", f"Σ Eᵢ(gᵢ·x){scale}" if r.weights == "input"
                       else f"Σ gᵢ·Eᵢ(x){scale}")
    g.edge(router, experts, f"top-{f.top_k} ids")
    g.dotted(router, combine, weights)
    g.edge(experts, combine)
    entries, out = [router, experts], combine
    if f.shared_experts:
        shared = g.node("shared", f"{f.n_shared_experts} shared experts, every token<br/>one "
                                  f"{unit_name(f)} "
                                  f"{d} → {commas(f.shared_width)} → {d}"
                                  + (", × sigmoid gate" if f.shared_gate else ""))
        total = g.circle("moe_sum", "+")
        g.edge(shared, total)
        g.edge(combine, total)
        entries, out = entries + [shared], total
    return entries, out


def explain(f, d: int) -> str:
    """Routing, the expert unit, and the share of the layer a token uses."""
    m, w = matrices(f), f.d_latent or d
    experts = m * w * f.d_expert
    shared = m * d * f.shared_width if f.shared_experts else 0
    router = d * f.n_experts + 2 * d * (f.d_latent or 0)  # and the latent projections
    total, active = router + f.n_experts * experts + shared, router + f.top_k * experts + shared
    how = (f"{_method(f.routing)}: each of {f.top_k} rounds picks the best expert left and "
           "weighs it by its softmax over the logits near it" if f.routing.method == "sparsemixer"
           else f"{f.routing.method}, {f.routing.scoring}")
    text = (f"A router (W_r, {commas(d)} → {f.n_experts}) scores every expert for each token "
            f"({how}) and the {f.top_k} best run: each "
            + ("a gated unit W_down·(act(W_gate·x) ⊙ W_up·x)" if m == 3 else
               f"an ungated unit W_down·{ACTIVATION_NAMES[f.activation]}(W_up·x)")
            + f" of {commas(f.d_expert)} ({f.d_expert / d:.2f}× {commas(d)}; "
            f"{'three' if m == 3 else 'two'} matrices, {commas(experts)} weights), "
            "their outputs summed with the router's weights."
            + (f" The experts work in a {commas(w)}-wide latent: one projection down from "
               f"{commas(d)} before them and one back up after." if f.d_latent else ""))
    if f.shared_experts:
        text += (f" A shared unit of {commas(f.shared_width)} runs for every token"
                 + (", scaled by a sigmoid gate" if f.shared_gate else "") + ".")
    return text + (f" A token uses {commas(active)} of the layer's {commas(total)} matrix weights "
                   f"({100 * active / total:.1f}%): the cost of a small dense FFN, the capacity "
                   "of a large one.")


def _claim_names(f) -> list[str]:
    if f.expert is None:
        return ["SwiGLU", "MoE"]
    return ["MoE", "MLP", *(["relu2", "squared ReLU", "ReLU²"] if f.expert == "relu2" else [])]


register(FFNKind(
    name="moe", module="archscope.nn.moe:MoE", parts=parts,
    hidden=lambda f: f.d_expert,
    activation_width=lambda f: (matrices(f) - 1) * (f.d_expert * f.top_k + f.shared_width)
    + f.n_experts + (f.d_latent or 0),
    display="MoE", describe=describe,
    label=lambda f: f"MoE: {f.n_experts} {unit_name(f)} experts, top-{f.top_k}{_shared(f)}",
    title=lambda f: f"MoE: {f.n_experts} routed experts, top-{f.top_k}{_shared(f)}",
    short=lambda f: f"MoE {f.n_experts}×{commas(f.d_expert)}, top-{f.top_k}{_shared(f)}",
    draw=draw, claim_names=_claim_names, explain=explain))
