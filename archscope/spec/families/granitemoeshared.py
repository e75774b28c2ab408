"""GraniteMoeShared (transformers' `granitemoeshared`): GraniteMoe + a shared SwiGLU of
shared_intermediate_size in every layer (`shared_mlp`, its input_linear gate rows then up rows),
added to the routed experts' output (n_shared_experts 1, d_shared; shared_intermediate_size 0:
none, GraniteMoe's network)."""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.granitemoe import GRANITEMOE
from archscope.spec.families.granitemoe import read as read_granitemoe
from archscope.spec.families.granitemoe import write as write_granitemoe
from archscope.spec.hf_keys import Keys
from archscope.spec.schema import ModelSpec

_SHARED = "model.layers.{i}.shared_mlp"
SHARED_MLP_WEIGHTS = rules(
    (f"{_SHARED}.input_linear.weight", ["layers.{i}.mlp.shared_experts.gate_proj.weight",
                                        "layers.{i}.mlp.shared_experts.up_proj.weight"]),
    (f"{_SHARED}.output_linear.weight", "layers.{i}.mlp.shared_experts.down_proj.weight"),
)


def shared(c: Keys, out: dict) -> dict:
    """`out` with the shared MLP added to its MoE, if shared_intermediate_size is not 0."""
    width = c.size("shared_intermediate_size", least=0)
    if width:
        out["ffn"] = {**out["ffn"], "n_shared_experts": 1, "d_shared": width}
    return out


def read(c: Keys) -> dict:
    return shared(c, read_granitemoe(c))


def write(s: ModelSpec) -> dict:
    """GraniteMoe's keys + shared_intermediate_size (the shared experts run as one MLP of that
    width; the read-back names a spec whose shared width it cannot hold)."""
    return {**write_granitemoe(s), "shared_intermediate_size": s.ffn.shared_width}


def shared_granite(s: ModelSpec) -> bool:
    return s.multipliers is not None and any(layer.is_moe and layer.ffn.shared_experts
                                             for layer in s.plan)


GRANITEMOESHARED = GRANITEMOE.but(
    "granitemoeshared", "GraniteMoeSharedForCausalLM", read=read, write=write,
    exports=shared_granite, ffns=("moe",), weights=GRANITEMOE.weights + SHARED_MLP_WEIGHTS,
    spec_keys=GRANITEMOE.key_table(**{"ffn.d_shared": "shared_intermediate_size",
                                      "ffn.n_shared_experts": "shared_intermediate_size"}),
    key_fields=GRANITEMOE.field_table(shared_intermediate_size="d_shared"),
    names=("granite",), doc="GraniteMoe + a shared MLP")
FAMILIES = (GRANITEMOESHARED,)
