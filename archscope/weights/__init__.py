"""HF checkpoint <-> module name mapping, safetensors loading, validation."""

from archscope.weights.mapping import TABLES, hf_to_ours, ours_to_hf, table_for

__all__ = ["TABLES", "hf_to_ours", "ours_to_hf", "table_for"]
