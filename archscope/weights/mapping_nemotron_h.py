"""transformers' NemotronH tensor names <-> archscope's (mapping.TABLES["nemotron_h"]).

Each Nemotron-H layer is one block: `layers.N.norm`, then `layers.N.mixer`, and a residual. The
mixer is the Mamba-2 mixer (our `mixer`, the same parameter names), attention's q/k/v/o_proj
(our `self_attn`) or the MLP's up/down_proj (our `mlp`), so the block's one norm is our
input_layernorm (a layer with a mixer) or post_attention_layernorm (an MLP layer): two rules
for one name, of which the loader takes the one the model has. Files name the model `backbone.` (the published checkpoints, and what transformers 5's
save_pretrained writes back), transformers 5's modules `model.` (its conversion mapping renames
one to the other on load); both are read, and archscope writes `model.`, the module names, so
that a state dict loads into transformers' class directly (measure.reference.hf_twin) and a
written checkpoint loads by name.
"""

from __future__ import annotations

_L = "layers.{i}"
_MAMBA = ("in_proj.{p}", "conv1d.{p}", "out_proj.{p}", "dt_bias", "A_log", "D", "norm.weight")
_BLOCKS = (
    ("embeddings.weight", "embed_tokens.weight"),
    # one name, two alternatives: the first the model has is used (mapping.hf_to_ours)
    (f"{_L}.norm.weight", "layers.{i}.input_layernorm.weight"),
    (f"{_L}.norm.weight", "layers.{i}.post_attention_layernorm.weight"),
    *[(f"{_L}.mixer.{name}", f"layers.{{i}}.mixer.{name}") for name in _MAMBA],
    *[(f"{_L}.mixer.{proj}.{{p}}", f"layers.{{i}}.self_attn.{proj}.{{p}}")
      for proj in ("q_proj", "k_proj", "v_proj", "o_proj")],
    *[(f"{_L}.mixer.{proj}.{{p}}", f"layers.{{i}}.mlp.{proj}.{{p}}")
      for proj in ("up_proj", "down_proj")],
    ("norm_f.weight", "norm.weight"),
)
# rows of mapping._rules (kept as data, so this module need not import mapping, which lists it)
NEMOTRON_H_ROWS = (
    *[(f"model.{hf}", ours, *extra) for hf, ours, *extra in _BLOCKS],
    ("lm_head.weight", "lm_head.weight"),
    *[(f"backbone.{hf}", ours, {**(extra[0] if extra else {}), "alias": True})
      for hf, ours, *extra in _BLOCKS],
)
