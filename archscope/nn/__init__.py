"""torch modules by kind and the generic block builder."""

from archscope.nn.build import build_model, count_parameters
from archscope.nn.model import DecoderLM

__all__ = ["build_model", "count_parameters", "DecoderLM"]
