"""Granite 4.0's weight names (transformers' GraniteMoeHybridForCausalLM) <-> archscope's.

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

from archscope.weights.mapping import GRANITEMOE, LLAMA, _rules

_LAYER = "model.layers.{i}"
_MAMBA = _rules(*[(f"{_LAYER}.mamba.{name}.{{p}}", f"layers.{{i}}.mixer.{name}.{{p}}")
                  for name in ("in_proj", "conv1d", "out_proj")],
                *[(f"{_LAYER}.mamba.{name}", f"layers.{{i}}.mixer.{name}")
                  for name in ("dt_bias", "A_log", "D", "norm.weight")])
_SHARED = _rules(*[(f"{_LAYER}.shared_mlp.input_linear.weight",
                    [f"layers.{{i}}.mlp.{at}gate_proj.weight", f"layers.{{i}}.mlp.{at}up_proj.weight"])
                   for at in ("shared_experts.", "")],
                 *[(f"{_LAYER}.shared_mlp.output_linear.weight", f"layers.{{i}}.mlp.{at}down_proj.weight")
                   for at in ("shared_experts.", "")])
GRANITEMOEHYBRID = (tuple(r for r in LLAMA if ".mlp." not in r.hf) + _MAMBA + _SHARED
                    + tuple(r for r in GRANITEMOE if ".block_sparse_moe." in r.hf))
