"""The README's Python API examples run as written, and give what the CLI prints for the same
models (the API is the code the commands run)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import archscope.api as arch

README = Path(__file__).resolve().parents[1] / "README.md"


def _api_blocks() -> list[str]:
    text = README.read_text()
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_examples_run():
    blocks = _api_blocks()
    assert blocks
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(README), "exec"), {})
    printed = out.getvalue().splitlines()
    assert printed[0] == "32 8"  # the comment beside that print says so
    assert len(printed) >= 5


def test_the_api_gives_what_the_cli_prints(run_cli):
    models = ["llama-3.1-8b", "qwen3-8b", "llama-3.1-8b:attention.n_kv_heads=32"]
    code, out, err = run_cli("compare", *models, "--seq-len", "32768", "--format", "json")
    assert code == 0, err
    assert json.loads(out) == arch.compare_rows(models, 32768)
    frame = arch.compare(models, seq_len=32768)
    assert list(frame.index) == [r["model"] for r in json.loads(out)]
    assert frame.loc["qwen3-8b", "kv_cache_bytes"] == json.loads(out)[1]["kv_cache_bytes"]

    code, out, err = run_cli("fit", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "8192",
                             "--batch", "8", "--format", "json")
    assert code == 0, err
    assert json.loads(out) == arch.fit("llama-3.1-8b", "h100-sxm", context=8192, batch=8).row()

    code, out, err = run_cli("diff", "llama-3.2-1b", "llama-3.2-3b", "--format", "json")
    assert code == 0, err
    from archscope.estimate.diff import diff_dict

    assert json.loads(out) == diff_dict(arch.diff("llama-3.2-1b", "llama-3.2-3b"))
