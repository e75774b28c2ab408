"""VaultGemma (transformers' `vaultgemma`, VaultGemmaForCausalLM): Gemma 2 with its two
post-sublayer norms deleted, so a pre-norm block (input_layernorm before attention,
pre_feedforward_layernorm before the MLP, which archscope registers under Llama's
post_attention_layernorm), always causal (the class has no use_bidirectional_attention)."""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.gemma2 import GEMMA2, gemma_norms, read, write

_FFN_NORM = "pre_feedforward_layernorm"
VAULTGEMMA = GEMMA2.but(
    "vaultgemma", "VaultGemmaForCausalLM", read=lambda c: read(c, position="pre"), write=write,
    # VaultGemma's forward always builds a sliding-window mask, so it needs a window: a pre-norm
    # Gemma without one is Gemma's own class
    exports=lambda s: gemma_norms("pre")(s) and any(layer.window for layer in s.plan),
    weights=tuple(r for r in GEMMA2.weights if "feedforward" not in r.hf
                  and "post_attention" not in r.hf)
    + rules((f"model.layers.{{i}}.{_FFN_NORM}.weight",
             "layers.{i}.post_attention_layernorm.weight")),
    names=("gemma",), doc="Gemma 2 with pre-norm blocks (no post-sublayer norms)")
FAMILIES = (VAULTGEMMA,)
