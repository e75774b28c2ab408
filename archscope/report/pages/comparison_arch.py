"""comparison.md's architecture tables: summary, embedding, attention, FFN, norm, position, tying.

Each function takes the model records (records.architecture_record merged with
costs.cost_record) and returns one markdown section with its conventions line.
"""

from __future__ import annotations

from archscope.report import wording as labels
from archscope.report.fmt import commas, human
from archscope.report.pages.markdown import (DASH, layers_label, num, or_dash, section, sci, table,
                                       yes_no)


def params_text(r: dict) -> str:
    p = r["params"]
    active = f" ({human(p['active'])} active)" if p["active"] != p["total"] else ""
    return human(p["total"]) + active


def _share(part: int, r: dict) -> str:
    return f"{100 * part / r['params']['total']:.1f}%"


def notes_text(records: list[dict]) -> str:
    """The specs' layer notes (what they cannot express, e.g. GPT-3's unpublished band width)."""
    return " ".join(f"{r['name']}, {layers_label(n)}: {n['note']}." for r in records
                    for n in r["notes"])


def summary(records: list[dict]) -> str:
    cols = [
        ("model", lambda r: r["name"], "l"),
        ("params", params_text, "r"),
        ("layers", lambda r: str(r["n_layers"]), "r"),
        ("hidden", lambda r: commas(r["d_model"]), "r"),
        ("attention", lambda r: labels.joined(r, "attention", lambda a: a["label"]), "l"),
        ("Q/KV heads", lambda r: labels.joined(r, "attention", lambda a: a["heads_text"]), "l"),
        ("positional encoding", labels.position_cell, "l"),
        ("FFN", lambda r: labels.joined(r, "ffn", lambda f: f["label"]), "l"),
        ("norm", labels.norm_name, "l"),
        ("norm position", lambda r: r["norm"]["position"], "l"),
        ("vocab", lambda r: commas(r["vocab_size"]), "r"),
        ("context", lambda r: commas(r["max_seq_len"]), "r"),
        ("tied embeddings", lambda r: yes_no(r["tie_embeddings"]), "l"),
    ]
    note = ("params: unique tensors (a tied head counts once), B = 10^9; active: MoE top-k routed "
            "+ shared experts. Context: the spec's max_seq_len. " + notes_text(records))
    return section("Architecture summary", table(records, cols), note)


def embedding(records: list[dict]) -> str:
    cols = [
        ("model", lambda r: r["name"], "l"),
        ("vocab", lambda r: commas(r["vocab_size"]), "r"),
        ("dim", lambda r: commas(r["d_model"]), "r"),
        ("tied", lambda r: yes_no(r["tie_embeddings"]), "l"),
        ("token embedding params", lambda r: commas(r["params"]["token_embedding"]), "r"),
        ("learned position params", lambda r: commas(r["params"]["positional"]), "r"),
        ("embedding share of total", lambda r: _share(r["params"]["embedding"], r), "r"),
    ]
    note = ("token embedding = vocab x dim; learned positions = max_seq_len x dim (zero with "
            "RoPE); share = (token embedding + positions) / total unique params.")
    return section("Embedding", table(records, cols), note)


def attention(records: list[dict]) -> str:
    cols = [
        ("model", lambda x: x["model"], "l"),
        ("type", lambda x: x["part"]["variant"], "l"),
        ("Q heads", lambda x: str(x["part"]["n_heads"]), "r"),
        ("KV heads", lambda x: str(x["part"]["kv_heads"]), "r"),
        ("head dim", lambda x: labels.head_dim(x["part"]), "r"),
        ("group ratio (Q:KV)", lambda x: f"{x['part']['group_size']}:1", "r"),
        ("MLA latent (kv_lora_rank + rope key)",
         lambda x: f"{x['part']['kv_lora_rank']} + {x['part']['qk_rope_head_dim']}"
         if x["part"]["kv_lora_rank"] else DASH, "r"),
        ("sliding window", lambda x: or_dash(x["part"]["window"], commas), "r"),
        ("bias", lambda x: yes_no(x["part"]["bias"] or x["part"]["out_bias"]), "l"),
    ]
    note = ("MHA and MQA are GQA with n_kv_heads = n_heads or 1. MLA: every head gets its own K "
            "and V, decompressed by kv_b_proj from one cached latent (kv_lora_rank) plus one RoPE "
            "key shared by all heads; its q/k head dim is qk_nope + qk_rope. "
            + notes_text(records))
    return section("Attention", table(labels.expand(records, "attention"), cols), note)


def ffn(records: list[dict]) -> str:
    cols = [
        ("model", lambda x: x["model"], "l"),
        ("type", lambda x: x["part"]["display"], "l"),
        ("activation", lambda x: x["part"]["activation"], "l"),
        ("expansion", lambda x: f"{x['part']['expansion']:.2f}×", "r"),
        ("intermediate", lambda x: commas(x["part"]["hidden"]), "r"),
        ("routed experts", lambda x: or_dash(x["part"]["n_experts"]), "r"),
        ("top-k", lambda x: or_dash(x["part"]["top_k"]), "r"),
        ("shared experts", lambda x: or_dash(x["part"]["n_shared_experts"]), "r"),
        ("params per layer", lambda x: commas(x["part"]["params_per_layer"]), "r"),
        ("active per layer", lambda x: commas(x["part"]["active_params_per_layer"]), "r"),
    ]
    note = ("expansion = intermediate / hidden; MoE: intermediate and expansion are per expert "
            "(each routed and shared expert is a SwiGLU of that width; the shared ones run on "
            "every token). Params per layer include the router; active = top-k routed + shared + "
            "router. SwiGLU = gate, up and down projections; MLP = up and down.")
    return section("Feed-forward network", table(labels.expand(records, "ffn"), cols), note)


def normalization(records: list[dict]) -> str:
    cols = [
        ("model", lambda r: r["name"], "l"),
        ("type", labels.norm_name, "l"),
        ("position", lambda r: r["norm"]["position"] + "-norm", "l"),
        ("bias (β)", lambda r: yes_no(r["norm"]["bias"]), "l"),
        ("epsilon", lambda r: sci(r["norm"]["eps"]), "r"),
    ]
    note = ("pre-norm: x + f(norm(x)), with a final norm before lm_head; post-norm: "
            "norm(x + f(x)); output-norm (OLMo 2): x + norm(f(x)), with a final norm. "
            "Values from the specs (each model's config.json or paper).")
    return section("Normalization", table(records, cols), note)


def positional(records: list[dict]) -> str:
    cols = [
        ("model", lambda r: r["name"], "l"),
        ("kind", lambda r: labels.POSITION_NAMES[r["position"]["kind"]], "l"),
        ("theta", lambda r: num(r["position"]["theta"]), "r"),
        ("scaling", lambda r: labels.SCALING_NAMES[r["position"]["scaling"]["kind"]]
         if r["position"]["scaling"] else DASH, "l"),
        ("factor", lambda r: labels.scaling_field(r, "factor"), "r"),
        ("original context", lambda r: labels.scaling_field(r, "original_max_seq_len"), "r"),
        ("context", lambda r: commas(r["max_seq_len"]), "r"),
        ("sliding window", lambda r: labels.joined(r, "attention",
                                                   lambda a: or_dash(a["window"], commas)), "r"),
    ]
    note = ("RoPE rotates q and k only and has no parameters; learned positions are a "
            "max_seq_len x hidden table. The sliding window is an attention property, listed here "
            "because it is often quoted beside the position scheme.")
    return section("Positional encoding", table(records, cols), note)


def tying(records: list[dict]) -> str:
    cols = [
        ("model", lambda r: r["name"], "l"),
        ("tied", lambda r: yes_no(r["tie_embeddings"]), "l"),
        ("lm_head params (unique)", lambda r: commas(r["params"]["lm_head"]), "r"),
        ("vocab x hidden", lambda r: commas(r["vocab_size"] * r["d_model"]), "r"),
        ("saved by tying", lambda r: commas(r["params"]["saved_by_tying"]), "r"),
        ("total params", lambda r: commas(r["params"]["total"]), "r"),
    ]
    note = ("a tied lm_head reuses the embedding matrix: it adds no parameters (but its matmul "
            "still costs 2 x hidden x vocab FLOPs per position).")
    return section("Weight tying", table(records, cols), note)
