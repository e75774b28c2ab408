"""comparison.md's architecture tables: summary, embedding, attention, FFN, norm, position, tying.

Each function takes the model records (records.architecture_record merged with
costs.cost_record) and returns one markdown section with its conventions line.
"""

from __future__ import annotations

from archscope.report import wording as labels
from archscope.report.fmt import commas, human
from archscope.report.pages import comparison_rows as rows
from archscope.report.pages.markdown import (DASH, layers_label, num, or_dash, section, sci, table,
                                             yes_no)


def params_text(r: dict) -> str:
    p = r["params"]
    active = f" ({human(p['active'])} active)" if p["active"] != p["total"] else ""
    return human(p["total"]) + active


def _share(part: int, r: dict) -> str:
    return f"{100 * part / r['params']['total']:.1f}%"


def notes(records: list[dict]) -> str:
    """The specs' layer notes (what they cannot express, e.g. GPT-3's unpublished band width)."""
    lines = [f"- {r['name']}, {layers_label(n)}: {n['note']}." for r in records for n in r["notes"]]
    return section("Notes from the specs", "\n".join(lines), level=3) if lines else ""


def _mixing(r: dict) -> str:
    """The attention, and a hybrid's state mixers, per distinct kind."""
    text = rows.joined(r, "attention", lambda a: a["label"]) if r["attention"] else ""
    mixers = rows.joined(r, "mixers", lambda m: m["label"]) if r["mixers"] else ""
    return "; ".join(t for t in (mixers, text) if t)


def summary(records: list[dict]) -> str:
    """Three tables (the shape, the sequence mixing, the rest) and the specs' notes."""
    shape = [
        rows.FAMILY,
        ("model", lambda r: r["name"], "l"),
        ("params", params_text, "r"),
        ("layers", lambda r: str(r["n_layers"]), "r"),
        ("hidden", lambda r: commas(r["d_model"]), "r"),
        ("vocab", lambda r: commas(r["vocab_size"]), "r"),
        ("context", lambda r: commas(r["max_seq_len"]), "r"),
        ("tied embeddings", lambda r: yes_no(r["tie_embeddings"]), "l"),
    ]
    mixing = [rows.FAMILY, ("model", lambda r: r["name"], "l"),
              ("attention / mixer", _mixing, "l")]
    parts = [
        rows.FAMILY,
        ("model", lambda r: r["name"], "l"),
        ("FFN", lambda r: rows.joined(r, "ffn", lambda f: f["label"]), "l"),
        ("position", labels.position_cell, "l"),
        ("norm", lambda r: f"{labels.norm_name(r)}, {r['norm']['position']}", "l"),
    ]
    grouped = rows.grouped(records)
    return "\n".join([
        section("Architecture summary", table(grouped, shape),
                "params count unique tensors (a tied head once, B = 10^9), active ones the MoE "
                "top-k routed and shared experts, and context is the spec's max_seq_len."),
        section("Attention and state mixers", table(grouped, mixing),
                "each kind as its entry names it, with its layers when a model's layers differ "
                "(a long layer list is named by its count)."),
        section("FFN, position and norm", table(grouped, parts),
                "the FFN per distinct layer kind, the position scheme with its base and scaling, "
                "and the norm with its placement."),
        notes(records)])


def embedding(records: list[dict]) -> str:
    cols = [
        rows.FAMILY,
        ("model", lambda r: r["name"], "l"),
        ("vocab", lambda r: commas(r["vocab_size"]), "r"),
        ("dim", lambda r: commas(r["d_model"]), "r"),
        ("tied", lambda r: yes_no(r["tie_embeddings"]), "l"),
        ("token embedding params", lambda r: commas(r["params"]["token_embedding"]), "r"),
        ("learned position params", lambda r: commas(r["params"]["positional"]), "r"),
        ("embedding share of total", lambda r: _share(r["params"]["embedding"], r), "r"),
    ]
    note = ("the token embedding is vocab x dim, learned positions max_seq_len x dim (none with "
            "RoPE), and the share is both over the total unique parameters.")
    return section("Embedding", table(rows.grouped(records), cols), note)


def attention(records: list[dict]) -> str:
    cols = [
        rows.FAMILY,
        ("model", lambda x: x["model"], "l"),
        ("type", lambda x: x["part"]["variant"], "l"),
        ("Q heads", lambda x: str(x["part"]["n_heads"]), "r"),
        ("KV heads", lambda x: str(x["part"]["kv_heads"]), "r"),
        ("head dim", lambda x: labels.head_dim(x["part"]), "r"),
        ("group ratio (Q:KV)", lambda x: f"{x['part']['group_size']}:1", "r"),
        ("MLA latent + rope key",
         lambda x: f"{x['part']['kv_lora_rank']} + {x['part']['qk_rope_head_dim']}"
         if x["part"]["kv_lora_rank"] else DASH, "r"),
        ("sliding window", lambda x: or_dash(x["part"]["window"], commas), "r"),
        ("bias", lambda x: yes_no(x["part"]["bias"] or x["part"]["out_bias"]), "l"),
    ]
    note = ("MHA and MQA are GQA with n_kv_heads = n_heads or 1, and MLA caches one latent "
            "(kv_lora_rank) plus one RoPE key shared by all heads, decompressed per head by "
            "kv_b_proj.")
    return section("Attention", table(rows.grouped(rows.expand(records, "attention")), cols),
                   note)


def ffn(records: list[dict]) -> str:
    cols = [
        rows.FAMILY,
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
    note = ("expansion is intermediate / hidden (per expert for MoE), and a layer's active "
            "parameters are its top-k routed experts, its shared experts and its router.")
    return section("Feed-forward network", table(rows.grouped(rows.expand(records, "ffn")), cols),
                   note)


def normalization(records: list[dict]) -> str:
    cols = [
        rows.FAMILY,
        ("model", lambda r: r["name"], "l"),
        ("type", labels.norm_name, "l"),
        ("position", lambda r: r["norm"]["position"] + "-norm", "l"),
        ("bias (β)", lambda r: yes_no(r["norm"]["bias"]), "l"),
        ("epsilon", lambda r: sci(r["norm"]["eps"]), "r"),
    ]
    note = ("pre-norm is x + f(norm(x)) with a final norm, post-norm norm(x + f(x)), output-norm "
            "x + norm(f(x)) with a final norm, and sandwich x + post(f(pre(x))).")
    return section("Normalization", table(rows.grouped(records), cols), note)


def positional(records: list[dict]) -> str:
    cols = [
        rows.FAMILY,
        ("model", lambda r: r["name"], "l"),
        ("kind", lambda r: labels.POSITION_NAMES[r["position"]["kind"]], "l"),
        ("theta", lambda r: num(r["position"]["theta"]), "r"),
        ("scaling", lambda r: labels.SCALING_NAMES[r["position"]["scaling"]["kind"]]
         if r["position"]["scaling"] else DASH, "l"),
        ("factor", lambda r: labels.scaling_field(r, "factor"), "r"),
        ("original context", lambda r: labels.scaling_field(r, "original_max_seq_len"), "r"),
        ("context", lambda r: commas(r["max_seq_len"]), "r"),
        ("sliding window", lambda r: rows.joined(r, "attention",
                                                 lambda a: or_dash(a["window"], commas))
         if r["attention"] else DASH, "r"),
    ]
    note = ("RoPE rotates q and k and has no parameters, learned positions are a max_seq_len x "
            "hidden table, and the sliding window (an attention property) is listed because it "
            "is quoted beside the position scheme.")
    return section("Positional encoding", table(rows.grouped(records), cols), note)


def tying(records: list[dict]) -> str:
    cols = [
        rows.FAMILY,
        ("model", lambda r: r["name"], "l"),
        ("tied", lambda r: yes_no(r["tie_embeddings"]), "l"),
        ("lm_head params (unique)", lambda r: commas(r["params"]["lm_head"]), "r"),
        ("vocab x hidden", lambda r: commas(r["vocab_size"] * r["d_model"]), "r"),
        ("saved by tying", lambda r: commas(r["params"]["saved_by_tying"]), "r"),
        ("total params", lambda r: commas(r["params"]["total"]), "r"),
    ]
    note = ("a tied lm_head reuses the embedding matrix, so it adds no parameters but still "
            "costs 2 x hidden x vocab FLOPs per position.")
    return section("Weight tying", table(rows.grouped(records), cols), note)
