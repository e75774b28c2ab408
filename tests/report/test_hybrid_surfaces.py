"""A hybrid on every surface: `show` (text and JSON), `compare --format json`, the deep dive
and the hybrids' figure, for a tiny Mamba-2 hybrid written to a YAML file. Each number is
checked against the estimator that owns it (estimate/state.py, estimate/kv_cache.py)."""

from __future__ import annotations

import json
import re

import yaml

from archscope.estimate import kv_cache_bytes
from archscope.estimate.state import state_bytes
from archscope.report.figures_hybrid import crossing, held, peer
from archscope.report.pages.build import build_reports, model_records
from archscope.spec import load_spec

SPEC = dict(
    name="tiny-hybrid", source="test", vocab_size=256, d_model=64, n_layers=8, max_seq_len=4096,
    norm=dict(kind="rmsnorm", eps=1e-5), position=dict(kind="rope", theta=10000.0),
    attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16),
    ffn=dict(kind="swiglu", d_ff=128),
    mixer=dict(kind="mamba2", n_heads=8, head_dim=16, d_state=16, n_groups=1, conv_kernel=4),
    layers=[dict(select="3::4", mixer="attention"), dict(select=[6], ffn="none")])


def written(tmp_path, spec=SPEC):
    path = tmp_path / f"{spec['name']}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_show_text_names_the_state(run_cli, tmp_path):
    code, out, _ = run_cli("show", written(tmp_path))
    assert code == 0
    spec = load_spec(written(tmp_path))
    per_layer = state_bytes(spec, 1, "bf16") // 6  # six Mamba-2 layers alike
    assert f"layers 0-2, 4-6 (Mamba-2): constant state per sequence per layer {per_layer:,}" in out
    assert "6 (1x): Mamba-2 (SSD)" in out and "no FFN (a mixer-only layer)" in out
    assert "mixer_state" in out and "state" in out.split("Inference memory")[1]


def test_json_carries_kv_state_and_their_sum(run_cli, tmp_path):
    code, out, _ = run_cli("compare", written(tmp_path), "--seq-len", "2048", "--format", "json")
    assert code == 0
    row = json.loads(out)[0]
    spec = load_spec(written(tmp_path))
    assert row["kv_cache_bytes"] == kv_cache_bytes(spec, 2048) == 2 * 2048 * 2 * 2 * 16 * 2
    assert row["state_bytes"] == state_bytes(spec) > 0
    assert row["cache_bytes"] == row["kv_cache_bytes"] + row["state_bytes"]
    assert row["attention"] == "Mamba-2+GQA"


def test_the_compare_table_shows_the_state_only_beside_a_hybrid(run_cli, tmp_path):
    code, out, _ = run_cli("compare", written(tmp_path), "gpt2")
    header, hybrid = out.splitlines()[:2]
    unit = re.search(r"\bstate \((kB|MB|GB)\)", header)  # the column's unit, decimal by default
    assert code == 0 and unit
    scale = 1000 ** ("kMG".index(unit[1][0]) + 1)
    assert f"{state_bytes(load_spec(written(tmp_path))) / scale:,.2f}" in hybrid
    code, out, _ = run_cli("compare", "gpt2")
    assert code == 0 and "state" not in out


def test_deep_dive_and_figure(tmp_path):
    hybrid, dense = load_spec(written(tmp_path)), load_spec("gpt2")
    files = build_reports([hybrid, dense], profiles=[])
    page = files["models/tiny-hybrid.md"].decode()
    assert "## KV cache and state" in page and "| mixer (layers 0-2, 4-6) |" in page
    assert files["figures/hybrid_cache_vs_context.png"].startswith(b"\x89PNG")
    records = model_records([hybrid, dense])
    h = next(r for r in records if r["name"] == "tiny-hybrid")
    assert peer(h, records)["name"] == "gpt2"
    assert held(h)[0] == h["series"]["kv_cache_bytes"][0] + state_bytes(hybrid, 1, "fp16")
    n = crossing(h, peer(h, records))
    assert n == h["series"]["context"][0]  # gpt2 caches 12 full layers: more from the start
