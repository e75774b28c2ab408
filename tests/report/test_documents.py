"""reports/documents.md: every document table the index names is on a page of the build, and
the regenerated numbers are the estimators' (spot checks against hand-derived values)."""

from __future__ import annotations

from report_tables import COMMITTED


def test_index_is_complete_in_the_committed_page():
    text = (COMMITTED / "documents.md").read_text(encoding="utf-8")
    assert "not in this build" not in text
    from archscope.report.pages.documents import INDEX
    assert len(INDEX) == text.count("\n| 00")  # one index row per document table


def test_hand_derived_numbers():
    from archscope.report.document_records import attention_variants, ffn_variants, layer_flops
    from archscope.spec import load_spec
    mha, gqa, _ = attention_variants(load_spec("llama-3.2-1b"))
    # 2 (K, V) x 8 heads x 64 dims x 1,024 tokens x 2 bytes, x 16 layers
    assert gqa["cache_1024"] == 2 * 8 * 64 * 1024 * 2 * 16 and mha["cache_1024"] == 4 * gqa["cache_1024"]
    swiglu, equal_width, equal_params = ffn_variants(load_spec("llama-3.2-1b"))
    assert (swiglu["params_per_layer"], equal_width["params_per_layer"]) == (3 * 2048 * 8192, 2 * 2048 * 8192)
    assert equal_params["params_per_layer"] == swiglu["params_per_layer"]
    at = layer_flops(load_spec("llama-3.1-8b"), (1024,))["at"][0]
    assert at["attention_proj"] == 2 * 4096 * (4096 + 1024 + 1024 + 4096)
    assert at["ffn"] == 2 * 3 * 4096 * 14336 and at["lm_head"] == 2 * 4096 * 128256
