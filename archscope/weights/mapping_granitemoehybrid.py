"""Granite 4.0's weight names (transformers' GraniteMoeHybridForCausalLM) and Bamba's <-> ours.

GraniteMoeHybrid = Llama's embedding, attention, norms and head + a Mamba-2 mixer under
`mamba` (ours: `mixer`, with transformers' own parameter names) + GraniteMoe's MoE names
(`block_sparse_moe`, the router and the fused experts, and the older input_linear /
output_linear / router.layer names its checkpoints use) + `shared_mlp`, whose input_linear holds
gate rows then up rows (GraniteMoeHybridMLP applies the activation to the first half).

shared_mlp is the MoE's shared expert when the layer has experts and the whole dense MLP when
num_local_experts is 0, so each of its tensors has two rules; the loader takes the one whose
targets the model has (mapping.hf_to_ours), and the writer the one whose first target it has.
"""

from __future__ import annotations

_LAYER = "model.layers.{i}"
_SHARED_MLP = f"{_LAYER}.shared_mlp"
# (HF name, our name or names) rows, in mapping._rules' form
MAMBA = (
    *[(f"{_LAYER}.mamba.{name}.{{p}}", f"layers.{{i}}.mixer.{name}.{{p}}")
      for name in ("in_proj", "conv1d", "out_proj")],
    *[(f"{_LAYER}.mamba.{name}", f"layers.{{i}}.mixer.{name}")
      for name in ("dt_bias", "A_log", "D", "norm.weight")],
)
ROWS = (
    *MAMBA,
    *[(f"{_SHARED_MLP}.input_linear.weight",
       [f"layers.{{i}}.mlp.{at}{proj}.weight" for proj in ("gate_proj", "up_proj")])
      for at in ("shared_experts.", "")],
    *[(f"{_SHARED_MLP}.output_linear.weight", f"layers.{{i}}.mlp.{at}down_proj.weight")
      for at in ("shared_experts.", "")],
)


def granitemoehybrid(llama: tuple, granitemoe: tuple, rules) -> tuple:
    """The table from mapping.py's Llama and GraniteMoe tables and its `_rules` (passed in, so
    that this module imports nothing from mapping.py, which imports it)."""
    return (tuple(r for r in llama if ".mlp." not in r.hf) + rules(*ROWS)
            + tuple(r for r in granitemoe if ".block_sparse_moe." in r.hf))


# Bamba = Llama's embedding, attention, input_layernorm and head + the same `mamba` mixer + its
# own names for the rest: the MLP under `feed_forward`, its norm `pre_ff_layernorm`, the final
# norm `final_layernorm`.
_BAMBA = (*MAMBA,
          *[(f"{_LAYER}.feed_forward.{proj}.{{p}}", f"layers.{{i}}.mlp.{proj}.{{p}}")
            for proj in ("gate_proj", "up_proj", "down_proj")],
          (f"{_LAYER}.pre_ff_layernorm.weight", "layers.{i}.post_attention_layernorm.weight"),
          ("model.final_layernorm.weight", "norm.weight"))


def bamba(llama: tuple, rules) -> tuple:
    """Bamba's table, from mapping.py's Llama table and `_rules` (passed in, as above)."""
    return tuple(r for r in llama if not any(s in r.hf for s in (
        ".mlp.", "post_attention_layernorm", "model.norm."))) + rules(*_BAMBA)
