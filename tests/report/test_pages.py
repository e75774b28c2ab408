"""Deep dives, diagrams, links and the profiles page."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from report_tables import IMAGE, LINK, MERMAID, generated_files, mermaid_problems

from archscope.errors import InputError
from archscope.report.diagrams.mermaid import block_diagram, model_diagram
from archscope.report.records import structure_groups
from archscope.report.pages.benchmarks import benchmark_sections, load_benchmarks
from archscope.report.pages.profiles import load_profiles, profiles_page
from archscope.spec import load_spec, preset_names


@pytest.mark.slow
def test_every_preset_has_a_deep_dive_with_diagrams(regenerated):
    for name in preset_names():
        text = (regenerated / f"models/{name}.md").read_text()
        blocks = MERMAID.findall(text)
        assert len(blocks) >= 2, name  # the model and at least one block
        for block in blocks:
            assert mermaid_problems(block) == [], name
        for heading in ("Configuration", "Per-layer structure", "Parameter breakdown",
                        "KV cache", "FLOPs per token", "Memory"):
            assert f"## {heading}" in text, (name, heading)


def test_diagrams_follow_the_spec_kinds():
    ds = load_spec("deepseek-v2")
    dense, moe = block_diagram(ds, ds.plan[0]), block_diagram(ds, ds.plan[1])
    assert "kv_a_proj_with_mqa" in dense and "latent c_KV 512" in dense
    assert "gate_proj" in dense and "router" not in dense
    assert "160 routed experts" in moe and "2 shared experts" in moe
    gpt2 = load_spec("gpt2")
    assert "LayerNorm with bias" in block_diagram(gpt2, gpt2.plan[0])
    assert "embed_positions (learned)" in model_diagram(gpt2, structure_groups(gpt2))
    llama = load_spec("llama-3.2-1b")
    assert "tied: same matrix" in model_diagram(llama, structure_groups(llama))
    assert "4 query heads share each KV head" in block_diagram(llama, llama.plan[0])
    mistral = load_spec("mistral-7b-v0.1")
    assert "sliding window 4,096" in block_diagram(mistral, mistral.plan[0])
    post = llama.replace(norm=llama.norm.__class__("rmsnorm", 1e-5, "post"))
    text = block_diagram(post, post.plan[0])
    assert "add1 --> n1" in text and "n2 --> h_out" in text
    assert mermaid_problems(text) == []


@pytest.mark.parametrize("root_name", ["regenerated", "committed"])
def test_links_and_images_resolve(regenerated, root_name):
    from report_tables import COMMITTED

    root = regenerated if root_name == "regenerated" else COMMITTED
    for rel in sorted(generated_files(root)):
        if not rel.endswith(".md"):
            continue
        page = root / rel
        for target in IMAGE.findall(page.read_text()):
            assert (page.parent / target).is_file(), (rel, target)
        for target in LINK.findall(page.read_text()):
            if "://" in target or "model_specs" in target:
                continue
            assert (page.parent / target).exists(), (rel, target)


def test_profiles_page_tolerates_missing_keys(tmp_path):
    (tmp_path / "estimates.json").write_text(json.dumps({"models": {}}))
    assert load_profiles(tmp_path) == []
    assert "No profile results yet" in profiles_page([])
    (tmp_path / "profile-gpt2-cpu-fp32.json").write_text(json.dumps({
        "model": "gpt2", "device": "cpu", "dtype": "fp32", "prefill_ms": 12.5,
        "decode_tokens_per_s": 40.25, "kv_cache_bytes_measured": 2 ** 21,
        "kv_cache_bytes_estimated": 2 ** 21, "cpu": "x86_64", "threads": 4}))
    records = load_profiles(tmp_path)
    assert [r["model"] for r in records] == ["gpt2"]
    text = profiles_page(records)
    assert "| gpt2" in text and "40.2" in text and "x86_64, 4 threads" in text
    assert "1.000" in text  # measured / estimated
    assert "—" in text  # the keys it lacks


def test_the_quantized_benchmark_renders_under_the_profiles(tmp_path):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    row = {"format": "int8", "tokens_per_s": 16.33, "ratio_to_bf16": 1.97,
           "ratio_to_bf16_min": 1.79, "ratio_to_bf16_max": 1.98,
           "weight_bytes_per_step": 1_499_300_000, "achieved_bytes_per_s": 24_490_000_000,
           "predicted_tokens_per_s": 17.0, "predicted_bound": "memory",
           "prediction_error": 0.041, "logits_vs_bf16": {
               "max_abs": 0.295, "mean_abs": 0.0524, "greedy_token_agrees": True}}
    (folder / "quantized_decode-cpu.json").write_text(json.dumps({
        "command": "python benchmarks/quantized_decode.py --runs 3", "title": "llama-3.2-1b",
        "machine": {"cpu": "x86_64", "cores": 2}, "formats": [row]}))
    (folder / "other.json").write_text(json.dumps({"formats": [row]}))  # not one it knows
    benchmarks = load_benchmarks(tmp_path)
    assert list(benchmarks) == ["other.json", "quantized_decode-cpu.json"]
    text = profiles_page([], benchmark_sections(benchmarks))
    assert text.count("## Weight-only quantized decode against bf16") == 1
    assert "| int8" in text and "1.79-1.98" in text and "+4.1%" in text
    assert "1,499.3" in text and "24.49" in text and "0.295 / 0.0524 (same)" in text
    assert "`python benchmarks/quantized_decode.py --runs 3`" in text
    (folder / "bad.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="bad.json: expected a JSON object"):
        load_benchmarks(tmp_path)


def test_the_versus_transformers_benchmark_renders_decode_and_prefill_cases(tmp_path):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    decode = {"case": "decode:b1:p128:fp32", "errors": [], "same_tokens": True,
              "ratios": [1.02, 0.98, 1.05], "archscope_tokens_per_s": [3.3, 3.2, 3.4],
              "transformers_tokens_per_s": [3.2, 3.3, 3.1],
              "archscope_bytes_per_s": [16.3e9, 15.8e9, 16.8e9],
              "fraction_of_gemv": [0.91, 0.88, 0.93],
              "fraction_of_own_products": [0.95, 0.97, 0.96]}
    prefill = {"case": "prefill:b1:p1024:bf16", "errors": ["faster than the wall"],
               "same_tokens": False, "ratios": [1.01], "archscope_prefill_s": [17.6],
               "transformers_prefill_s": [17.4]}
    (folder / "decode_vs_hf-cpu.json").write_text(json.dumps({
        "command": "python benchmarks/decode_vs_hf.py --runs 3", "model": "llama-3.2-1b",
        "overrides": ["n_layers=4"], "cpu": "x86_64", "device": "cpu", "threads": 2,
        "results": [decode, prefill]}))
    text = profiles_page([], benchmark_sections(load_benchmarks(tmp_path)))
    assert "## Decode and prefill against transformers" in text
    rows = [line for line in text.splitlines() if line.startswith("| decode:") or
            line.startswith("| prefill:")]
    assert len(rows) == 2
    assert "3.30 tok/s" in rows[0] and "3.20 tok/s" in rows[0] and "1.020" in rows[0]
    assert "0.980-1.050" in rows[0] and "16.30" in rows[0] and "91.0%" in rows[0]
    assert "96.0%" in rows[0]  # against its own weights' products
    assert "17.600 s" in rows[1] and "| no " in rows[1] and rows[1].rstrip("| ").endswith("1")
    assert "llama-3.2-1b (--set n_layers=4)" in text
    assert "`python benchmarks/decode_vs_hf.py --runs 3`" in text
    assert "packed weights" not in text
    (folder / "decode_vs_hf-cpu.json").write_text(json.dumps({
        "step": "eager", "pack_weights": True, "results": [decode]}))
    text = profiles_page([], benchmark_sections(load_benchmarks(tmp_path)))
    assert "## Decode and prefill against transformers, archscope's eager decode step on " \
           "packed weights" in text
    assert "the matrix-vector probe times plain weights, so its column is left empty" in text


def test_the_cpu_linear_benchmark_renders_one_row_per_phase(tmp_path):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    phases = [{"phase": "decode b1", "f_linear_s": 0.2091, "archscope_s": 0.1304, "ratio": 1.6035,
               "shapes": [], "kernels": ["aten", "onednn"]},
              {"phase": "prefill 128", "f_linear_s": 1.3349, "archscope_s": 1.3349,
               "ratio": 1.0, "shapes": [], "kernels": ["aten"]}]
    (folder / "cpu_linear-cpu.json").write_text(json.dumps({
        "command": "python benchmarks/cpu_linear.py --json x.json", "model": "llama-3.2-1b",
        "cpu": "AMD EPYC, AVX2", "threads": 2, "torch": "2.13.0", "candidates": ["aten", "onednn"],
        "packing_unavailable": None, "results": phases}))
    text = profiles_page([], benchmark_sections(load_benchmarks(tmp_path)))
    assert text.count("## fp32 linears on the CPU: F.linear against archscope's choice") == 1
    rows = [line for line in text.splitlines() if line.startswith(("| decode b1", "| prefill"))]
    assert len(rows) == 2
    assert "209.1" in rows[0] and "130.4" in rows[0] and "1.60" in rows[0]
    assert "aten, onednn" in rows[0]
    assert "1,334.9" in rows[1] and "1.00" in rows[1] and rows[1].rstrip(" |").endswith("aten")
    assert "AMD EPYC, AVX2" in text
    assert "`python benchmarks/cpu_linear.py --json x.json`" in text


def test_the_analytic_speed_benchmarks_render_sweep_and_compare(tmp_path):
    """sweep_speed.py's own file (run here, one round) and a compare_speed.py file, in one
    table: each timed work with its time and rate."""
    folder = tmp_path / "benchmarks"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "sweep_speed.py"), "--runs",
                           "1", "--json", str(folder / "sweep_speed-cpu.json")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    swept = json.loads((folder / "sweep_speed-cpu.json").read_text())
    assert swept["command"].startswith("python benchmarks/sweep_speed.py --runs 1 --json ")
    assert swept["sweep"]["variants"] == 6 * 8 * 5 * 5  # the script's grid, every combination
    assert swept["compare"]["models"] == len(preset_names())
    (folder / "compare_speed-cpu.json").write_text(json.dumps({
        "command": "python benchmarks/compare_speed.py --json x.json", "cpu": "x86_64",
        "cores": 2, "models": 40, "archscope_compare_s": {"median": 0.8, "min": 0.75,
                                                          "max": 0.9, "runs": 5},
        "transformers_meta_s": {"median": 12.0, "min": 11.0, "max": 13.0, "runs": 2},
        "ratio": 15.0}))
    text = profiles_page([], benchmark_sections(load_benchmarks(tmp_path)))
    assert text.count("## Analytic speed: compare and sweep") == 1
    rows = [line for line in text.splitlines() if line.startswith(("| `archscope", "| trans",
                                                                    "| compare's"))]
    assert len(rows) == 4
    assert "0.800 s (0.750-0.900, 5 runs)" in rows[0] and "50.0 models/s" in rows[0]
    assert "12.000 s" in rows[1] and "15.0x archscope's time" in rows[1]
    rate = swept["sweep"]["variants_per_s"]
    assert "1,200 variants" in rows[2] and f"{rate:,.0f} variants/s" in rows[2]
    assert "`python benchmarks/compare_speed.py --json x.json`" in text


def test_the_state_mixer_benchmark_renders_a_row_per_kind(tmp_path):
    """benchmarks/state_mixer_decode.py's file: one row per mixer kind it measured, with the
    step's time over its matmuls' as the JSON gives it."""
    from archscope.kinds import MIXER

    data = json.loads((Path(__file__).resolve().parents[2] / "reports/data/benchmarks"
                       / "state_mixer_decode.json").read_text())
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks/state_mixer_decode.json").write_text(json.dumps(data))
    text = "\n".join(benchmark_sections(load_benchmarks(tmp_path)))
    assert "## State mixers: a decode step against its matmuls" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "ms" not in line]
    assert sorted(r.split("|")[1].strip() for r in rows) == \
        sorted(r["kind"] for r in data["results"]) == sorted(MIXER)
    for r in data["results"]:
        assert f"{r['step_ms'] / r['matmul_ms']:.2f}" == f"{r['ratio']:.2f}"
