"""Component wording for every surface: one-line descriptions (`show`, `list`, the deep dives'
configuration) and the comparison's table cells. The words for an attention or FFN kind come
from its entry in archscope/kinds; only norms and positions, which are not kinds, are worded here.
"""

from __future__ import annotations

from archscope.kinds import attention_kind, ffn_kind, mixer_kind
from archscope.report.fmt import DASH, layer_ranges, layers_label, num
from archscope.spec.schema import (AttentionSpec, FFNSpec, LayerPlan, ModelSpec, NormSpec,
                                   PositionSpec)

NO_MIXER, NO_FFN = "no mixer (an MLP-only layer)", "no FFN (a mixer-only layer)"

NORM_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}
SCALING_NAMES = {"llama3": "llama3", "yarn": "YaRN", "linear": "linear",
                 "longrope": "LongRoPE"}
# what a norm's position makes of a sublayer f (attention, a state mixer or the FFN) on x
NORM_FORMULAS = {"pre": "x + f(Norm(x))", "post": "Norm(x + f(x))", "output": "x + Norm(f(x))",
                 "sandwich": "x + Norm₂(f(Norm₁(x)))",
                 "parallel": "x + attn(Norm(x)) + mlp(Norm(x)) (one norm, side by side)",
                 "normed_residual": "Norm(x) + f(Norm(x)) (the residual is the normed input)"}
POSITION_NAMES = {"learned": "learned absolute", "none": "none", "rope": "RoPE"}


# --- one line per spec component ------------------------------------------------------------

def attention(attn: AttentionSpec) -> str:
    return attention_kind(attn.kind).describe(attn)


def ffn(f: FFNSpec, d_model: int) -> str:
    return ffn_kind(f.kind).describe(f, d_model)


def state_mixer(m) -> str:
    return mixer_kind(m.kind).describe(m)


def mixer(layer: LayerPlan) -> str:
    """The layer's mixer in one line: its attention, its state mixer, both (a hybrid layer),
    or none."""
    if layer.attention is not None and layer.state is not None:
        return f"{attention(layer.attention)} + beside it {state_mixer(layer.state)}"
    if layer.attention is not None:
        return attention(layer.attention)
    return state_mixer(layer.state) if layer.state else NO_MIXER


def layer_ffn(layer: LayerPlan, d_model: int) -> str:
    return ffn(layer.ffn, d_model) if layer.ffn is not None else NO_FFN


def position(p: PositionSpec) -> str:
    if p.kind != "rope":
        return {"learned": "learned absolute", "none": "none"}[p.kind]
    text = f"RoPE theta={p.theta:g}"
    if p.scaling:
        text += f", {p.scaling.kind} scaling x{p.scaling.factor:g}"
    text += ", adjacent pairs" if p.interleaved else ""
    return text + (", turning the other way" if p.reversed else "")


def head(h) -> str:
    """The LM head beyond its matrix: 'with bias, logits soft-capped at 30'."""
    parts = (["with bias"] if h.bias else []) + (
        [f"logits soft-capped at {h.softcap:g}"] if h.softcap else [])
    return ", ".join(parts) or "a matrix"


def norm(n: NormSpec) -> str:
    bias = " with bias" if n.has_bias else "" if n.has_weight else " without weight"
    offset = " x (1 + weight)" if n.unit_offset else ""
    embedding = ", and one after the embedding" if n.embedding else ""
    return f"{NORM_NAMES[n.kind]}{bias}{offset}, eps {n.eps:g}, {n.position}-norm{embedding}"


def layer_plan(spec: ModelSpec) -> list[dict]:
    """Layers grouped by identical structure: [{layers: '0-15', count, attention, ffn, note}]
    (`attention`: the layer's mixer, attention or a state mixer);
    a layer whose RoPE differs from the model's says so after its attention (Gemma 3)."""
    groups: dict[tuple, list[int]] = {}
    s = spec.shared
    uses = {i: k for k, i in enumerate(s.at)} if s is not None else {}
    for layer in spec.plan:
        rope = f", {position(layer.position)}" if layer.position != spec.position else ""
        rope = rope if layer.attention is not None else ""  # only attention turns q and k
        block = (f"shared block {s.copy_of(uses[layer.index])} (the model's attention and FFN "
                 "over concat(hidden, embeddings), added to the mixer's input), then "
                 if layer.index in uses else "")
        key = (block + mixer(layer) + rope, layer_ffn(layer, spec.d_model), layer.note or "")
        groups.setdefault(key, []).append(layer.index)
    return [{"layers": layer_ranges(idx), "count": len(idx), "attention": a, "ffn": f, "note": n}
            for (a, f, n), idx in groups.items()]


# --- table cells from the architecture records (records.architecture_record) ----------------

def row_label(record: dict, part: dict, parts: list[dict]) -> str:
    """The model name, with the layers when its layers differ in this component."""
    return record["name"] if len(parts) == 1 else f"{record['name']} ({layers_label(part)})"


def expand(records: list[dict], key: str) -> list[dict]:
    """One row per distinct `attention` or `ffn` of each model: {model, record, part}."""
    return [{"model": row_label(r, part, r[key]), "record": r, "part": part}
            for r in records for part in r[key]]


def head_dim(a: dict) -> str:
    if a["qk_head_dim"] == a["v_head_dim"]:
        return f"{a['qk_head_dim']}"
    return f"qk {a['qk_head_dim']}, v {a['v_head_dim']}"


def joined(record: dict, key: str, text) -> str:
    """One text per distinct component, with its layers when there are several."""
    parts = record[key]
    if len(parts) == 1:
        return text(parts[0])
    return "; ".join(f"{text(p)} ({layers_label(p)})" for p in parts)


def position_cell(record: dict) -> str:
    p = record["position"]
    text = POSITION_NAMES[p["kind"]]
    if p["kind"] == "rope":
        text += f" θ={num(p['theta'])}"
    if p["scaling"]:
        text += f" + {SCALING_NAMES[p['scaling']['kind']]} ×{num(p['scaling']['factor'])}"
    return text


def norm_name(record: dict) -> str:
    return NORM_NAMES[record["norm"]["kind"]]


def scaling_field(record: dict, key: str) -> str:
    s = record["position"]["scaling"]
    return num(s[key]) if s and key in s else DASH


# --- explanations of what is not a kind: norms, positions, tying ----------------------------

NORM_MATH = {"rmsnorm": "y = x / √(mean(x²) + ε) · w", "layernorm": "y = (x − mean(x)) / √(var(x) + ε) · w"}


def norm_explain(n: NormSpec, d: int) -> str:
    math = NORM_MATH[n.kind] + (" + b" if n.has_bias else "")
    if n.unit_offset:
        math = math.replace("· w", "· (1 + w)")
    if not n.has_weight:
        math = math.replace(" · w", "")
    params = (2 if n.has_bias else 1 if n.has_weight else 0) * d
    return (f"{NORM_NAMES[n.kind]}: {math}, ε = {n.eps:g}, {params:,} parameters per norm of "
            f"width {d:,}. Placement '{n.position}': each sublayer f becomes "
            f"{NORM_FORMULAS[n.position]}" + (", and a final norm precedes lm_head" if
                                            n.position != "post" else "")
            + ("; one more norms the embedding before the first layer." if n.embedding
               else "."))


def position_explain(p: PositionSpec, spec: ModelSpec) -> str:
    if p.kind == "learned":
        return (f"Learned absolute positions: a {spec.max_seq_len:,} × {spec.d_model:,} table "
                f"({spec.max_seq_len * spec.d_model:,} parameters) is added to the token "
                f"embedding, so no position past {spec.max_seq_len:,} exists.")
    if p.kind == "none":
        return "No positional encoding: order reaches the model only through the causal mask."
    text = (f"RoPE: q and k (never v) are rotated pair by pair; pair i turns by θ^(-2i/d) "
            f"radians per token with θ = {num(p.theta)}, so the dot product of a query and a "
            "key depends only on their distance. No parameters.")
    if p.scaling and p.scaling.kind == "longrope":
        text += (f" LongRoPE scaling ×{num(p.scaling.factor)}: each pair is slowed by its own "
                 f"short factor up to {p.scaling.original_max_seq_len:,} tokens and its own "
                 "long factor past them, chosen per forward call by its last position (the "
                 "table below).")
    elif p.scaling:
        text += (f" {SCALING_NAMES[p.scaling.kind]} scaling ×{num(p.scaling.factor)} stretches "
                 "the slow pairs for a longer context (the table below).")
    return text


def tying_explain(spec: ModelSpec, embedding: int) -> str:
    if spec.tie_embeddings:
        return (f"Tied: lm_head computes logits = h · Eᵀ with the embedding matrix E itself "
                f"({spec.vocab_size:,} × {spec.d_model:,}), saving {embedding:,} parameters.")
    return (f"Untied: lm_head is its own {spec.d_model:,} → {spec.vocab_size:,} matrix "
            f"({spec.vocab_size * spec.d_model:,} parameters beside the embedding's).")
