"""Mermaid flowcharts of a model and of its decoder block, generated from the spec.

Every node comes from a spec field; attention and FFN are drawn by their kind's entry
(archscope/kinds), so a new preset, a what-if or a new kind draws itself. The output
is mermaid source; the pages wrap it in a ```mermaid fence, which GitHub renders.
"""

from __future__ import annotations

import dataclasses

from archscope.kinds import attention_kind, ffn_kind, mixer_kind
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
    if spec.norm.embedding:  # nanochat's norm of the embedding
        g.node("emb_norm", f"embedding_norm ({parts.norm_name(spec.norm)})")
        g.edge(last, "emb_norm")
        last = "emb_norm"
    lines = [f"{layers_label(gr)}: {parts.short_text(spec, spec.plan[gr['first']])}"
             for gr in groups]
    g.node("layers", f"{spec.n_layers} decoder layers<br/>" + "<br/>".join(lines))
    g.edge(last, "layers", f"hidden {commas(spec.d_model)}")
    for i, note in enumerate(layer_notes(spec)):  # what the spec cannot express, e.g. GPT-3's bands
        g.node(f"note{i}", f"{layers_label(note)}: {note['note']}")
        g.dotted(f"note{i}", "layers", "note")
    last = "layers"
    if spec.norm.position != "post":  # a post-norm stack already ends on a norm
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


# The two norms' HF names by norm.position (archscope.spec.components.NORM_SLOTS).
_NORM_NAMES = {"pre": ("input_layernorm", "post_attention_layernorm"),
               "post": ("input_layernorm", "post_attention_layernorm"),
               "output": ("post_attention_layernorm", "post_feedforward_layernorm"),
               "sandwich": ("input_layernorm", "post_attention_layernorm",
                            "pre_feedforward_layernorm", "post_feedforward_layernorm"),
               "parallel": ("input_layernorm",),
               "normed_residual": ("input_layernorm", "post_attention_layernorm")}


def _mixer_entry(layer: LayerPlan):
    """(kind entry, spec) of the layer's mixer: attention or a state mixer; None for none."""
    if layer.attention is not None:
        return attention_kind(layer.attention.kind), layer.attention
    if layer.state is not None:
        return mixer_kind(layer.state.kind), layer.state
    return None


# One sublayer (a Nemotron-H block: a mixer or an FFN alone), by norm.position: its norms are
# n1 (and n2 for a sandwich), the sublayer runs from `in` to `out`.
_ONE_SUBLAYER = {
    "pre": [("h_in", "n1"), ("n1", "in"), ("out", "add1", "scale"), ("h_in", "add1", "residual"),
            ("add1", "h_out")],
    "post": [("h_in", "in"), ("out", "add1", "scale"), ("h_in", "add1", "residual"),
             ("add1", "n1"), ("n1", "h_out")],
    "output": [("h_in", "in"), ("out", "n1"), ("n1", "add1", "scale"),
               ("h_in", "add1", "residual"), ("add1", "h_out")],
    "sandwich": [("h_in", "n1"), ("n1", "in"), ("out", "n2"), ("n2", "add1", "scale"),
                 ("h_in", "add1", "residual"), ("add1", "h_out")],
    "normed_residual": [("h_in", "n1"), ("n1", "in"), ("out", "add1", "scale"),
                        ("n1", "add1", "residual"), ("add1", "h_out")],
}


def _one_sublayer(g: Graph, spec: ModelSpec, names: tuple[str, ...], ends, scale) -> str:
    for k, name in enumerate(names, 1):
        parts.norm_node(g, f"n{k}", name, spec.norm)
    g.circle("add1", "+")
    g.node("h_out", f"hidden out ({commas(spec.d_model)})")
    entry, out = ends
    for src, dst, *label in _ONE_SUBLAYER[spec.norm.position]:
        label = [scale] if label == ["scale"] else label
        src = out if src == "out" else src
        for target in (entry if dst == "in" else [dst]):
            g.edge(src, target, *label)
    return g.render()


def _targets(entry) -> list:
    """A sublayer's entry node(s) as a list (a kind's draw may give several, q k v)."""
    return entry if isinstance(entry, list) else [entry]


def block_diagram(spec: ModelSpec, layer: LayerPlan) -> str:
    """One decoder layer: norms where the spec puts them, its mixer (attention or a state
    mixer), its FFN, residual adds; a layer with one of the two draws that one alone."""
    g = Graph()
    d = commas(spec.d_model)
    if layer.position != spec.position:  # the attention draws this layer's RoPE (Gemma 3)
        spec = dataclasses.replace(spec, position=layer.position)
    g.node("h_in", f"hidden in ({d})")
    names = _NORM_NAMES[spec.norm.position]
    half = len(names) // 2
    mixing = _mixer_entry(layer)
    both = mixing is not None and layer.ffn is not None
    if both:  # the norms first (a one-sublayer block names its own in _one_sublayer)
        for k, name in enumerate(names, 1):
            parts.norm_node(g, f"n{k}", name, spec.norm)
    if mixing is not None:
        kind, component = mixing
        with g.subgraph("attn", kind.title(component)):
            attn_in, attn_out = kind.draw(g, spec, component)
    if layer.attention is not None and layer.state is not None:  # a hybrid layer: both, summed
        state = mixer_kind(layer.state.kind)
        with g.subgraph("beside", state.title(layer.state)):
            state_in, state_out = state.draw(g, spec, layer.state)
        g.circle("mixed", "+")
        g.edge(attn_out, "mixed")
        g.edge(state_out, "mixed")
        attn_in, attn_out = _targets(attn_in) + _targets(state_in), "mixed"
    if layer.ffn is not None:
        ffn = ffn_kind(layer.ffn.kind)
        with g.subgraph("ffn", ffn.title(layer.ffn)):
            ffn_in, ffn_out = ffn.draw(g, spec, layer.ffn)
    scale = parts.residual_label(spec)
    if not both:
        ends = (attn_in, attn_out) if mixing is not None else (ffn_in, ffn_out)
        sub_names = names[:half] if mixing is not None else names[half:]
        return _one_sublayer(g, spec, sub_names, ends, scale)
    g.circle("add1", "+")
    g.circle("add2", "+")
    g.node("h_out", f"hidden out ({d})")
    # Pre-norm normalises each sublayer's input; post-norm each residual sum; output-norm each
    # sublayer's output before its residual add; sandwich both a sublayer's input and output.
    res = ("h_in", "add1", "residual")
    wiring = {"pre": [("n1", attn_in), ("n2", ffn_in), (attn_out, "add1", scale), res,
                      (ffn_out, "add2", scale), ("h_in", "n1"), ("add1", "n2"),
                      ("add1", "add2", "residual"), ("add2", "h_out")],
              "post": [("h_in", attn_in), ("n1", ffn_in), (attn_out, "add1", scale), res,
                       (ffn_out, "add2", scale), ("add1", "n1"), ("n1", "add2", "residual"),
                       ("add2", "n2"), ("n2", "h_out")],
              "output": [("h_in", attn_in), ("add1", ffn_in), (attn_out, "n1"),
                         ("n1", "add1", scale), res, (ffn_out, "n2"), ("n2", "add2", scale),
                         ("add1", "add2", "residual"), ("add2", "h_out")],
              "sandwich": [("h_in", "n1"), ("n1", attn_in), (attn_out, "n2"),  # both
                           ("n2", "add1", scale), res, ("add1", "n3"), ("n3", ffn_in),
                           (ffn_out, "n4"), ("n4", "add2", scale),
                           ("add1", "add2", "residual"), ("add2", "h_out")],
              # one norm feeds both; both outputs join the residual
              "parallel": [("h_in", "n1"), ("n1", _targets(attn_in) + _targets(ffn_in)),
                           (attn_out, "add1", scale),
                           res, (ffn_out, "add2", scale), ("add1", "add2", "residual"),
                           ("add2", "h_out")],
              # pre's norms, the residual taken after each (MiniMax-01)
              "normed_residual": [("h_in", "n1"), ("n1", attn_in), (attn_out, "add1", scale),
                                  ("n1", "add1", "residual"), ("add1", "n2"), ("n2", ffn_in),
                                  (ffn_out, "add2", scale), ("n2", "add2", "residual"),
                                  ("add2", "h_out")]}
    edges = wiring[spec.norm.position]
    for src, dst, *label in edges:
        for target in dst if isinstance(dst, list) else [dst]:
            g.edge(src, target, *label)
    return g.render()
