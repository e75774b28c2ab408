"""Qwen3-Next's weight names (transformers' Qwen3NextForCausalLM) <-> archscope's.

Qwen3-Next = Qwen3's names (q/k/v/o_proj, q_norm, k_norm on the full_attention layers) +
Mixtral's MoE names (router `mlp.gate`, fused `mlp.experts`) + the Gated DeltaNet under
`linear_attn` (archscope's `mixer`: same module names, nn/gated_deltanet.py) + one shared
expert, `shared_expert` (archscope's `shared_experts`, the name every MoE here uses), and its
sigmoid gate `shared_expert_gate`. q_proj is twice as wide (query and gate rows per head) but
keeps its name. Dense layers (mlp_only_layers) use Llama's mlp names. The published checkpoint's
per-expert tensors are merged by weights/experts.py; its `mtp.*` tensors are skipped by the
loader (weights/validate.without_mtp) when the spec declares mtp_layers.
"""

from __future__ import annotations

_LINEAR = "model.layers.{i}.linear_attn"
# rows of mapping._rules, added there to QWEN3 + MOE (kept as data, so this module need not
# import mapping, which lists it)
QWEN3_NEXT_ROWS = (
    *[(f"{_LINEAR}.{name}.weight", f"layers.{{i}}.mixer.{name}.weight")
      for name in ("in_proj_qkvz", "in_proj_ba", "conv1d", "norm", "out_proj")],
    *[(f"{_LINEAR}.{name}", f"layers.{{i}}.mixer.{name}") for name in ("dt_bias", "A_log")],
    *[(f"model.layers.{{i}}.mlp.shared_expert.{proj}.weight",
       f"layers.{{i}}.mlp.shared_experts.{proj}.weight")
      for proj in ("gate_proj", "up_proj", "down_proj")],
    ("model.layers.{i}.mlp.shared_expert_gate.weight", "layers.{i}.mlp.shared_expert_gate.weight"),
)
