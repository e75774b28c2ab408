"""The tables hold computed values: spot checks recomputed here from the spec's own fields."""

from __future__ import annotations

import json

from report_tables import row_of, table_rows

from archscope.estimate import count_params, decode_flops, kv_cache_bytes
from archscope.report.fmt import human
from archscope.spec import load_spec, preset_names


def _comparison(regenerated) -> str:
    return (regenerated / "comparison.md").read_text()


def test_every_preset_is_a_row_of_every_table(regenerated):
    text = _comparison(regenerated)
    for heading in ("Architecture summary", "Attention and state mixers", "FFN, position and norm",
                    "Embedding", "Attention", "KV cache elements per token",
                    "KV cache at 1,024 tokens (fp16)", "KV cache at 4,096 tokens (fp16)",
                    "KV cache per layer at 1,024 tokens (fp16)",
                    "KV cache per layer at 4,096 tokens (fp16)",
                    "Attention projection parameters: MHA vs GQA vs MLA", "Feed-forward network",
                    "Normalization", "Positional encoding", "Weight tying", "Compute", "Weights"):
        models = {r["model"].split(" (")[0].rstrip(" *") for r in table_rows(text, heading)}
        assert models == set(_having(heading)), heading


# the tables of one part list the presets that have it (a pure Mamba stack: no attention, no FFN;
# shared blocks run the model's attention and FFN)
_PART_TABLES = {"Attention": "attention", "KV cache elements per token": "attention",
                "Attention projection parameters: MHA vs GQA vs MLA": "attention",
                "Feed-forward network": "ffn"}


def _having(heading: str) -> list[str]:
    part = _PART_TABLES.get(heading)
    specs = {name: load_spec(name) for name in preset_names()}
    return [name for name, spec in specs.items() if part is None or spec.shared is not None
            or any(getattr(layer, part) is not None for layer in spec.plan)]


def test_kv_cache_bytes_of_gqa_from_the_spec(regenerated):
    spec = load_spec("llama-3.2-1b")
    a = spec.attention
    expected = 2 * a.n_kv_heads * a.head_dim * spec.n_layers * 4096 * 2  # K and V, fp16
    assert expected == 134_217_728 == kv_cache_bytes(spec, 4096, 1, "fp16")
    row = row_of(table_rows(_comparison(regenerated), "KV cache at 4,096 tokens (fp16)"),
                 "llama-3.2-1b")
    assert row["total (bytes)"] == f"{expected:,}"
    assert row["total (MB)"] == f"{expected / 1e6:,.2f}"
    assert row["total (MiB)"] == f"{expected / 2**20:,.2f}"
    row = row_of(table_rows(_comparison(regenerated), "KV cache per layer at 4,096 tokens (fp16)"),
                 "llama-3.2-1b")
    assert row["per layer (bytes)"] == f"{expected // spec.n_layers:,}"
    mha = 2 * a.n_heads * a.head_dim * 1024 * 2  # one layer, 1,024 tokens, MHA
    row = row_of(table_rows(_comparison(regenerated), "KV cache per layer at 1,024 tokens (fp16)"),
                 "llama-3.2-1b")
    assert row["MHA-equivalent per layer (MB)"] == f"{mha / 1e6:,.2f}"


def test_kv_cache_of_mla_and_of_a_window(regenerated):
    text = _comparison(regenerated)
    spec = load_spec("deepseek-v2")
    a = spec.attention
    latent = (a.kv_lora_rank + a.qk_rope_head_dim) * spec.n_layers * 1024 * 2
    row = row_of(table_rows(text, "KV cache at 1,024 tokens (fp16)"), "deepseek-v2")
    assert row["total (bytes)"] == f"{latent:,}"
    elements = row_of(table_rows(text, "KV cache elements per token"), "deepseek-v2")
    assert elements["elements"] == f"{a.kv_lora_rank + a.qk_rope_head_dim:,}"
    k_and_v = a.n_heads * ((a.qk_nope_head_dim + a.qk_rope_head_dim) + a.v_head_dim)
    assert elements["MHA-equivalent"] == f"{k_and_v:,}" == "40,960"
    # Mistral v0.1's window equals 4,096: at 4,096 tokens it holds all of them.
    m = load_spec("mistral-7b-v0.1")
    assert m.attention.window == 4096
    row = row_of(table_rows(text, "KV cache at 4,096 tokens (fp16)"), "mistral-7b-v0.1")
    assert row["total (bytes)"] == f"{2 * 8 * 128 * 32 * 4096 * 2:,}"


def test_architecture_cells(regenerated):
    text = _comparison(regenerated)
    spec = load_spec("llama-3.2-3b")
    attn = row_of(table_rows(text, "Attention"), "llama-3.2-3b")
    assert (attn["Q heads"], attn["KV heads"], attn["head dim"]) == ("24", "8", "128")
    assert attn["group ratio (Q:KV)"] == "3:1"
    ffn = row_of(table_rows(text, "Feed-forward network"), "llama-3.2-3b")
    assert ffn["expansion"] == f"{spec.ffn.d_ff / spec.d_model:.2f}×" == "2.67×"
    emb = row_of(table_rows(text, "Embedding"), "llama-3.2-1b")
    assert emb["token embedding params"] == f"{128_256 * 2_048:,}"
    norm = row_of(table_rows(text, "Normalization"), "gpt2")
    assert norm["position"] == f"{load_spec('gpt2').norm.position}-norm"
    proj = row_of(table_rows(text, "Attention projection parameters: MHA vs GQA vs MLA"),
                  "llama-3.2-1b")
    assert proj["k+v"] == f"{2 * 2048 * 512:,}" and proj["MHA k+v"] == f"{2 * 2048 * 2048:,}"
    moe = row_of(table_rows(text, "Feed-forward network"), "deepseek-v2 (layers 1-59)")
    assert (moe["intermediate"], moe["routed experts"], moe["top-k"], moe["shared experts"]) == \
        ("1,536", "160", "6", "2")


def test_summary_params_and_flops(regenerated):
    text = _comparison(regenerated)
    p = count_params(load_spec("deepseek-v2"))
    row = row_of(table_rows(text, "Architecture summary"), "deepseek-v2")
    assert row["params"] == f"{human(p.total)} ({human(p.active)} active)"
    row = row_of(table_rows(text, "Compute"), "llama-3.2-1b")
    flops = decode_flops(load_spec("llama-3.2-1b"), 4096).total
    assert row["decode FLOPs/token @4,096"] == human(flops)


def test_gpt3_note_about_the_band_width(regenerated):
    text = _comparison(regenerated)
    assert "band width unpublished" in text.split("## Embedding")[0]


def test_grouped_by_family_led_by_the_documents_models(regenerated):
    from archscope.report.document_records import DOCUMENT_MODELS
    from archscope.spec.hf_export import model_family

    rows = table_rows(_comparison(regenerated), "Architecture summary")
    names = [r["model"] for r in rows]
    assert names[0] == DOCUMENT_MODELS[0]
    families = [model_family(load_spec(n)) for n in names]
    # each family's rows are contiguous, named once on its first row
    assert len({f for f in families}) == len([r for r in rows if r["family"]])
    assert [r["family"] for r in rows if r["family"]] == list(dict.fromkeys(families))
    documents_families = {model_family(load_spec(n)) for n in DOCUMENT_MODELS}
    first = list(dict.fromkeys(families))[:len(documents_families)]
    assert set(first) == documents_families
    assert max(len(line) for line in _comparison(regenerated).splitlines()
               if line.startswith("|")) < 240


def test_estimates_json_matches_the_estimators(regenerated):
    data = json.loads((regenerated / "data/estimates.json").read_text())
    assert sorted(data["models"]) == preset_names()
    for name in ("llama-3.2-1b", "deepseek-v2", "mistral-7b-v0.1"):
        spec, record = load_spec(name), data["models"][name]
        assert record["params"]["total"] == count_params(spec).total
        for cache in record["kv_cache"]:
            assert cache["bytes"] == kv_cache_bytes(spec, cache["seq_len"], 1, "fp16")


def test_human_moves_up_a_unit_where_three_digits_would_round_to_1000():
    from archscope.units import human
    # gemma-3-1b's 999,885,952 parameters: '1B', not '1000M'
    assert [human(v) for v in (999_885_952, 999_400_000, 1_235_814_400, 576)] == \
        ["1B", "999M", "1.24B", "576"]
