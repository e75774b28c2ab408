"""Mermaid flowcharts of a model and of its decoder block, generated from the spec.

Every node comes from a spec field; attention and FFN are drawn by their kind's entry
(archscope/kinds), so a new preset, a what-if or a new kind draws itself. The output
is mermaid source; the pages wrap it in a ```mermaid fence, which GitHub renders.
"""

from __future__ import annotations

from archscope.kinds import attention_kind, ffn_kind
from archscope.report.diagrams import graph as parts
from archscope.report.fmt import commas
from archscope.report.pages.markdown import layers_label, num
from archscope.report.diagrams.graph import Graph
from archscope.report.records import layer_notes
from archscope.spec.schema import LayerPlan, ModelSpec


def model_diagram(spec: ModelSpec, groups: list[dict]) -> str:
    """Token ids -> embedding -> the decoder layers (one line per distinct group) -> head.

    `groups`: dive_records.structure_groups(spec): [{layers, count, first, ...}] in plan order.
    """
    g, m = Graph(), spec.mults
    g.node("ids", "token ids (batch, seq)")
    g.node("emb", f"embed_tokens<br/>{commas(spec.vocab_size)} × {commas(spec.d_model)}")
    g.edge("ids", "emb")
    last = "emb"
    if m.embedding != 1:
        g.node("emb_scale", f"× embedding multiplier {num(m.embedding)}")
        g.edge(last, "emb_scale")
        last = "emb_scale"
    if spec.position.kind == "learned":
        g.node("pos", f"embed_positions (learned)<br/>"
                      f"{commas(spec.max_seq_len)} × {commas(spec.d_model)}")
        g.circle("pos_add", "+")
        g.edge(last, "pos_add")
        g.edge("pos", "pos_add")
        last = "pos_add"
    lines = [f"{layers_label(gr)}: {parts.short_text(spec, spec.plan[gr['first']])}"
             for gr in groups]
    g.node("layers", f"{spec.n_layers} decoder layers<br/>" + "<br/>".join(lines))
    g.edge(last, "layers", f"hidden {commas(spec.d_model)}")
    for i, note in enumerate(layer_notes(spec)):  # what the spec cannot express, e.g. GPT-3's bands
        g.node(f"note{i}", f"{layers_label(note)}: {note['note']}")
        g.dotted(f"note{i}", "layers", "note")
    last = "layers"
    if spec.norm.position == "pre":
        g.node("final_norm", f"norm (final {parts.norm_name(spec.norm)})")
        g.edge(last, "final_norm")
        last = "final_norm"
    g.node("head", f"lm_head<br/>{commas(spec.d_model)} → {commas(spec.vocab_size)}")
    g.edge(last, "head")
    logits = "logits" + (f" ÷ logits scaling {num(m.logits)}" if m.logits != 1 else "")
    g.node("logits", logits)
    g.edge("head", "logits")
    if spec.tie_embeddings:
        g.dotted("head", "emb", "tied: same matrix")
    return g.render()


def block_diagram(spec: ModelSpec, layer: LayerPlan) -> str:
    """One decoder layer: norms where the spec puts them, attention, FFN, residual adds."""
    g = Graph()
    d = commas(spec.d_model)
    g.node("h_in", f"hidden in ({d})")
    n1 = parts.norm_node(g, "n1", "input_layernorm", spec.norm)
    n2 = parts.norm_node(g, "n2", "post_attention_layernorm", spec.norm)
    attn, ffn = attention_kind(layer.attention.kind), ffn_kind(layer.ffn.kind)
    with g.subgraph("attn", attn.title(layer.attention)):
        attn_in, attn_out = attn.draw(g, spec, layer.attention)
    with g.subgraph("ffn", ffn.title(layer.ffn)):
        ffn_in, ffn_out = ffn.draw(g, spec, layer.ffn)
    g.circle("add1", "+")
    g.circle("add2", "+")
    g.node("h_out", f"hidden out ({d})")
    scale = parts.residual_label(spec)
    # Pre-norm normalises each sublayer's input; post-norm each residual sum.
    pre = spec.norm.position == "pre"
    attn_src, ffn_src = ("n1", "n2") if pre else ("h_in", "n1")
    for entry in attn_in:
        g.edge(attn_src, entry)
    for entry in ffn_in:
        g.edge(ffn_src, entry)
    g.edge(attn_out, "add1", scale)
    g.edge("h_in", "add1", "residual")
    g.edge(ffn_out, "add2", scale)
    if pre:
        g.edge("h_in", "n1")
        g.edge("add1", "n2")
        g.edge("add1", "add2", "residual")
        g.edge("add2", "h_out")
    else:
        g.edge("add1", "n1")
        g.edge("n1", "add2", "residual")
        g.edge("add2", "n2")
        g.edge("n2", "h_out")
    return g.render()
