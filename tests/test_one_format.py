"""One weight format, one number on every surface (issue 36).

`show`, `compare`, `compare --gpu`, `fit`, the Python API and the report's deployment section
each price a model's weights through their own code path; for the same model and format they
must print the same bytes, and the same figure in their text. A preset names its checkpoint's
format (the spec's weight_format) and every analytic command defaults to it.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

import archscope.api as arch
from archscope.cli import cli
from archscope.estimate.formats import weights_in_format
from archscope.spec import load_spec
from archscope.spec.weight_formats import checkpoint_format, format_of_quantization
from archscope.units import size

# (model, --dtype or None for the checkpoint's, the format that must be priced)
CASES = [
    ("gpt-oss-120b", None, "mxfp4-experts"),
    ("gpt-oss-120b", "bf16", "bf16"),
    ("deepseek-v3", None, "fp8-block"),
    ("llama-3.1-8b", None, "bf16"),  # names no format: bf16
    ("llama-3.1-8b", "int4", "int4-g128"),  # one name, one format: int4 is int4-g128
    ("llama-3.1-8b", "q4_k_m", "q4_k_m"),
    ("qwen3-30b-a3b", "fp8", "fp8"),
]


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("model, dtype, fmt", CASES)
def test_show_compare_fit_and_the_api_print_one_number(model, dtype, fmt):
    given = ["--dtype", dtype] if dtype else []
    want = weights_in_format(load_spec(model), fmt).total_bytes
    shown = json.loads(_run("show", model, "--format", "json", *given))
    compared = json.loads(_run("compare", model, "--format", "json", "--gpu", "h200", *given))[0]
    fitted = json.loads(_run("fit", model, "--gpu", "h200", "--n-gpus", "8", "--tp", "1",
                             "--format", "json", *given))
    # --weight-format is the same option as --dtype
    same = json.loads(_run("fit", model, "--gpu", "h200", "--format", "json",
                           *(["--weight-format", dtype] if dtype else [])))
    assert shown["record"]["dtype"] == compared["dtype"] == fitted["weight_format"] == \
        same["weight_format"] == fmt
    assert shown["record"]["weights_bytes"] == shown["details"]["weights_bytes"][fmt] == \
        compared["weights_bytes"] == compared["fit"]["weights_bytes_per_gpu"] == \
        fitted["weights_bytes_per_gpu"] == same["weights_bytes_per_gpu"] == want
    assert arch.record(model, dtype=dtype).weights_bytes == \
        arch.fit(model, "h200", weight_format=dtype).split.weights_bytes_per_gpu == want
    # the text views print the same figure
    figure = size(want, "G")
    assert re.search(rf"^\s*{re.escape(fmt)}\s.*{re.escape(figure)}", _run("show", model, *given),
                     re.M), (fmt, figure)
    assert f"weights per GPU           {figure}" in _run("fit", model, "--gpu", "h200", *given)


def test_the_deployment_report_prices_as_fit_does():
    """Every row of the report's deployment table is `archscope fit` of that setup."""
    from archscope.report.pages.deployment import SETUPS, deployment_section

    _, data = deployment_section()
    assert len(data["setups"]) == len(SETUPS)
    for row, (model, gpu, setup) in zip(data["setups"], SETUPS):
        args = ["fit", model, "--gpu", gpu, "--n-gpus", str(setup.n_gpus), "--ep", str(setup.ep),
                "--context", str(setup.context), "--batch", str(setup.batch), "--format", "json"]
        fitted = json.loads(_run(*args, *(["--dtype", setup.weight_format]
                                          if setup.weight_format else [])))
        assert (row["weight_format"], row["weights_bytes_per_gpu"]) == \
            (fitted["weight_format"], fitted["weights_bytes_per_gpu"])


def test_gpt_oss_120b_fits_one_h100_in_its_checkpoint_format():
    text = _run("fit", "gpt-oss-120b", "--gpu", "h100-sxm")
    assert "weights mxfp4-experts (the checkpoint's)" in text.splitlines()[0]
    assert re.search(r"verdict\s+fits", text) and "time per output token" in text


def test_a_setup_that_cannot_load_says_what_would_and_prints_no_speed():
    spec = load_spec("gpt-oss-120b")
    text = _run("fit", "gpt-oss-120b", "--gpu", "h100-sxm", "--dtype", "bf16")
    row = json.loads(_run("fit", "gpt-oss-120b", "--gpu", "h100-sxm", "--dtype", "bf16",
                          "--format", "json"))
    assert not row["fits"] and row["ttft_ms"] is row["tpot_ms"] is row["decode_tokens_per_s"] \
        is None
    assert "time to first token" not in text and "tokens/s" not in text
    gpus, fmt = row["advice"]["n_gpus"], row["advice"]["weight_format"]
    assert f"would fit on              {gpus} x h100-sxm" in text and f"or in  " in text
    # each answer is what fit says of that setup, and it is the least change that fits
    assert arch.fit(spec, "h100-sxm", n_gpus=gpus, weight_format="bf16").fits
    assert not arch.fit(spec, "h100-sxm", n_gpus=gpus // 2, weight_format="bf16").fits
    assert arch.fit(spec, "h100-sxm", weight_format=fmt).fits
    assert weights_in_format(spec, fmt).total_bytes < weights_in_format(spec, "bf16").total_bytes


def test_quantization_config_names_the_checkpoint_format():
    assert format_of_quantization({"quant_method": "fp8",
                                   "weight_block_size": [128, 128]}) == "fp8-block"
    assert format_of_quantization({"quant_method": "fp8"}) == "fp8"
    assert format_of_quantization({"quant_method": "fp8", "weight_block_size": [1, 64]}) is None
    assert format_of_quantization({"quant_method": "mxfp4"}) == "mxfp4"
    assert format_of_quantization({"quant_method": "gptq", "bits": 4, "group_size": 128}) == \
        "int4-g128"
    assert format_of_quantization({"quant_method": "awq", "bits": 4, "group_size": 64}) is None
    assert format_of_quantization({"quant_method": "bitsandbytes"}) is None
    assert format_of_quantization("fp8") is None
    assert checkpoint_format(load_spec("llama-3.1-8b")) == "bf16"


def test_a_spec_naming_an_unknown_format_is_refused_by_key():
    from archscope.errors import SpecError

    with pytest.raises(SpecError, match=r"weight_format: unknown weight format 'mxfp5' \(did "
                                        r"you mean 'mxfp4'"):
        load_spec("gpt-oss-20b", ["weight_format=mxfp5"])
