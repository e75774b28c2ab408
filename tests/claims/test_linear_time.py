"""check-claims reads a document in time linear in its length (issue 35: 65 KB of repeated
model names, or a long run of digits with spaces, commas or dots, took more than a minute).

Each shape is timed at n and 4n: a linear reading takes about 4 times as long, a quadratic one
16 times; the bound, 8 times (plus a little for timer noise), holds on a busy 2-core machine
and fails any quadratic path. Each time is the best of three runs, and `within` turns a
regression into a failure rather than a hung suite."""

from __future__ import annotations

import time

import pytest

from archscope.claims.documents import check_paths
from archscope.claims.extract import extract_claims
from hostile import within

SHAPES = {
    "repeated names": lambda n: "Llama 3.2-1B Mistral 7B GPT-2 DeepSeek-V2 " * n,
    "names in one sentence with a number": lambda n: "Llama 3.2-1B has 1.24B parameters. " * n,
    "digits and spaces": lambda n: "Llama 3.2-1B has " + "1 " * (8 * n) + "parameters\n",
    "digits and commas": lambda n: "Llama 3.2-1B has " + "1," * (8 * n) + " parameters\n",
    "digits and dots": lambda n: "Llama 3.2-1B has " + "1." * (8 * n) + " parameters\n",
    "a version of many parts": lambda n: "Llama " + "1.1 " * (4 * n) + "x\n",
    "underscores": lambda n: "Llama" + "_1" * (8 * n) + "\n",
    "sizes alone": lambda n: "Llama 3.2-1B. " + "the 8B model " * n + "\n",
    "ranges and ratios": lambda n: "Llama 3.2-1B has " + "1-2:3 " * (2 * n) + "MB\n",
    "a long heading": lambda n: "# " + "Llama 3.2-1B " * n + "\n" + "It has 16 layers.\n" * n,
    "a long table label": lambda n: ("| Model | " + "Params " * n + "|\n|---|---|\n"
                                     + "| Llama 3.2-1B | 1.24B |\n" * n),
    "a model list": lambda n: "RoPE (" + ", ".join(["Llama"] * n) + ")\n",
}


def best_of_three(fn) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("shape", SHAPES)
def test_extraction_time_grows_linearly(shape):
    make = SHAPES[shape]
    small, large = make(250), make(1000)
    mapped = {"Params": "gpt2"}  # a --model-map entry: its own search over the text
    with within(120):
        t_small = best_of_three(lambda: extract_claims(small, "doc.md", mapped))
        t_large = best_of_three(lambda: extract_claims(large, "doc.md", mapped))
    assert t_large < 8 * t_small + 0.05, (shape, len(large), t_small, t_large)


def test_checking_the_claims_grows_linearly(tmp_path):
    """Every found claim is checked: its model's record is built once per conditions, not
    once per claim, and nothing per claim reads the whole document."""
    doc = tmp_path / "doc.md"

    def check(n):
        doc.write_text("# Sizes\n\n" + "Llama 3.2-1B has 1.24B parameters and 32 KiB of KV "
                       "cache per token in bf16.\n" * n)
        return lambda: check_paths([doc])

    with within(120):
        t_small = best_of_three(check(100))
        t_large = best_of_three(check(400))
    assert t_large < 8 * t_small + 0.05, (t_small, t_large)
    results = check_paths([doc])
    assert len(results) == 800 and {r.verdict for r in results} == {"agree"}


@pytest.mark.slow  # seconds per document; benchmarks/claims_megabyte.py times them
def test_a_megabyte_of_each_hostile_shape_is_read(tmp_path, run_cli):
    """A megabyte of each shape ends cleanly; `within` fails one that hangs (a quadratic path
    takes hours here). How long each takes is the benchmark's to say, not a timed test's."""
    doc = tmp_path / "doc.md"
    for shape, make in SHAPES.items():
        text = make(1)
        doc.write_text((text * (1_000_000 // len(text) + 1))[:1_000_000])
        with within(300):
            code, _, err = run_cli("check-claims", str(doc), "--format", "json")
        assert code == 0 and "Traceback" not in err, (shape, err[-300:])
