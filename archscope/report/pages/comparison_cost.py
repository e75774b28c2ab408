"""comparison.md's cost tables: KV elements, KV cache in bytes, projection parameters, compute."""

from __future__ import annotations

from archscope.report import wording as labels
from archscope.report.fmt import commas, human, mb, mib
from archscope.report.pages import comparison_rows as rows
from archscope.report.pages.markdown import DASH, flops_text, section, table


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%"


def kv_elements(records: list[dict]) -> str:
    cols = [
        rows.FAMILY,
        ("model", lambda x: x["model"], "l"),
        ("type", lambda x: x["part"]["variant"], "l"),
        ("cached per token per layer", lambda x: x["part"]["cache_formula"], "r"),
        ("elements", lambda x: commas(x["part"]["kv_elements_per_token"]), "r"),
        ("MHA-equivalent", lambda x: commas(x["part"]["mha_elements_per_token"]), "r"),
        ("decompressed (naive MLA)", lambda x: commas(x["part"]["decompressed_elements_per_token"])
         if x["part"]["compressed_cache"] else DASH, "r"),
        ("cached / MHA", lambda x: _percent(x["part"]["kv_elements_per_token"],
                                            x["part"]["mha_elements_per_token"]), "r"),
    ]
    note = ("elements per token per layer are 2 × n_kv_heads × head_dim for GQA, MHA and MQA, "
            "kv_lora_rank + qk_rope_head_dim for MLA, and n_heads × (q/k + v head dim) for the "
            "MHA-equivalent (also what naive MLA stores decompressed).")
    return section("KV cache elements per token",
                   table(rows.grouped(rows.expand(records, "attention")), cols), note)


def _per_layer(cache: dict, text, field: str = "bytes") -> str:
    """One value per distinct layer kind (a window layer holds fewer tokens than a full one)."""
    parts = cache["per_layer"]
    if len(parts) == 1:
        return text(parts[0][field])
    return "; ".join(f"{text(p[field])} ({rows.part_label(p, parts)})" for p in parts)


def _mb(n: int) -> str:
    return mb(n).removesuffix(" MB")


def _mib(n: int) -> str:
    return mib(n).removesuffix(" MiB")


def kv_cache(records: list[dict], index: int) -> str:
    """The cache at TABLE_LENGTHS[index] tokens: in total, then per layer."""
    seq_len = records[0]["kv_cache"][index]["seq_len"]
    dtype = records[0]["kv_cache"][index]["dtype"]

    def model(r):
        return r["name"] + (" *" if r["kv_cache"][index]["exceeds_context"] else "")

    def c(r):
        return r["kv_cache"][index]

    total = [
        rows.FAMILY,
        ("model", model, "l"),
        ("layers", lambda r: str(r["n_layers"]), "r"),
        ("total (bytes)", lambda r: commas(c(r)["bytes"]), "r"),
        ("total (MB)", lambda r: _mb(c(r)["bytes"]), "r"),
        ("total (MiB)", lambda r: _mib(c(r)["bytes"]), "r"),
        ("MHA-equivalent total (MB)", lambda r: _mb(c(r)["mha_bytes"]), "r"),
    ]
    per_layer = [
        rows.FAMILY,
        ("model", model, "l"),
        ("per layer (bytes)", lambda r: _per_layer(c(r), commas), "r"),
        ("per layer (MiB)", lambda r: _per_layer(c(r), _mib), "r"),
        ("MHA-equivalent per layer (MB)", lambda r: _per_layer(c(r), _mb, "mha_bytes"), "r"),
    ]
    grouped = rows.grouped(records)
    title = f"at {seq_len:,} tokens ({dtype})"
    return "\n".join([
        section(f"KV cache {title}", table(grouped, total),
                f"{seq_len:,} tokens × elements per token × 2 bytes ({dtype}, as bf16) × layers, "
                "batch 1, MB = 10^6 and MiB = 2^20 bytes, * past the model's max_seq_len (a "
                "what-if)."),
        section(f"KV cache per layer {title}", table(grouped, per_layer),
                "a sliding-window layer holds at most its window, so a model whose layers differ "
                "gives one value per kind of layer.")])


def _get(proj: dict, *names: str) -> int | None:
    found = [proj[n] for n in names if n in proj]
    return sum(found) if found else None


def _query(p: dict) -> int:
    return _get(p, "q_proj", "q_a_proj", "q_b_proj")


def _kv(p: dict) -> int:
    return _get(p, "k_proj", "v_proj", "kv_a_proj_with_mqa", "kv_b_proj")


def _cell(value: int | None) -> str:
    return DASH if value is None else commas(value)


def projections(records: list[dict]) -> str:
    def proj(x):
        return x["part"]["projections"]

    def mha(x):
        return x["part"]["mha_projections"]

    cols = [
        rows.FAMILY,
        ("model", lambda x: x["model"], "l"),
        ("type", lambda x: x["part"]["variant"], "l"),
        ("q", lambda x: commas(_query(proj(x))), "r"),
        ("k", lambda x: _cell(_get(proj(x), "k_proj")), "r"),
        ("v", lambda x: _cell(_get(proj(x), "v_proj")), "r"),
        ("k+v", lambda x: commas(_kv(proj(x))), "r"),
        ("o", lambda x: commas(proj(x)["o_proj"]), "r"),
        ("total", lambda x: commas(sum(proj(x).values())), "r"),
        ("MHA k+v", lambda x: commas(_kv(mha(x))), "r"),
        ("MHA total", lambda x: commas(sum(mha(x).values())), "r"),
        ("k+v saved vs MHA", lambda x: f"{100 * (1 - _kv(proj(x)) / _kv(mha(x))):.1f}%", "r"),
    ]
    note = ("parameters of one layer's attention projections with biases and without norms, "
            "MLA's q and k+v counted along its latent paths, and MHA the same layer with one K "
            "and V head per query head.")
    return section("Attention projection parameters: MHA vs GQA vs MLA",
                   table(rows.grouped(rows.expand(records, "attention")), cols), note)


def compute(records: list[dict]) -> str:
    """Decode FLOPs at each of the records' table contexts, the prefill at the last one; then
    the weights."""
    first = records[0]
    decode_at = [f["context"] for f in first["decode_flops"]]
    prefill_i = len(first["prefill_flops"]) - 1
    prefill_len = first["prefill_flops"][prefill_i]["seq_len"]
    cols = [
        rows.FAMILY,
        ("model", lambda r: r["name"], "l"),
        ("active params", lambda r: human(r["params"]["active"]), "r"),
    ]
    cols += [(f"decode FLOPs/token @{n:,}", lambda r, i=i: human(r["decode_flops"][i]["total"]), "r")
             for i, n in enumerate(decode_at)]
    cols.append((f"prefill FLOPs @{prefill_len:,}",
                 lambda r: flops_text(r["prefill_flops"][prefill_i]["total"]), "r"))
    weights = [
        rows.FAMILY,
        ("model", lambda r: r["name"], "l"),
        ("params", lambda r: human(r["params"]["total"]), "r"),
        ("weights bf16 (GB)", lambda r: f"{r['weights_bytes']['bf16'] / 1e9:,.2f}", "r"),
        ("weights int4-g128 (GB)",
         lambda r: f"{r['weights_bytes']['int4-g128'] / 1e9:,.2f}", "r"),
    ]
    mla = first["decode_flops"][0]["mla_convention"]
    grouped = rows.grouped(records)
    return "\n".join([
        section("Compute", table(grouped, cols),
                "2 FLOPs per multiply-add over matmuls only, a decode step being one new token "
                "reading `context` keys (at most a window's), the prefill causal with logits at "
                f"every position, MoE counting active experts and MLA the {mla} convention."),
        section("Weights", table(grouped, weights),
                "weights are every stored tensor priced in the format (estimate/formats.py, the "
                "table `show`, `compare` and `fit` read): int4-g128 is GPTQ/AWQ's int4 with an "
                "fp16 scale and 4-bit zero per 128 weights, embeddings, lm_head, norms and "
                "router kept in 16 bits.")])
