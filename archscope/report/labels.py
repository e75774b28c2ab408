"""Short cell texts for one model record's components (records.architecture_record)."""

from __future__ import annotations

from archscope.report.describe import FFN_NAMES, NORM_NAMES
from archscope.report.markdown import DASH, layers_label, num

SCALING_NAMES = {"llama3": "llama3", "yarn": "YaRN", "linear": "linear"}
POSITION_NAMES = {"learned": "learned absolute", "none": "none", "rope": "RoPE"}


def row_label(record: dict, part: dict, parts: list[dict]) -> str:
    """The model name, with the layers when its layers differ in this component."""
    return record["name"] if len(parts) == 1 else f"{record['name']} ({layers_label(part)})"


def expand(records: list[dict], key: str) -> list[dict]:
    """One row per distinct `attention` or `ffn` of each model: {model, record, part}."""
    return [{"model": row_label(r, part, r[key]), "record": r, "part": part}
            for r in records for part in r[key]]


def attention_kind(a: dict) -> str:
    """'GQA', 'MHA', 'MLA', with the sliding window when there is one."""
    return a["variant"] + (f" + sliding window {a['window']:,}" if a["window"] else "")


def heads(a: dict) -> str:
    """Query/KV heads; MLA caches one latent that every head decompresses its K/V from."""
    if a["kind"] == "mla":
        return f"{a['n_heads']}/{a['kv_heads']} (latent {a['kv_lora_rank']}+{a['qk_rope_head_dim']})"
    return f"{a['n_heads']}/{a['kv_heads']}"


def head_dim(a: dict) -> str:
    if a["qk_head_dim"] == a["v_head_dim"]:
        return f"{a['qk_head_dim']}"
    return f"qk {a['qk_head_dim']}, v {a['v_head_dim']}"


def ffn_kind(f: dict) -> str:
    if f["kind"] == "moe":
        shared = f" + {f['n_shared_experts']} shared" if f["n_shared_experts"] else ""
        return f"MoE: {f['n_experts']} SwiGLU experts, top-{f['top_k']}{shared}"
    if f["kind"] == "mlp":
        return f"MLP ({f['activation']})"
    return FFN_NAMES[f["kind"]]


def joined(record: dict, key: str, text) -> str:
    """One text per distinct component, with its layers when there are several."""
    parts = record[key]
    if len(parts) == 1:
        return text(parts[0])
    return "; ".join(f"{text(p)} ({layers_label(p)})" for p in parts)


def position(record: dict) -> str:
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
