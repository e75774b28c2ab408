"""Fuzz check-claims: documents built from the pieces explainers are made of (headings, tables,
mermaid blocks, model names, figures with units, runs of digits, emphasis, odd characters), the
seed explainers' lines mutated, and transcriptions (reports/claims/*.yaml entries) mutated.
Whatever comes in, `check_paths` returns results or raises an InputError with a short message
naming the file; nothing else escapes, and each case is quick.

The budget, as in tests/spec/test_fuzz.py: ARCHSCOPE_FUZZ_EXAMPLES examples per target (default
200) and ARCHSCOPE_FUZZ_SECONDS per case (default 10)."""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from archscope.claims.documents import check_paths
from archscope.errors import InputError

FUZZ_EXAMPLES = int(os.environ.get("ARCHSCOPE_FUZZ_EXAMPLES", "200"))
# a bound against hangs, not a timing: a loaded 2-core run took 5.7 s for one fit case
FUZZ_SECONDS = float(os.environ.get("ARCHSCOPE_FUZZ_SECONDS", "10"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
ROOT = Path(__file__).resolve().parents[2]
CLAIMS = {p.name: yaml.safe_load(p.read_text()) for p in sorted((ROOT / "reports" / "claims")
                                                                  .glob("*.yaml"))}
ENTRIES = [c for entries in CLAIMS.values() for c in entries]
SEED_LINES = [line for p in sorted((ROOT.parent / "shared" / "seeds").glob("*.txt"))
              for line in p.read_text().splitlines()[:400] if line.strip()]

NAMES = ["Llama 3.2-1B", "Llama 3.1 8B", "GPT-2 (124M)", "GPT-3", "Mistral 7B", "DeepSeek-V2",
         "Mixtral 8x7B", "Granite 3B", "Qwen3 8B", "the 8B model", "Llama", "llama_3_2_1b",
         "Llama 3.2.1.1.1.1.1.1", "Gemma 3 1B", "Phi-4", "OLMo 2 7B", "Kimi K2", "Nemotron-H"]
FIGURES = ["1.24B", "~1.24B parameters", "16", "32 KiB", "64 MB", "134 MB", "8.39 MB",
           "2,048", "128,256", "4:1", "2-32K", "12,288+", "<0.1%", "75%", "3 GFLOPs",
           "2.5 TFLOPs", "1e-5", "2,048 × 2,048", "1" * 80, "1,1,1,1,1,1,1,1,1", "9" * 5000,
           "1.1.1.1.1", "1e400", "1:0", "0:0", "-3 MB", "∞", "½"]
WORDS = ["parameters", "params active", "KV cache", "per token", "per layer", "FLOPs",
         "context", "seq_len=4096", "8K context", "at 4096 tokens", "FP16", "bf16", "int4",
         "weights", "model size", "embedding", "memory", "saved", "tied", "RoPE", "YaRN",
         "RMSNorm", "Pre-Norm", "SwiGLU", "GQA", "MLA", "heads", "KV heads", "head dim",
         "vocab", "hidden size", "layers", "×", "*", "—", ":", "(", ")", "|", "`", "**", "_",
         "$", "<br/>", "\t", "\u202e", "\x00", "é", "🦙", "\\|", "#"]
pieces = st.one_of(st.sampled_from(NAMES), st.sampled_from(FIGURES), st.sampled_from(WORDS),
                   st.text(max_size=6))


@st.composite
def lines(draw) -> str:
    kind = draw(st.sampled_from(["sentence", "sentence", "heading", "table", "mermaid", "seed",
                                 "label", "list"]))
    words = " ".join(draw(st.lists(pieces, min_size=1, max_size=10)))
    if kind == "heading":
        return "#" * draw(st.integers(1, 7)) + " " + words
    if kind == "label":
        return f"**{words}**:"
    if kind == "list":
        return f"{draw(st.sampled_from(WORDS))} ({', '.join(draw(st.lists(st.sampled_from(NAMES), max_size=5)))})"
    if kind == "mermaid":
        return f'```mermaid\nA["{words}"] --> B{{"{draw(pieces)}"}}\n```'
    if kind == "seed" and SEED_LINES:
        line = draw(st.sampled_from(SEED_LINES))
        at = draw(st.integers(0, len(line)))
        return line[:at] + draw(pieces) + line[at:]
    if kind == "table":
        cols = draw(st.integers(1, 4))
        row = lambda: "| " + " | ".join(draw(pieces) for _ in range(cols)) + " |"  # noqa: E731
        sep = "|" + "---|" * cols if draw(st.booleans()) else draw(st.sampled_from(
            ["|---", "|:-:|-:|", "| --- | --- |", "|"]))
        return "\n".join([row(), sep] + [row() for _ in range(draw(st.integers(0, 3)))])
    return words


documents = st.lists(lines(), min_size=1, max_size=12).map("\n".join)


def check_outcome(paths, file, windowed: bool):
    start = time.perf_counter()
    try:
        results = check_paths(paths)
    except InputError as err:
        message = str(err)
        assert "\n" not in message, message
        # one paragraph; an unknown quantity lists the valid ones, as DESIGN.md asks
        assert len(message) < 400 or "valid quantities:" in message, message
        assert str(file) in message, message
    else:
        for r in results:
            assert r.verdict in ("agree", "wrong", "unverifiable"), r
            # a found claim shows a window of its line (a transcription: its own note)
            assert not windowed or len(r.text) <= 1300, len(r.text)
    elapsed = time.perf_counter() - start
    assert elapsed < FUZZ_SECONDS, f"took {elapsed:.2f} s"


def test_fuzz_documents(tmp_path):
    file = tmp_path / "doc.md"

    @FUZZ
    @given(documents)
    @example("Llama 3.2-1B has " + "1 " * 3000 + "parameters")
    @example("# " + "Llama 3.2-1B " * 500 + "\n" + "It has 16 layers and 1.24B parameters.\n" * 50)
    @example("| Model | Params |\n|---|---|\n| Llama 3.2-1B | " + "9" * 5000 + "B |")
    @example("seq_len=, K Llama 3.2-1B KV cache 64 MB")  # a comma for a context: int('')
    def check(text):
        file.write_text(text, encoding="utf-8", errors="surrogatepass")
        check_outcome([file], file, windowed=True)

    check()


KEYS = ["id", "document", "section", "model", "quantity", "stated", "unit", "value", "note",
        "conditions", "set", "versus", "skip", "text", "x"]
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30),
              st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(FIGURES),
              st.sampled_from(NAMES + ["llama-3.2-1b", "gpt2", "/dev/zero", "", "nope"]),
              st.sampled_from(["kv_cache_bytes", "params_total", "n_layers", "ratio",
                               "reduction", "seq_len", "dtype", "fp16", "n_layers=2",
                               "attention.n_kv_heads=0", "layers=[{select: ''}]"]),
              st.text(max_size=8)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["seq_len", "dtype", "batch", "relation", "model", "set", "x"]), inner,
        max_size=3),
    max_leaves=6)


@st.composite
def transcriptions(draw) -> list:
    entries = copy.deepcopy(draw(st.lists(st.sampled_from(ENTRIES), min_size=1, max_size=3)))
    for _ in range(draw(st.integers(1, 3))):
        entry = draw(st.sampled_from(entries))
        key = draw(st.sampled_from(KEYS))
        if draw(st.integers(0, 4)) == 0:
            entry.pop(key, None)
        else:
            entry[key] = draw(values)
    return entries


def test_fuzz_transcriptions(tmp_path):
    file = tmp_path / "claims.yaml"

    @FUZZ
    @given(transcriptions())
    @example([{**ENTRIES[0], "stated": [1]}])  # an AttributeError
    @example([{**ENTRIES[0], "stated": "1" + "0" * 400}])  # an OverflowError
    @example([{**ENTRIES[0], "stated": "4:0", "unit": "x"}])  # a ZeroDivisionError
    def check(entries):
        file.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8",
                        errors="surrogatepass")
        check_outcome([file], file, windowed=False)

    check()
