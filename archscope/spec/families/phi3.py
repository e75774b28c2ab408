"""Phi-3 / Phi-4 (transformers' `phi3`): Llama with q/k/v in one self_attn.qkv_proj and gate/up
in one mlp.gate_up_proj (archscope builds the fused Linears under the same names), no bias,
and Mistral's window. RoPE is Phi3Config's own: unscaled or LongRoPE (which it also reads `su`
and `yarn` as), over the first partial_rotary_factor of each head (Phi-4-mini: 0.75)."""

from __future__ import annotations

import copy

from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.mistral import write as write_mistral
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import PARTIAL, _patch
from archscope.spec.schema import ModelSpec

_LONGROPE = ("longrope", "su", "yarn")  # Phi3Config reads the older names as longrope
_KEYS = ("rope_type", "type", "rope_theta", PARTIAL, "short_factor", "long_factor",
         "original_max_position_embeddings", "factor", "attention_factor")
_ORIGINAL = "original_max_position_embeddings"


def _section(c: Keys) -> str:
    """Phi3Config's RoPE dict: rope_scaling when the file sets one, replacing rope_parameters
    (its convert_rope_params_to_dict), else rope_parameters."""
    return "rope_scaling" if c.mapping("rope_scaling") else "rope_parameters"


def _factors(c: Keys, section: str, name: str) -> list[float]:
    value, key = c.mapping(section).get(name), f"{section}.{name}"
    if not isinstance(value, list):
        raise c.error(key, "required for longrope: a list of numbers, one per rotated pair, "
                           f"{what(value)}")
    return [float(c.number(f"{key}[{i}]", value=v)) for i, v in enumerate(value)]


def _position(c: Keys) -> tuple[dict, float]:
    """(the spec's position, the rotated fraction of each head), as Phi3Config and
    transformers' _compute_longrope_parameters read a config.json: the original context is the
    top-level original_max_position_embeddings (which Phi3Config copies over the dict's; not for
    su), the factor the dict's or else max_position_embeddings / that, the attention factor the
    dict's or else derived from the factor."""
    section = _section(c)
    params = c.mapping(section)
    type_key = "rope_type" if "rope_type" in params else "type"
    kind = params.get(type_key, "default")
    if kind != "default" and kind not in _LONGROPE:
        raise c.error(f"{section}.{type_key}", f"transformers' Phi3 reads RoPE types default "
                                               f"and longrope (or su, yarn) only, {what(kind)}")
    theta = c.number(f"{section}.rope_theta", value=params["rope_theta"]) \
        if "rope_theta" in params else c.number("rope_theta")
    fraction = c.number(f"{section}.{PARTIAL}", value=params[PARTIAL]) \
        if params.get(PARTIAL) is not None else c.number(PARTIAL, fallback=1.0)
    position = {"kind": "rope", "theta": theta}
    if kind == "default":
        return position, fraction
    for key in params:
        if key not in _KEYS:
            raise c.error(f"{section}.{key}", f"archscope does not read this longrope key; it "
                                              f"reads {', '.join(_KEYS)}")
    if kind == "su":  # renamed only after Phi3Config copies the top-level context over the
        # dict's (for yarn and longrope): an su dict keeps its own, and has to have one
        if params.get(_ORIGINAL) is None:
            raise c.error(f"{section}.{_ORIGINAL}", "required with type su: transformers' Phi3 "
                                                    "reads su's original context from the dict")
        original = c.size(f"{section}.{_ORIGINAL}", value=params[_ORIGINAL])
    else:
        original = c.size(_ORIGINAL)
    factor = params.get("factor")
    factor = c.number(f"{section}.factor", value=factor) if factor is not None \
        else c.size("max_position_embeddings") / original
    scaling = {"kind": "longrope", "factor": factor, "original_max_seq_len": original,
               "short_factor": _factors(c, section, "short_factor"),
               "long_factor": _factors(c, section, "long_factor")}
    if params.get("attention_factor") is not None:
        scaling["attention_factor"] = c.number(f"{section}.attention_factor",
                                               value=params["attention_factor"])
    return {**position, "scaling": scaling}, fraction


def read(c: Keys) -> dict:
    position, fraction = _position(c)
    llama = copy.copy(c)  # Llama's reader for the rest; the RoPE dicts are read above
    llama.raw = {**c.raw, "rope_scaling": None, "rope_parameters": {"rope_theta": 1.0}}
    window = c.size("sliding_window", null=True)
    if window is not None and window > c.size("max_position_embeddings"):
        # a window past the context masks no key of any sequence Phi3 runs (keys from position
        # i - W + 1 on): no window, the same network (Phi-4-mini says 262144 at 131072)
        window = None
    out = _patch(read_llama(llama, bias=()),
                 attention={"fused_qkv": True, "window": window,
                            **({"rotary_fraction": fraction} if fraction != 1 else {})},
                 ffn={"fused_gate_up": True})
    if "scaling" in position and out["attention"]["head_dim"] != out["d_model"] // \
            out["attention"]["n_heads"]:
        raise c.error("head_dim", "transformers' Phi3 checks longrope's factors against "
                                  "hidden_size // num_attention_heads but rotates head_dim: "
                                  "archscope reads longrope only where the two agree")
    return {**out, "position": position}


def write(s: ModelSpec) -> dict:  # Mistral's keys; the fusions are implied by the class
    # A spec has no token ids, and Phi3Config's defaults (pad 32000, Phi-3's vocabulary) are
    # out of range below 32,001 tokens, where nn.Embedding refuses the padding row: say none.
    out = {**write_mistral(s), "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    out["rope_parameters"][PARTIAL] = s.attention.rotary_fraction or 1.0
    scaling = s.position.scaling
    if scaling is not None:  # Phi3Config takes the original context from the top level
        out[_ORIGINAL] = scaling.original_max_seq_len
    return out


def _phi3_only(s: ModelSpec) -> bool:
    """Only Phi-3's class fuses q/k/v and gate/up (a spec with one fusion: the read-back names
    it), or reads longrope."""
    scaling = s.position.scaling
    return (scaling is not None and scaling.kind == "longrope") or any(
        layer.attention.fused_qkv or layer.ffn.fused_gate_up for layer in s.plan)


_UNFUSED = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
PHI3 = LLAMA.but(
    "phi3", "Phi3ForCausalLM", read=read, write=write, exports=_phi3_only,
    weights=tuple(r for r in LLAMA.weights if not any(f".{p}." in r.hf for p in _UNFUSED))
    + rules(*[(f"model.layers.{{i}}.{name}.{{p}}", f"layers.{{i}}.{name}.{{p}}")
              for name in ("self_attn.qkv_proj", "mlp.gate_up_proj")]),
    spec_keys=LLAMA.key_table(**{"position.scaling.original_max_seq_len": _ORIGINAL,
                                 "attention.rotary_fraction": PARTIAL}),
    names=("phi",), doc="Llama, fused qkv_proj and gate_up_proj")
FAMILIES = (PHI3,)
