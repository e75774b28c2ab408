"""The deep dive's worked sums of the comparison's cache columns: the three numbers are those
`archscope compare --seq-len 131072 --format json` prints for the model, and each group's
product and the sums of the groups come out to them."""

from __future__ import annotations

import json
import re

import pytest

from archscope.report.costs import CACHE_SUM_LENGTH, cache_sum, report_record
from archscope.report.pages.deep_dive import cache_sum_text
from archscope.spec import load_spec, preset_names

# issue 30's comparison (nemotron-h-8b ... llama-3.1-8b), then local and global windows, MLA,
# Gated DeltaNet, a pure Mamba stack, lightning attention, shared blocks, RG-LRU, KDA
MODELS = ["nemotron-h-8b", "falcon-h1-7b", "lfm2-2.6b", "jamba-mini-1.7", "llama-3.1-8b",
          "gemma-3-27b", "deepseek-v3", "qwen3-next-80b-a3b", "granite-4.0-h-tiny",
          "mamba-2.8b", "minimax-text-01", "zamba2-7b", "recurrentgemma-9b",
          "kimi-linear-48b-a3b"]
NUMBER = r"[\d,]+"


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _terms(block: str) -> list[int]:
    """Each indented line's product, checked against the total it states."""
    out = []
    for line in block.splitlines():
        if not line.startswith("  - "):
            continue
        factors, total = line.rsplit(" = ", 1)
        numbers = [_int(n) for n in re.findall(rf"({NUMBER}) (?:layers?|tokens held|bytes)",
                                                factors)]
        product = 1
        for n in numbers:
            product *= n
        assert product == _int(total), line
        out.append(product)
    return out


@pytest.mark.parametrize("name", MODELS)
def test_the_sums_are_the_compare_row(name, run_cli):
    assert name in preset_names()
    code, out, err = run_cli("compare", name, "--seq-len", str(CACHE_SUM_LENGTH),
                             "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    row = (data["rows"] if isinstance(data, dict) else data)[0]
    text = cache_sum_text(cache_sum(report_record(load_spec(name))))
    kv_part, rest = text.split("- state_bytes = ")
    state_part, cache_part = rest.split("- cache_bytes = ")
    assert f"kv_cache_bytes = {row['kv_cache_bytes']:,}" in kv_part
    assert sum(_terms(kv_part)) == row["kv_cache_bytes"]
    assert state_part.startswith(f"{row['state_bytes']:,}")
    assert sum(_terms(state_part)) == row["state_bytes"]
    assert cache_part.endswith(f"= {row['cache_bytes']:,}")
    assert row["cache_bytes"] == row["kv_cache_bytes"] + row["state_bytes"]
    assert ("exceeds_context" in text) == row["exceeds_context"]
