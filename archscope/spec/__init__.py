"""Specs: YAML -> frozen, validated ModelSpec; the per-layer plan; HF config.json interop."""

from archscope.spec.loader import load_spec, preset_names, with_overrides
from archscope.spec.schema import (AttentionSpec, FFNSpec, LayerPlan, ModelSpec, NormSpec,
                                   PositionSpec, RouterSpec, ScalingSpec)

__all__ = ["load_spec", "preset_names", "with_overrides", "ModelSpec", "LayerPlan",
           "AttentionSpec", "FFNSpec", "NormSpec", "PositionSpec", "RouterSpec", "ScalingSpec"]
