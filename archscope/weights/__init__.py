"""HF checkpoint <-> module name mapping, safetensors loading, validation."""

from archscope.weights.mapping import hf_to_ours, ours_to_hf, table_for
from archscope.weights.loader import load_checkpoint  # noqa: E402 (after the tables it uses)

__all__ = ["hf_to_ours", "ours_to_hf", "table_for", "load_checkpoint"]
