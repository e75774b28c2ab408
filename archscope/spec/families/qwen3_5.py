"""Qwen3.5 (transformers' qwen3_5 and qwen3_5_moe: multimodal wrappers, and their text models
qwen3_5_text and qwen3_5_moe_text, Qwen3_5[Moe]ForCausalLM) config.json <-> spec.

Qwen3.5's text model is Qwen3-Next's (qwen3_next.py: gated attention with per-head QK-norm on
the full_attention layers, (1 + weight) RMSNorms, layer_types or full_attention_interval, a
Gated DeltaNet on the others) with these differences (transformers' modular_qwen3_5.py and
modular_qwen3_5_moe.py):
- the DeltaNet's input projections are split (mixer.projections: split): in_proj_qkv (q of
  every key head, then k, then v), in_proj_z, in_proj_b and in_proj_a, each head after head,
  where Qwen3-Next fuses in_proj_qkvz and in_proj_ba per key head (Qwen3_5GatedDeltaNet);
- qwen3_5_text: a SwiGLU MLP of intermediate_size on every layer (Qwen3_5TextConfig deletes
  Qwen3-Next's MoE keys);
- qwen3_5_moe_text: a MoE on every layer (no decoder_sparse_step nor mlp_only_layers), its
  router always renormalised (Qwen3VLMoeTextTopKRouter has no norm_topk_prob switch), with
  Qwen3-Next's sigmoid-gated shared expert;
- interleaved M-RoPE (mrope_section) over partial_rotary_factor of each head: with text alone
  its three position streams are equal, so it rotates as plain partial RoPE (qwen3_vl.py);
  the mrope keys are not read;
- the published checkpoints' multi-token-prediction module (`mtp.*`, which transformers skips)
  is counted by mtp_num_hidden_layers (absent: 0).
Keys the published text_config carries that transformers' classes do not read (attn_output_gate:
the attention is always gated; mamba_ssm_dtype: the torch path keeps the state in fp32) are not
read either. The wrappers read their text_config and tie the lm_head by their own top-level
tie_word_embeddings (qwen3_vl.py's reading); their tensors sit under model.language_model., the
vision tower (model.visual.*) skipped. The wrappers are read only: their text models write as
qwen3_5_text and qwen3_5_moe_text.
"""

from __future__ import annotations

from archscope.spec.families.base import frozen, rules
from archscope.spec.families.qwen3 import QWEN3
from archscope.spec.families.qwen3_next import (QWEN3_NEXT, QWEN3_NEXT_ROWS, read_hybrid,
                                                write_hybrid)
from archscope.spec.families.qwen3_vl import _text_weights, _wrapped
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act
from archscope.spec.schema import ModelSpec

_MTP = "mtp_num_hidden_layers"
_MROPE = ("mrope_section", "mrope_interleaved")
# Qwen3-Next's keys the Qwen3.5 text configs drop (Qwen3_5MoeTextConfig keeps the experts')
_NOT_DENSE = ("decoder_sparse_step", "mlp_only_layers", "num_experts", "num_experts_per_tok",
              "moe_intermediate_size", "shared_expert_intermediate_size", "norm_topk_prob")
_NOT_MOE = ("decoder_sparse_step", "mlp_only_layers", "intermediate_size", "norm_topk_prob")


def _dense(c: Keys, n: int) -> tuple[dict, None, list[int]]:
    """Qwen3_5DecoderLayer: the MLP on every layer."""
    return ({"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": _act(c)},
            None, list(range(n)))


def _moe(c: Keys, n: int) -> tuple[None, dict, list[int]]:
    """Qwen3_5MoeDecoderLayer: the MoE on every layer, renormalised, one gated shared expert."""
    experts, k = c.size("num_experts"), c.size("num_experts_per_tok")
    if k > experts:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed num_experts ({experts})")
    return None, {"kind": "moe", "activation": _act(c), "n_experts": experts, "top_k": k,
                  "d_expert": c.size("moe_intermediate_size"), "n_shared_experts": 1,
                  "d_shared": c.size("shared_expert_intermediate_size"), "shared_gate": True,
                  "router": {"normalize": True}}, []


def read_text(c: Keys) -> dict:
    return read_hybrid(c, _dense, "split", _MTP, _MROPE)


def read_moe_text(c: Keys) -> dict:
    return read_hybrid(c, _moe, "split", _MTP, _MROPE)


def _write(dropped: tuple[str, ...]):
    def write(s: ModelSpec) -> dict:
        """Qwen3-Next's keys less those the class drops; what it cannot build (a MoE in the
        dense class, an unnormalised router) reads back different and is named then."""
        out = write_hybrid(s, _MTP)
        return {k: v for k, v in out.items() if k not in dropped}
    return write


def _claims(moe: bool):
    def claims(s: ModelSpec) -> bool:
        return (s.mixer is not None and s.mixer.kind == "gated_deltanet"
                and s.mixer.projections == "split"
                and any(layer.is_moe for layer in s.plan) == moe)
    return claims


_LINEAR = "model.layers.{i}.linear_attn"
_SPLIT = rules(*[(f"{_LINEAR}.{name}.weight", f"layers.{{i}}.mixer.{name}.weight")
                 for name in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a")])
_FUSED = ("in_proj_qkvz.weight", "in_proj_ba.weight")
# the DeltaNet's names but the fused projections (Qwen3-Next's), and the split ones instead
_DELTANET = rules(*[row for row in QWEN3_NEXT_ROWS
                    if "linear_attn" in row[0] and not row[0].endswith(_FUSED)]) + _SPLIT
TEXT_WEIGHTS = QWEN3.weights + _DELTANET
MOE_TEXT_WEIGHTS = tuple(r for r in QWEN3_NEXT.weights if not r.hf.endswith(_FUSED)) + _SPLIT
_KEYS = QWEN3_NEXT.key_table(mtp_layers=_MTP)
_FIELDS = QWEN3_NEXT.field_table(**{_MTP: "mtp_layers"})

QWEN3_5_TEXT = QWEN3_NEXT.but(
    "qwen3_5_text", "Qwen3_5ForCausalLM", read=read_text, write=_write(_NOT_DENSE),
    exports=_claims(moe=False), ffns=("swiglu",), weights=TEXT_WEIGHTS, spec_keys=_KEYS,
    key_fields=_FIELDS,
    names=("qwen",), doc="Qwen3-Next with split DeltaNet projections and a dense MLP")
QWEN3_5_MOE_TEXT = QWEN3_NEXT.but(
    "qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", read=read_moe_text, write=_write(_NOT_MOE),
    exports=_claims(moe=True), ffns=("moe",), weights=MOE_TEXT_WEIGHTS,
    per_expert=QWEN3_NEXT.per_expert, spec_keys=_KEYS, key_fields=_FIELDS, names=("qwen",),
    doc="Qwen3-Next with split DeltaNet projections, MoE on every layer, always renormalised")
_VISION = ("model.visual.",)


def _wrapped_experts(per_expert):
    """Per-expert names (and the fused ones they merge into) under model.language_model."""
    def wrap(name: str) -> str:
        return name.replace("model.", "model.language_model.", 1)
    return tuple((wrap(each), wrap(fused), *rest) for each, fused, *rest in per_expert)


QWEN3_5 = QWEN3_5_TEXT.but(
    "qwen3_5", "Qwen3_5ForConditionalGeneration", read=_wrapped(read_text, "qwen3_5_text"),
    weights=_text_weights(TEXT_WEIGHTS), skipped_prefixes=_VISION,
    spec_keys=frozen({k: f"text_config.{v}" for k, v in _KEYS.items()}), names=("qwen",),
    doc="Qwen3.5's dense text model (qwen3_5_text) in its multimodal wrapper")
QWEN3_5_MOE = QWEN3_5_MOE_TEXT.but(
    "qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration",
    read=_wrapped(read_moe_text, "qwen3_5_moe_text"), weights=_text_weights(MOE_TEXT_WEIGHTS),
    per_expert=_wrapped_experts(QWEN3_NEXT.per_expert), skipped_prefixes=_VISION,
    spec_keys=frozen({k: f"text_config.{v}" for k, v in _KEYS.items()}), names=("qwen",),
    doc="Qwen3.5's MoE text model (qwen3_5_moe_text) in its multimodal wrapper")
FAMILIES = (QWEN3_5_TEXT, QWEN3_5_MOE_TEXT, QWEN3_5, QWEN3_5_MOE)
