"""Storage sizes of the number formats the estimators price weights, caches and activations in.

Sizes are kept in bits so that sub-byte formats stay exact: `nbytes` rounds a whole tensor
up to a byte, never an element. Quantised formats count only their payload: the per-group
scales and zero points that real int8/int4 schemes add (a few percent) are left out.
"""

from __future__ import annotations

from archscope.errors import InputError

DTYPE_BITS: dict[str, int] = {
    "fp64": 64,
    "fp32": 32,
    "tf32": 32,  # stored as fp32
    "fp16": 16,
    "bf16": 16,
    "fp8": 8,
    "int8": 8,
    "int4": 4,
}

# Bytes per element: int4 is half a byte.
DTYPE_BYTES: dict[str, float] = {name: bits / 8 for name, bits in DTYPE_BITS.items()}

# Names people (and torch) also use for the same formats.
ALIASES: dict[str, str] = {
    "float64": "fp64", "double": "fp64",
    "float32": "fp32", "float": "fp32",
    "float16": "fp16", "half": "fp16",
    "bfloat16": "bf16",
    "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
    "fp4": "int4", "uint4": "int4", "nf4": "int4", "q4": "int4",
    "uint8": "int8", "q8": "int8",
}

# The formats a weights table shows by default.
WEIGHT_DTYPES = ("fp32", "fp16", "bf16", "int8", "int4")


class UnknownDtypeError(InputError, ValueError):
    """A dtype name that is not in DTYPE_BITS (or its aliases)."""


def canonical_dtype(name: str) -> str:
    """'torch.bfloat16', 'BF16', 'bfloat16' -> 'bf16'; an unknown name raises UnknownDtypeError."""
    if isinstance(name, str) and name in DTYPE_BITS:  # canonical already: the usual case
        return name
    key = str(name).strip().lower().removeprefix("torch.")
    key = ALIASES.get(key, key)
    if key not in DTYPE_BITS:
        raise UnknownDtypeError(
            f"unknown dtype {name!r}: expected one of {', '.join(DTYPE_BITS)} "
            f"(or {', '.join(sorted(ALIASES))})")
    return key


def dtype_bits(name: str) -> int:
    return DTYPE_BITS[canonical_dtype(name)]


def dtype_bytes(name: str) -> float:
    """Bytes per element (0.5 for int4)."""
    return DTYPE_BYTES[canonical_dtype(name)]


def nbytes(elements: int, dtype: str) -> int:
    """Bytes to store `elements` numbers in `dtype`, rounded up to a whole byte."""
    return -(-elements * dtype_bits(dtype) // 8)
