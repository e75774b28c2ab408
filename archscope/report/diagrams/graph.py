"""A tiny mermaid graph builder and the diagram pieces that are not component kinds (norms,
residual scaling, the overview's layer lines).

Each attention and FFN kind draws itself (the `draw` of its entry in archscope/kinds): it adds
its nodes inside the caller's subgraph and its internal edges, and returns (entry node ids, exit
node id). Edges are emitted after every node, so mermaid never pulls a node into the wrong
subgraph (it places a node where it first appears).
"""

from __future__ import annotations

from contextlib import contextmanager

from archscope.kinds import attention_kind, ffn_kind, mixer_kind
from archscope.report.wording import NORM_NAMES
from archscope.units import num, sci
from archscope.spec.schema import LayerPlan, ModelSpec, NormSpec


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
    return (NORM_NAMES[norm.kind] + (" with bias" if norm.has_bias else "")
            + (" × (1 + weight)" if norm.unit_offset else "")
            + ("" if norm.has_weight else " without weight"))


def norm_node(g: Graph, ident: str, name: str, norm: NormSpec) -> str:
    return g.node(ident, f"{name}<br/>{norm_name(norm)}, eps {sci(norm.eps)}")


def residual_label(spec: ModelSpec) -> str | None:
    r = spec.mults.residual
    return None if r == 1 else f"× residual multiplier {num(r)}"


def short_text(spec: ModelSpec, layer: LayerPlan) -> str:
    """'GQA 32/8 heads + SwiGLU MLP 8,192' for the model overview's layer list (from the kinds);
    a hybrid's 'Mamba-2 48×64 + SwiGLU 1,024', 'Mamba-2 64×64 alone', 'ReLU² MLP 21,504 alone'."""
    a, m, f = layer.attention, layer.state, layer.ffn
    texts = [attention_kind(a.kind).short(a) if a else mixer_kind(m.kind).short(m) if m else None,
             ffn_kind(f.kind).short(f) if f else None]
    texts = [t for t in texts if t]
    return texts[0] + " alone" if len(texts) == 1 else " + ".join(texts)
