"""GraniteMoe (transformers' `granitemoe`): Granite + Mixtral's MoE under other module names
(`block_sparse_moe`, `router`; its own checkpoints use input_linear / output_linear /
router.layer, the same layouts, gate rows first), no shared experts, no MLP bias switch."""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.granite import GRANITE
from archscope.spec.families.granite import write as write_granite
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.mixtral import to_moe
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _moe, _multipliers, _patch
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec

_MOE = "model.layers.{i}.block_sparse_moe"
MOE_WEIGHTS = rules(
    (f"{_MOE}.router.weight", "layers.{i}.mlp.gate.weight"),
    (f"{_MOE}.experts.gate_up_proj", "layers.{i}.mlp.experts.gate_up_proj"),
    (f"{_MOE}.experts.down_proj", "layers.{i}.mlp.experts.down_proj"),
    (f"{_MOE}.router.layer.weight", "layers.{i}.mlp.gate.weight", {"alias": True}),
    (f"{_MOE}.input_linear.weight", "layers.{i}.mlp.experts.gate_up_proj", {"alias": True}),
    (f"{_MOE}.output_linear.weight", "layers.{i}.mlp.experts.down_proj", {"alias": True}),
)


def read(c: Keys) -> dict:
    return _patch({**read_llama(c, bias=("attention_bias",)), "multipliers": _multipliers(c)},
                  ffn=_moe(c))


def write(s: ModelSpec) -> dict:
    return {**without(write_granite(s), "mlp_bias"), **to_moe(s)}


GRANITEMOE = GRANITE.but(
    "granitemoe", "GraniteMoeForCausalLM", read=read, write=write,
    exports=lambda s: s.multipliers is not None and any(layer.is_moe for layer in s.plan),
    generic=True, ffns=("moe",),
    weights=GRANITE.weights + MOE_WEIGHTS, names=("granite",), doc="Granite + MoE")
FAMILIES = (GRANITEMOE,)
