"""What a spec says of its released checkpoint beside the network: the names of the weight
formats (a spec's `weight_format`, `--dtype` and `--weight-format`; the format a config.json's
`quantization_config` describes), and how its model card counts active parameters.

What each format stores (bits, scales, the tensors it leaves in 16 bits) is
archscope/estimate/formats.py's FORMATS, keyed by exactly these names (it checks so when it is
imported). The names live here, below the estimators, because a spec names its checkpoint's
format and the spec layer checks what it reads.
"""

from __future__ import annotations

import difflib
from typing import Literal

from archscope.errors import InputError, SpecError, quote

NAMES = ("bf16", "fp16", "fp32", "fp8", "fp8-block", "int8", "int4-g128", "nvfp4", "mxfp4",
         "mxfp4-experts", "ternary", "q8_0", "q6_k", "q5_k_m", "q4_k_m")
# other spellings of the same formats: torch's dtype names, the quantizers' method names
ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
           "float": "fp32", "float8-e4m3fn": "fp8", "fp8-tensor": "fp8", "fp8-per-tensor": "fp8",
           "fp8-128": "fp8-block", "int4": "int4-g128", "gptq": "int4-g128",
           "awq": "int4-g128", "gpt-oss-mxfp4": "mxfp4-experts", "b1.58": "ternary"}
DEFAULT = "bf16"  # what a spec that names no checkpoint format is priced in
# How model cards count active parameters (the checkpoint's other fact a spec may state):
# archscope's own count with every lookup table and the head, without the input embedding
# (OpenAI, DeepSeek), or without embeddings and head (GLM). estimate/params.py computes each.
ActiveConvention = Literal["with_embeddings", "without_input_embedding",
                           "without_embeddings_or_head"]


class UnknownFormatError(InputError, ValueError):
    """A weight format name that is not in NAMES (or its aliases)."""


def canonical_format(name: str) -> str:
    """'Q4_K_M', 'torch.bfloat16', 'gptq' -> 'q4_k_m', 'bf16', 'int4-g128'; an unknown name
    raises UnknownFormatError listing the known ones."""
    if name in NAMES:  # the usual case
        return name
    key = str(name).strip().lower().removeprefix("torch.").replace("_", "-")
    key = ALIASES.get(key, key)
    for candidate in (key, key.replace("-", "_")):
        if candidate in NAMES:
            return candidate
    close = difflib.get_close_matches(key, [*NAMES, *ALIASES], n=3, cutoff=0.5)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    raise UnknownFormatError(f"unknown weight format {quote(name)}{hint}; known: "
                             f"{', '.join(NAMES)}")


def check_format(name: str | None, key: str = "weight_format") -> None:
    """A spec's weight_format: a known name (aliases included) or null; SpecError naming `key`."""
    if name is None:
        return
    try:
        canonical_format(name)
    except UnknownFormatError as err:
        raise SpecError(str(err), key=key) from None


def checkpoint_format(spec) -> str:
    """The canonical name of the format `spec`'s checkpoint ships in (bf16 when it names none)."""
    return canonical_format(spec.weight_format or DEFAULT)


def format_of_quantization(config: object) -> str | None:
    """The format a config.json's `quantization_config` describes, as transformers' quantizers
    read it; None when it describes none that archscope prices (the spec then names no format,
    and is priced in bf16). Each name is the checkpoint's layout in estimate/formats.py:
    - quant_method mxfp4 leaving self_attn out (`modules_to_not_convert`): gpt-oss's experts-only
      checkpoint, mxfp4-experts; otherwise mxfp4;
    - fp8 with weight_block_size [128, 128]: DeepSeek-V3's fp8-block; other fp8: per tensor;
    - gptq / awq at 4 bits in groups of 128: int4-g128.
    A family whose checkpoint format is its own reads it itself (BitNet's ternary: bitnet.py)."""
    if not isinstance(config, dict):
        return None
    method = str(config.get("quant_method", "")).lower()
    if method == "mxfp4":
        skipped = config.get("modules_to_not_convert") or []
        return "mxfp4-experts" if any("self_attn" in str(m) for m in skipped) else "mxfp4"
    if method == "fp8":
        block = config.get("weight_block_size")
        return "fp8-block" if block == [128, 128] else (None if block else "fp8")
    if method in ("gptq", "awq"):
        group = config.get("group_size", config.get("q_group_size"))
        return "int4-g128" if config.get("bits", config.get("w_bit")) == 4 and group == 128 \
            else None
    return None
