"""The pieces of the block diagram: a tiny mermaid graph builder and one drawer per kind.

A drawer adds its nodes (inside the caller's subgraph) and its internal edges, and returns
(entry node ids, exit node id). Edges are emitted after every node, so mermaid never pulls a
node into the wrong subgraph (it places a node where it first appears).
"""

from __future__ import annotations

from contextlib import contextmanager

from archscope.report.describe import NORM_NAMES
from archscope.report.fmt import commas
from archscope.report.markdown import num, sci
from archscope.spec.schema import AttentionSpec, FFNSpec, LayerPlan, ModelSpec, NormSpec

ACTIVATIONS = {"silu": "SiLU", "gelu": "GELU", "gelu_tanh": "GELU (tanh)", "relu": "ReLU"}


class Graph:
    def __init__(self) -> None:
        self.nodes: list[str] = []
        self.edges: list[str] = []
        self.indent = "    "

    def _add(self, text: str) -> None:
        self.nodes.append(self.indent + text)

    def node(self, ident: str, label: str) -> str:
        self._add(f'{ident}["{_clean(label)}"]')
        return ident

    def circle(self, ident: str, label: str) -> str:
        self._add(f'{ident}(("{_clean(label)}"))')
        return ident

    def store(self, ident: str, label: str) -> str:
        """A cylinder: what stays in memory between steps (the KV cache)."""
        self._add(f'{ident}[("{_clean(label)}")]')
        return ident

    def edge(self, a: str, b: str, label: str | None = None) -> None:
        self.edges.append(f'    {a} -->|"{_clean(label)}"| {b}' if label else f"    {a} --> {b}")

    def dotted(self, a: str, b: str, label: str) -> None:
        self.edges.append(f'    {a} -.->|"{_clean(label)}"| {b}')

    @contextmanager
    def subgraph(self, ident: str, title: str):
        self._add(f'subgraph {ident}["{_clean(title)}"]')
        self.indent += "    "
        yield
        self.indent = self.indent[:-4]
        self._add("end")

    def render(self) -> str:
        return "\n".join(["flowchart TD", *self.nodes, *self.edges]) + "\n"


def _clean(label: str) -> str:
    """Mermaid labels are double-quoted; '#' starts an entity code."""
    return str(label).replace('"', "'").replace("#", "no.")


def norm_name(norm: NormSpec) -> str:
    return NORM_NAMES[norm.kind] + (" with bias" if norm.has_bias else "")


def norm_node(g: Graph, ident: str, name: str, norm: NormSpec) -> str:
    return g.node(ident, f"{name}<br/>{norm_name(norm)}, eps {sci(norm.eps)}")


def residual_label(spec: ModelSpec) -> str | None:
    r = spec.mults.residual
    return None if r == 1 else f"× residual multiplier {num(r)}"


def _bias(flag: bool) -> str:
    return " + bias" if flag else ""


def _rope_text(spec: ModelSpec) -> str:
    p = spec.position
    text = f"RoPE θ={num(p.theta)}"
    return text + (f", {p.scaling.kind} ×{num(p.scaling.factor)}" if p.scaling else "")


def _scale_text(spec: ModelSpec, qk_dim: int) -> str:
    m = spec.mults.attention
    return f"scale {num(m)}" if m else f"/√{qk_dim}"


def attention_title(a: AttentionSpec) -> str:
    if a.kind == "mla":
        return (f"MLA self-attention: {a.n_heads} heads, cached latent {a.kv_lora_rank} + "
                f"shared RoPE key {a.qk_rope_head_dim}")
    return (f"{a.variant} self-attention: {a.n_heads} query / {a.n_kv_heads} KV heads × "
            f"{a.head_dim}")


def gqa(g: Graph, spec: ModelSpec, a: AttentionSpec) -> tuple[list[str], str]:
    d, hd = commas(spec.d_model), commas(a.head_dim)
    q = g.node("q", f"q_proj{_bias(a.bias)}<br/>{d} → {a.n_heads}×{hd}")
    k = g.node("k", f"k_proj{_bias(a.bias)}<br/>{d} → {a.n_kv_heads}×{hd}")
    v = g.node("v", f"v_proj{_bias(a.bias)}<br/>{d} → {a.n_kv_heads}×{hd}")
    window = f"<br/>holds the last {commas(a.window)} tokens" if a.window else ""
    cache = g.store("cache", f"KV cache<br/>2 × {a.n_kv_heads} × {hd} per token{window}")
    span = f"<br/>sliding window {commas(a.window)}" if a.window else ""
    share = (f"{a.group_size} query heads share each KV head" if a.group_size > 1
             else "one KV head per query head")
    sdpa = g.node("sdpa", f"causal softmax(q·kᵀ {_scale_text(spec, a.head_dim)})·v<br/>"
                          f"{share}{span}")
    o = g.node("o_proj", f"o_proj{_bias(a.has_out_bias)}<br/>{a.n_heads}×{hd} → {d}")
    if spec.position.kind == "rope":
        rope = g.node("rope", f"{_rope_text(spec)}<br/>on q and k")
        g.edge(q, rope, "q")
        g.edge(k, rope, "k")
        g.edge(rope, sdpa, "q")
        g.edge(rope, cache, "k")
    else:
        g.edge(q, sdpa, "q")
        g.edge(k, cache, "k")
    g.edge(v, cache, "v")
    g.edge(cache, sdpa, "k, v")
    g.edge(sdpa, o)
    return [q, k, v], o


def mla(g: Graph, spec: ModelSpec, a: AttentionSpec) -> tuple[list[str], str]:
    d, h, rank = commas(spec.d_model), a.n_heads, commas(a.q_lora_rank or 0)
    qk = f"{h}×({a.qk_nope_head_dim}+{a.qk_rope_head_dim})"
    if a.q_lora_rank:
        first = g.node("q_a", f"q_a_proj<br/>{d} → {rank}")
        g.node("q_norm", f"q_a_layernorm<br/>RMSNorm({rank})")
        q = g.node("q_b", f"q_b_proj<br/>{rank} → {qk}")
        g.edge(first, "q_norm")
        g.edge("q_norm", q)
    else:
        first = q = g.node("q", f"q_proj<br/>{d} → {qk}")
    kv_a = g.node("kv_a", f"kv_a_proj_with_mqa<br/>{d} → {a.kv_lora_rank} + {a.qk_rope_head_dim}")
    kv_norm = g.node("kv_norm", f"kv_a_layernorm<br/>RMSNorm({a.kv_lora_rank})")
    rope = g.node("rope", f"{_rope_text(spec)}<br/>on each head's q_rope and the shared k_rope")
    cache = g.store("cache", f"KV cache: latent c_KV {a.kv_lora_rank} + k_rope "
                             f"{a.qk_rope_head_dim}<br/>= {a.kv_lora_rank + a.qk_rope_head_dim} per token")
    kv_b = g.node("kv_b", f"kv_b_proj<br/>{a.kv_lora_rank} → {h}×({a.qk_nope_head_dim}+{a.v_head_dim})"
                          f"<br/>per-head k_nope and v")
    sdpa = g.node("sdpa", f"causal softmax(q·[k_nope, k_rope]ᵀ {_scale_text(spec, a.qk_head_dim)})·v"
                          f"<br/>{h} heads")
    o = g.node("o_proj", f"o_proj<br/>{h}×{a.v_head_dim} → {d}")
    g.edge(q, rope, "q")
    g.edge(kv_a, kv_norm, "latent")
    g.edge(kv_a, rope, "k_rope")
    g.edge(kv_norm, cache, "c_KV")
    g.edge(rope, cache, "k_rope")
    g.edge(rope, sdpa, "q")
    g.edge(cache, kv_b, "c_KV")
    g.edge(cache, sdpa, "k_rope")
    g.edge(kv_b, sdpa, "k_nope, v")
    g.edge(sdpa, o)
    return [first, kv_a], o


def short_text(spec: ModelSpec, layer: LayerPlan) -> str:
    """'GQA 32/8 heads + SwiGLU 8,192' for the model overview's layer list."""
    a, f = layer.attention, layer.ffn
    attn = (f"MLA {a.n_heads} heads, latent {a.kv_lora_rank}" if a.kind == "mla"
            else f"{a.variant} {a.n_heads}/{a.n_kv_heads} heads")
    if a.window:
        attn += f", window {commas(a.window)}"
    if f.kind == "moe":
        shared = f" + {f.n_shared_experts} shared" if f.shared_experts else ""
        ffn = f"MoE {f.n_experts}×{commas(f.d_expert)}, top-{f.top_k}{shared}"
    else:
        ffn = f"{ffn_title(f)} {commas(f.d_ff)}"
    return f"{attn} + {ffn}"


def ffn_title(f: FFNSpec) -> str:
    if f.kind == "moe":
        shared = f" + {f.n_shared_experts} shared" if f.shared_experts else ""
        return f"MoE: {f.n_experts} routed experts, top-{f.top_k}{shared}"
    return {"mlp": "MLP", "swiglu": "SwiGLU MLP"}[f.kind]


def mlp(g: Graph, spec: ModelSpec, f: FFNSpec) -> tuple[list[str], str]:
    d = commas(spec.d_model)
    up = g.node("up", f"up_proj{_bias(f.bias)}<br/>{d} → {commas(f.d_ff)}")
    act = g.node("act", ACTIVATIONS[f.activation])
    down = g.node("down", f"down_proj{_bias(f.bias)}<br/>{commas(f.d_ff)} → {d}")
    g.edge(up, act)
    g.edge(act, down)
    return [up], down


def swiglu(g: Graph, spec: ModelSpec, f: FFNSpec, prefix: str = "", width: int | None = None,
           ) -> tuple[list[str], str]:
    d, ff = commas(spec.d_model), commas(width or f.d_ff)
    gate = g.node(prefix + "gate", f"{prefix}gate_proj{_bias(f.bias)}<br/>{d} → {ff}")
    up = g.node(prefix + "up", f"{prefix}up_proj{_bias(f.bias)}<br/>{d} → {ff}")
    act = g.node(prefix + "act", ACTIVATIONS[f.activation])
    mul = g.circle(prefix + "mul", "⊙")
    down = g.node(prefix + "down", f"{prefix}down_proj{_bias(f.bias)}<br/>{ff} → {d}")
    g.edge(gate, act)
    g.edge(act, mul)
    g.edge(up, mul)
    g.edge(mul, down)
    return [gate, up], down


def moe(g: Graph, spec: ModelSpec, f: FFNSpec) -> tuple[list[str], str]:
    d, r = commas(spec.d_model), f.routing
    limited = r.method == "group_limited_greedy"
    groups = f", best {r.topk_group} of {r.n_group} groups" if limited else ""
    router = g.node("router", f"router<br/>{d} → {f.n_experts}, softmax, top-{f.top_k}{groups}")
    experts = g.node("experts", f"{f.n_experts} routed experts, {f.top_k} per token<br/>"
                                f"each SwiGLU {d} → {commas(f.d_expert)} → {d}")
    weights = "weights renormalised" if r.normalize else "softmax weights"
    scale = f" × {num(r.scaling_factor)}" if r.scaling_factor != 1 else ""
    combine = g.circle("combine", f"Σ gᵢ·Eᵢ(x){scale}")
    g.edge(router, experts, f"top-{f.top_k} ids")
    g.dotted(router, combine, weights)
    g.edge(experts, combine)
    entries, out = [router, experts], combine
    if f.shared_experts:
        shared = g.node("shared", f"{f.n_shared_experts} shared experts, every token<br/>one SwiGLU "
                                  f"{d} → {commas(f.shared_experts * f.d_expert)} → {d}")
        total = g.circle("moe_sum", "+")
        g.edge(shared, total)
        g.edge(combine, total)
        entries, out = entries + [shared], total
    return entries, out


ATTENTION = {"gqa": gqa, "mla": mla}
FFN = {"mlp": mlp, "swiglu": swiglu, "moe": moe}
