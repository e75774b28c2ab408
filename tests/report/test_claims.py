"""`archscope check-claims`: verdicts, likely causes, bad claims files, the committed claims."""

import json
from pathlib import Path

import pytest

from archscope.claims import check_claim_files, claims_markdown, claims_text, parse_stated

CLAIMS_DIR = Path(__file__).resolve().parents[2] / "reports" / "claims"

# Known right and wrong values. llama-3.2-3b: 3,212,749,824 params (tied head, 394,002,432
# embedding), 2 x 8 x 128 = 2,048 KV elements per token per layer, 939,524,096 bytes of fp16
# cache at 8,192 tokens (= 896 MiB).
SMALL = """\
- {id: right-params, document: doc.md, section: s1, model: llama-3.2-3b, quantity: params_total,
   stated: "~3.21B", unit: params, value: 3210000000}
- {id: right-exact, document: doc.md, section: s1, model: llama-3.2-3b, quantity: vocab_size,
   stated: "128,256", unit: tokens, value: 128256}
- {id: right-norm, document: doc.md, section: s1, model: llama-3.2-3b, quantity: norm_kind,
   stated: "RMSNorm"}
- {id: right-tied, document: doc.md, section: s1, model: llama-3.2-3b, quantity: tie_embeddings,
   stated: "✅"}
- {id: right-mha-saving, document: doc.md, section: s2, model: llama-3.2-3b,
   quantity: kv_cache_bytes, conditions: {seq_len: 4096, dtype: fp16},
   versus: {set: ["attention.n_kv_heads=24"], relation: reduction}, stated: "67%", unit: "%",
   value: 67}
- {id: wrong-exact, document: doc.md, section: s2, model: llama-3.2-3b, quantity: vocab_size,
   stated: "128,000", unit: tokens, value: 128000}
- {id: wrong-category, document: doc.md, section: s2, model: gpt2, quantity: norm_position,
   stated: "Post-Norm"}
- {id: wrong-mib, document: other.md, section: s3, model: llama-3.2-3b, quantity: kv_cache_bytes,
   conditions: {seq_len: 8192, dtype: fp16}, stated: "896 MB", unit: MB, value: 896000000}
- {id: wrong-factor-2, document: other.md, section: s3, model: llama-3.2-3b,
   quantity: kv_elements_per_token_per_layer, stated: "1,024", unit: elements, value: 1024}
- {id: wrong-tied-twice, document: other.md, section: s3, model: llama-3.2-3b,
   quantity: params_total, stated: "3.6B", unit: params, value: 3600000000}
- {id: not-checked, document: other.md, section: s3, stated: "100,256", skip: "no GPT-4 preset"}
"""


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_text(SMALL, encoding="utf-8")
    return path


def _json(run_cli, *args):
    code, out, err = run_cli("check-claims", *map(str, args), "--format", "json")
    assert code == 0, err
    return {r["id"]: r for r in json.loads(out)}


def test_right_claims_agree_and_wrong_ones_differ(run_cli, small):
    results = _json(run_cli, small)
    for key, r in results.items():
        expected = "unverifiable" if key == "not-checked" else key.split("-")[0]
        assert r["verdict"] == {"right": "agree"}.get(expected, expected), r
    assert results["right-exact"]["computed"] == 128256
    assert results["wrong-category"]["computed"] == "pre"


def test_likely_causes(run_cli, small):
    results = _json(run_cli, small)
    assert "MiB printed as MB" in results["wrong-mib"]["cause"]
    assert "factor 2 for K and V" in results["wrong-factor-2"]["cause"]
    assert results["wrong-tied-twice"]["cause"] == "a tied lm_head counted twice"
    assert results["wrong-exact"]["cause"] == ""


def test_exit_codes_and_formats(run_cli, small):
    code, out, _ = run_cli("check-claims", str(small))
    assert code == 0 and "wrong-mib" in out and " wrong " in out
    assert run_cli("check-claims", str(small), "--strict")[0] == 1
    code, out, _ = run_cli("check-claims", str(small), "--format", "markdown")
    assert code == 0 and out.startswith("# Claims check")
    code, out, _ = run_cli("check-claims", "--quantities")
    assert code == 0 and "kv_cache_bytes" in out and "seq_len" in out


@pytest.mark.parametrize("text, message", [
    ("- {id: a, document: d, section: s\n  model: [", "not valid YAML"),
    ("id: a\ndocument: d\n", "YAML list of mappings"),
    ("- {id: a, document: d, section: s, model: gpt2, stated: '12'}", "claim a: missing quantity"),
    ("- {id: b, document: d, section: s, model: gpt2, quantity: n_head, stated: '12'}",
     "claim b: unknown quantity 'n_head' (did you mean 'n_heads'?)"),
    ("- {id: c, document: d, section: s, model: gpt-7, quantity: n_heads, stated: '12'}",
     "claim c: ") ,
    ("- {id: d, document: d, section: s, model: gpt2, quantity: kv_cache_bytes, stated: '1 MB'}",
     "claim d: quantity kv_cache_bytes needs the condition(s) seq_len, dtype"),
    ("- {id: e, document: d, section: s, model: gpt2, quantity: n_heads, stated: '12',"
     " conditions: {seq: 1}}", "claim e: quantity n_heads takes no condition 'seq'"),
    ("- {id: f, document: d, section: s, model: gpt2, quantity: n_heads, stated: '12',"
     " value: 13}", "claim f: value 13 does not match stated '12'"),
    ("- {id: g, document: d, section: s, model: gpt2, quantity: params_total, stated: '1 MB'}",
     "claim g: unit 'MB' measures bytes, but params_total is in params"),
    ("- {id: h, document: d, section: s, model: gpt2, quantity: params_total, stated: 'many'}",
     "claim h: stated: no number in 'many'"),
    ("- {id: i, document: d, section: s, model: gpt2, quantity: n_heads, stated: '12', seen: 1}",
     "claim i: unknown key 'seen'"),
    ("- {id: j, document: d, section: s, model: gpt2, quantity: tie_embeddings, stated: maybe}",
     "claim j: cannot read 'maybe' as yes or no"),
])
def test_bad_claims_files_exit_2_naming_file_and_claim(run_cli, tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_cli("check-claims", str(path))
    assert code == 2 and out == ""
    assert str(path) in err and message in err, err
    assert "Traceback" not in err


def test_unknown_quantity_lists_the_valid_ones(run_cli, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("- {id: x, document: d, section: s, model: gpt2, quantity: bogus, "
                    "stated: '1'}", encoding="utf-8")
    _, _, err = run_cli("check-claims", str(path))
    assert "valid quantities:" in err and "params_total" in err and "kv_cache_bytes" in err


def test_duplicate_ids_and_missing_file(run_cli, small, tmp_path):
    code, _, err = run_cli("check-claims", str(small), str(small))
    assert code == 2 and "duplicate id" in err
    code, _, err = run_cli("check-claims", str(tmp_path / "missing.yaml"))
    assert code == 2 and "missing.yaml" in err


def test_committed_claims_files_all_check():
    files = sorted(CLAIMS_DIR.glob("*.yaml"))
    assert len(files) == 5
    results = check_claim_files([CLAIMS_DIR])
    by_doc = {r.document for r in results}
    assert by_doc == {f.stem + ".txt" for f in files}
    assert len({r.id for r in results}) == len(results)
    verdicts = {r.id: r for r in results}
    assert all(r.verdict in ("agree", "wrong", "unverifiable") for r in results)
    # The documents' real mistakes stay found (regressions here mean a broken estimator or
    # quantity, or a transcription that papered over an error).
    assert verdicts["001-params-total"].cause == "a tied lm_head counted twice"
    assert "MiB printed as MB" in verdicts["000-7.3-gpt3-cache"].cause
    assert "RoPE key" in verdicts["000-3.5-mla-deepseek"].cause
    assert "2^20" in verdicts["002-pc-attn"].cause
    for key in ("000-6.5-gpt2-pos", "000-4.6-yarn-llama31", "000-3.4-granite-kv",
                "002-flops-8b", "002-perf-fp32"):
        assert verdicts[key].verdict == "wrong", key
    for key in ("000-2.1-params", "000-3.3-cache-total-mha", "002-flops-28", "003-nf4-kv-total"):
        assert verdicts[key].verdict == "agree", key
    # Known false positives, fixed: the paper's 128K context, GPT-3's unpublished tying.
    assert verdicts["000-8.1-deepseek-context"].verdict == "agree"
    assert "paper" in verdicts["000-8.1-deepseek-context"].note
    assert verdicts["000-8.1-gpt3-tied"].verdict == "unverifiable"
    assert "sliding window" in verdicts["000-7.3-mistral-swa-cache"].cause


def test_render_is_deterministic(small):
    first = check_claim_files([small])
    again = check_claim_files([small])
    assert claims_markdown(first) == claims_markdown(again)
    assert claims_text(first) == claims_text(again)
    md = claims_markdown(first)
    assert "## doc.md" in md and "## other.md" in md and "## Wrong claims" in md
    assert "| all | 11 | 5 | 5 | 1 |" in md
    assert md.index("## doc.md") < md.index("## other.md")


@pytest.mark.parametrize("text, unit, low, tolerance", [
    ("262,668,288", "params", 262668288, 0),
    ("~1.24B", "params", 1.24e9, 0.005e9),
    ("8.39 MB", "", 8.39e6, 0.005e6),
    ("64", "MB", 64e6, 0.5e6),
    ("2,100M", "params", 2.1e9, 0.05e9),
    ("100K", "", 100e3, 5e3),
    ("4:1", "", 4, 0),
    ("67% smaller", "", 67, 0.5),
    ("2,048 × 512", "", 1048576, 0),
])
def test_stated_precision(text, unit, low, tolerance):
    stated = parse_stated(text, unit)
    assert stated.low == pytest.approx(low) and stated.tolerance == pytest.approx(tolerance)


def test_truncated_and_vendor_rounded_figures_agree_and_a_digit_off_does_not():
    """Issue 33: "262M" for 262,668,288 (truncated) and Mistral's "7.3B" for 7,241,732,096 are
    right; a figure more than a unit of its last digit off is wrong; an exact one is exact."""
    assert parse_stated("262M", "params").agrees(262_668_288)
    assert not parse_stated("262M", "params").contains(262_668_288)  # not its precision
    assert parse_stated("7.3B", "params").agrees(7_241_732_096)
    assert not parse_stated("7.1B", "params").agrees(7_241_732_096)
    assert not parse_stated("~3GB", "").agrees(12.85e9)
    assert not parse_stated("262,668,000", "params").agrees(262_668_288)
