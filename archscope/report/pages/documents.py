"""reports/documents.md: every table of the five explainers (../shared/seeds/) and where it is
regenerated: a section of this page, of comparison.md or of a deep dive, or the reason no spec
can compute it. The tables themselves come from document_tables.py and comparison_arch.py,
restricted to the models the documents name."""

from __future__ import annotations

import re

from archscope.report import wording
from archscope.report.pages import comparison_arch as arch
from archscope.report.pages import document_tables as tables
from archscope.report.pages.markdown import GENERATED, page, section, table

DOCS = {"000": "000_2e845f9665e327b8.txt (Llama 3.2-1B deep dive)",
        "001": "001_3ae763bd7b7368b2.txt (Llama 3.2 3B layers)",
        "002": "002_3bf0b36fc7ab621b.txt (Llama 3.2 3B vs 3.1 8B)",
        "003": "003_3413dd70392ad7c9.txt (LLaMA 3 from scratch)",
        "004": "004_459985a714e33559.txt (decoder-only study guide)"}
# (document, its section, the table, where regenerated: a title on this page, 'page.md#Title',
# or '!' + why no spec computes it)
QUALITATIVE = "!qualitative: no number a spec determines"
INDEX = [
    ("000", "2.1", "Embedding in Llama 3.2", "models/llama-3.2-1b.md#Parameter breakdown"),
    ("000", "2.2", "Cross-model embedding", "Embedding and weight tying"),
    ("000", "3.3", "MHA vs GQA projection parameters", "llama-3.2-1b: MHA vs GQA vs MQA"),
    ("000", "3.3", "KV cache per layer and 16 layers, 1,024 tokens", "llama-3.2-1b: MHA vs GQA vs MQA"),
    ("000", "3.4", "Cross-model attention", "Attention"),
    ("000", "3.5", "MLA cache per token", "Cache per token: MHA, GQA and MLA"),
    ("000", "4.6", "Positional encoding comparison", "Positional encoding"),
    ("000", "5.4", "FFN parameter count, GELU vs SwiGLU",
     "llama-3.2-1b: SwiGLU vs a GELU MLP at equal width and at equal parameters"),
    ("000", "5.5", "Cross-model FFN", "Feed-forward network"),
    ("000", "6.4", "Pre-norm vs post-norm", "Norm placement"),
    ("000", "6.5", "Cross-model normalization", "Normalization"),
    ("000", "7.3", "KV cache at 4,096 tokens", "KV cache at 4,096 tokens (fp16, batch 1)"),
    ("000", "8.1", "Full architecture summary", "Architecture summary"),
    ("001", "模型基本資訊", "Llama 3.2 3B configuration", "models/llama-3.2-3b.md#Configuration"),
    ("001", "參數統計", "Parameters per layer and in total", "models/llama-3.2-3b.md#Per-layer structure"),
    ("002", "Specifications", "3B vs 8B specifications", "llama-3.2-3b vs llama-3.1-8b: specifications and reductions"),
    ("002", "2", "Embedding layer", "Embedding and weight tying"),
    ("002", "Why GQA?", "MHA vs GQA cache", "llama-3.2-3b: MHA vs GQA vs MQA"),
    ("002", "Parameter Count", "Parameter breakdown", "llama-3.2-3b: parameters by component"),
    ("002", "Dimension Reduction", "3B vs 8B reduction percentages", "llama-3.2-3b vs llama-3.1-8b: specifications and reductions"),
    ("002", "FLOPs per Token", "Per-layer FLOPs and the 8B's decode FLOPs (no table: worked sums)",
     "Decode FLOPs per token: per layer, with and without the head"),
    ("003", "RoPE Configuration / Notable Features 1", "RoPE frequencies and llama3 bands (in prose and code)",
     "llama-3.2-1b: RoPE frequencies (θ = 500,000, 64 rotated dims)"),
    ("003", "Notable Features 4", "KV cache at 131,072 tokens", "models/llama-3.2-1b.md#KV cache (fp16, batch 1)"),
    ("004", "1", "Kinds of AI", QUALITATIVE), ("004", "2", "Encoder vs decoder models", QUALITATIVE),
    ("004", "3.2", "Transformer components", QUALITATIVE), ("004", "4.2", "Why decoder-only", QUALITATIVE),
    ("004", "5.2", "Tokenizer methods", "!tokenizers: no spec holds a tokenizer"),
    ("004", "5.3", "BPE steps", "!tokenizers: a worked merge example, no spec holds merges"),
    ("004", "5.4", "Special tokens", "!tokenizers: token strings are not in a spec"),
    ("004", "5.5", "Vocabulary and embedding parameters", "Embedding and weight tying"),
    ("004", "6.3", "Weight tying", "Embedding and weight tying"),
    ("004", "7.1", "Q, K, V library analogy", QUALITATIVE),
    ("004", "7.3", "What heads capture", "!learned behaviour: needs trained weights, not a spec"),
    ("004", "7.4", "Attention variants MHA/MQA/GQA/MLA", "llama-3.2-1b: MHA vs GQA vs MQA"),
    ("004", "7.5", "GQA savings in Llama 3.2-1B", "llama-3.2-1b: MHA vs GQA vs MQA"),
    ("004", "9.4", "Positional encoding comparison", "Positional encoding"),
    ("004", "10.3", "Gate values", QUALITATIVE),
    ("004", "10.4", "ReLU vs GELU vs SwiGLU (matrices per layer)",
     "llama-3.2-1b: SwiGLU vs a GELU MLP at equal width and at equal parameters"),
    ("004", "11.3", "LayerNorm vs RMSNorm (learnable params d vs 2d)", "Normalization"),
    ("004", "11.4", "Pre-norm vs post-norm", "Norm placement"),
    ("004", "12.1", "Residual connections", QUALITATIVE),
    ("004", "13.2", "Sampling strategies and temperature (2 tables)", "!decoding settings: not part of a spec"),
    ("004", "14.1", "Recomputation without a KV cache", "!a worked token example, no quantity"),
    ("004", "14.4", "KV cache at 4,096 tokens", "KV cache at 4,096 tokens (fp16, batch 1)"),
    ("004", "15.2", "Training stages", "!training data and stages: not part of a spec"),
    ("004", "15.3", "Backpropagation steps", QUALITATIVE),
    ("004", "16.1", "Full architecture comparison", "Architecture summary"),
    ("004", "17.3", "Concepts summary", QUALITATIVE),
]
NOT_BUILDABLE = ("Sinusoidal positions (the original Transformer, an encoder-decoder) and ALiBi "
                 "(BLOOM, MPT) are named in the positional tables but are no position kind "
                 "archscope builds (learned, RoPE, none), so they have no row.")


def anchor(title: str) -> str:
    """GitHub's heading slug."""
    slug = re.sub(r"[^\w\- ]", "", title.strip().lower(), flags=re.UNICODE)
    return "#" + slug.replace(" ", "-")


MISSING = "not in this build (its model was not given)"


def target_link(target: str, titles: set[str]) -> str:
    if target.startswith("!"):
        return "not computable: " + target[1:]
    if "#" not in target and target not in titles:
        return MISSING
    path, _, title = target.rpartition("#")
    return f"[{path or 'this page'}: {title}]({path}{anchor(title)})"


def index(titles: set[str]) -> str:
    rows = [{"doc": d, "section": s, "table": t, "at": target_link(target, titles)}
            for d, s, t, target in INDEX]
    cols = [("doc", lambda r: r["doc"], "l"), ("§", lambda r: r["section"], "l"),
            ("table", lambda r: r["table"], "l"), ("regenerated in", lambda r: r["at"], "l")]
    docs = "\n".join(f"- {key}: {text}" for key, text in DOCS.items())
    return section("Index: every table of the documents", docs + "\n\n" + table(rows, cols),
                   NOT_BUILDABLE)


def norm_placement(records: list[dict]) -> tuple[str, str]:
    groups: dict[str, list[str]] = {}
    for r in records:
        groups.setdefault(r["norm"]["position"], []).append(r["name"])
    rows = [{"position": p, "formula": wording.NORM_FORMULAS[p], "models": ", ".join(m)}
            for p, m in groups.items()]
    cols = [("position", lambda r: r["position"], "l"), ("sublayer f", lambda r: r["formula"], "l"),
            ("used by", lambda r: r["models"], "l")]
    title = "Norm placement"
    return title, section(title, table(rows, cols), "read from each spec's norm.position; "
                          "GPT-2 and GPT-3 both normalise before each sublayer (pre-norm).")


def documents_page(records: list[dict], docs: dict) -> str:
    """records: the comparison's records; docs: document_records.document_records."""
    named = [r for r in records if r["name"] in docs["models"]]
    named.sort(key=lambda r: docs["models"].index(r["name"]))
    parts = [(t, s) for t, s in (("Architecture summary", arch.summary(named)),
                                 ("Attention", arch.attention(named)),
                                 ("Feed-forward network", arch.ffn(named)),
                                 ("Normalization", arch.normalization(named)),
                                 ("Positional encoding", arch.positional(named)))]
    mla_rows = [r for r in named if r["name"] in ("llama-3.2-1b", "deepseek-v2")]
    parts += [norm_placement(named), tables.tying(named), tables.kv_cache(docs["kv_cache"])]
    parts += [tables.mla_cache(mla_rows)] if mla_rows else []
    parts += [tables.attention_variants(m, rows) for m, rows in docs["attention_variants"].items()]
    parts += [tables.ffn_variants(m, rows) for m, rows in docs["ffn_variants"].items()]
    parts += [tables.rope(r) for r in docs["rope"]]
    if docs["layer_flops"]:
        parts.append(tables.layer_flops(docs["layer_flops"]))
    if len(docs["shapes"]) == 2:
        parts.append(tables.reductions(docs["shapes"]))
    parts += [tables.breakdown(r) for r in docs["shapes"][:1]]
    head = (f"# The explainers' tables, regenerated\n\n{GENERATED}\n\nThe five architecture "
            "explainers in `../shared/seeds/` hold tables of numbers; archscope recomputes each "
            "one from the specs (the documents contain mistakes: compare, never copy). The "
            "models they name: " + ", ".join(f"[{m}](models/{m}.md)" for m in docs["models"])
            + ". Raw numbers: [data/documents.json](data/documents.json).\n")
    return page(head, index({t for t, _ in parts}), *(s for _, s in parts))
