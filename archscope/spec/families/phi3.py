"""Phi-3 / Phi-4 (transformers' `phi3`): Llama with q/k/v in one self_attn.qkv_proj and gate/up
in one mlp.gate_up_proj (archscope builds the fused Linears under the same names), no bias,
and Mistral's window. What Phi3 does with RoPE that archscope does not (longrope, partial
rotation) is refused naming the key."""

from __future__ import annotations

from archscope.errors import quote
from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.mistral import write as write_mistral
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _patch
from archscope.spec.schema import ModelSpec


def _rope(c: Keys) -> None:
    """Refuse what transformers' Phi3 does with RoPE that archscope does not: `longrope`, the
    per-frequency short/long factors that Phi3Config also reads `su` and `yarn` as (so a Phi-3
    `yarn` is not YaRN), and partial rotation (Phi-4-mini's partial_rotary_factor 0.75)."""
    for section in ("rope_scaling", "rope_parameters"):
        params = c.mapping(section)
        kind = params.get("rope_type", params.get("type", "default"))
        if kind != "default":
            at = f"{section}.{'rope_type' if 'rope_type' in params else 'type'}"
            raise c.error(at, f"transformers' Phi3 reads RoPE type {quote(kind)} as longrope "
                              "(short/long factors per frequency), which archscope does not "
                              "implement; it reads Phi-3 configs with unscaled RoPE only "
                              "(rope_scaling null, as in Phi-4)")
        if "partial_rotary_factor" in params:
            _whole_rotation(c, f"{section}.partial_rotary_factor", params["partial_rotary_factor"])
    _whole_rotation(c, "partial_rotary_factor", c.get("partial_rotary_factor", 1.0))


def _whole_rotation(c: Keys, key: str, value) -> None:
    if c.number(key, value=value) != 1:
        raise c.error(key, f"archscope rotates whole heads (1.0) only, {what(value)}: partial "
                           "RoPE is not implemented for gqa attention")


def read(c: Keys) -> dict:
    _rope(c)
    return _patch(read_llama(c, bias=()),
                  attention={"fused_qkv": True, "window": c.size("sliding_window", null=True)},
                  ffn={"fused_gate_up": True})


def write(s: ModelSpec) -> dict:  # Mistral's keys; the fusions are implied by the class
    # A spec has no token ids, and Phi3Config's defaults (pad 32000, Phi-3's vocabulary) are
    # out of range below 32,001 tokens, where nn.Embedding refuses the padding row: say none.
    return {**write_mistral(s), "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


_UNFUSED = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
PHI3 = LLAMA.but(
    "phi3", "Phi3ForCausalLM", read=read, write=write,
    # only Phi-3's class fuses them (a spec with one fusion: the read-back names it)
    exports=lambda s: any(layer.attention.fused_qkv or layer.ffn.fused_gate_up
                          for layer in s.plan),
    weights=tuple(r for r in LLAMA.weights if not any(f".{p}." in r.hf for p in _UNFUSED))
    + rules(*[(f"model.layers.{{i}}.{name}.{{p}}", f"layers.{{i}}.{name}.{{p}}")
              for name in ("self_attn.qkv_proj", "mlp.gate_up_proj")]),
    names=("phi",), doc="Llama, fused qkv_proj and gate_up_proj")
FAMILIES = (PHI3,)
