"""Mixtral (transformers' `mixtral`): Mistral + a MoE FFN (softmax over the top-k router logits,
renormalised), its router `gate` and fused experts under `mlp`; published checkpoints keep one
`block_sparse_moe.experts.{j}.w1/w2/w3` tensor per expert."""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.mistral import MISTRAL
from archscope.spec.families.mistral import read as read_mistral
from archscope.spec.families.mistral import write as write_mistral
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _moe, _patch
from archscope.spec.schema import ModelSpec

# the MoE names transformers 5 gives every Mixtral-like class: router `gate`, fused experts
MOE_WEIGHTS = rules(
    ("model.layers.{i}.mlp.gate.weight", "layers.{i}.mlp.gate.weight"),
    ("model.layers.{i}.mlp.experts.gate_up_proj", "layers.{i}.mlp.experts.gate_up_proj"),
    ("model.layers.{i}.mlp.experts.down_proj", "layers.{i}.mlp.experts.down_proj"),
)
# the fused expert tensors a per-expert checkpoint is read into (weights/experts.py)
GATE_UP = "model.layers.{i}.mlp.experts.gate_up_proj"
DOWN = "model.layers.{i}.mlp.experts.down_proj"


def read(c: Keys) -> dict:
    return _patch(read_mistral(c), ffn=_moe(c))


def to_moe(s: ModelSpec) -> dict:
    return {"num_local_experts": s.ffn.n_experts, "num_experts_per_tok": s.ffn.top_k,
            "intermediate_size": s.ffn.d_expert}


def write(s: ModelSpec) -> dict:
    return {**write_mistral(s), **to_moe(s)}



MIXTRAL = MISTRAL.but(
    "mixtral", "MixtralForCausalLM", read=read, write=write,
    exports=lambda s: not s.multipliers and any(layer.is_moe for layer in s.plan),
    generic=True, ffns=("moe",),
    weights=MISTRAL.weights + MOE_WEIGHTS,
    # Mistral's published files: (per-expert name, fused name, which half of its rows, halves)
    per_expert=(("model.layers.{i}.block_sparse_moe.experts.{j}.w1.weight", GATE_UP, 0, 2),
                ("model.layers.{i}.block_sparse_moe.experts.{j}.w3.weight", GATE_UP, 1, 2),
                ("model.layers.{i}.block_sparse_moe.experts.{j}.w2.weight", DOWN, 0, 1)),
    renamed_tensors=(("model.layers.{i}.block_sparse_moe.gate.weight",
                      "model.layers.{i}.mlp.gate.weight"),),
    names=("mixtral",), usual={"mixtral": "mixtral-8x7b"}, doc="Mistral + MoE")
FAMILIES = (MIXTRAL,)
