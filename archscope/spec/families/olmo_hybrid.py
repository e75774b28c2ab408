"""OLMo-Hybrid (transformers' olmo_hybrid, OlmoHybridForCausalLM): declared as its difference from
OLMo 3 (olmo3.py) and refused, naming the key and the component archscope lacks.

What it is (transformers' modular_olmo_hybrid.py): OLMo 3's model whose `layer_types` mixes
- full_attention layers: OLMo 3's (OlmoHybridAttentionDecoderLayer = Olmo3DecoderLayer): the
  norms after attention and after the MLP (post_attention_layernorm, post_feedforward_layernorm:
  OLMo 2's post-norm), QK-norm over the whole projection, RoPE, or none at all when
  rope_parameters has no rope_theta (the released checkpoints: NoPE);
- linear_attention layers: a Gated DeltaNet in a Llama block (OlmoHybridLinearAttentionDecoderLayer
  = LlamaDecoderLayer: norms before the mixer and before the MLP, pre-norm), whose projections
  are separate modules (q_proj, k_proj, v_proj, a_proj, b_proj, the gate g_proj, o_proj), whose
  write strength beta is doubled when linear_allow_neg_eigval (default true: beta in [0, 2]),
  and whose gated output norm (o_norm) has eps 1e-5 whatever rms_norm_eps says.

What archscope does not build: a norm placement per layer type. A spec's norm.position is one
for the model (spec/components.py), and a `layers` override cannot change it, so the two block
types cannot be one spec; the reader refuses at `layer_types`, which makes them. (The DeltaNet's
differences, beta's doubling and its eps, would be fields of the mixer's spec; they are named in
the refusal's doc, not built, since no OLMo-Hybrid spec can be written without the first.)
"""

from __future__ import annotations

from archscope.spec.families.olmo3 import OLMO3
from archscope.spec.hf_keys import Keys


def read(c: Keys) -> dict:
    raise c.error("layer_types", "OLMo-Hybrid's two block types norm differently: its "
                                 "full_attention layers after attention and the MLP (OLMo 3's "
                                 "post-norm), its linear_attention (Gated DeltaNet) layers before "
                                 "them (Llama's pre-norm); a norm placement per layer type is a "
                                 "component archscope does not build (norm.position is one per "
                                 "model)")


# no weight-name rules: declared only to refuse (Family.reads_nothing)
OLMO_HYBRID = OLMO3.but(
    "olmo_hybrid", "OlmoHybridForCausalLM", read=read, weights=(), mixers=("gated_deltanet",),
    names=("olmo",),
    doc="OLMo 3 + Gated DeltaNet layers in pre-norm blocks (refused: a norm placement per "
        "layer type)")
FAMILIES = (OLMO_HYBRID,)
