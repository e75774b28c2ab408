"""BitNet b1.58 (transformers' `bitnet`, BitNetForCausalLM): Llama with two more RMSNorms, one
over the attention output before o_proj (attn_sub_norm, hidden_size wide: attention.sub_norm)
and one over act(gate) * up before down_proj (ffn_sub_norm, intermediate_size wide:
ffn.sub_norm), Gemma's gated MLP with hidden_act (relu2: a squared ReLU gate), no MLP bias,
q/k/v/o biases with attention_bias, head_dim hidden_size / num_attention_heads.

Its weights are ternary in the published checkpoint, which the class does not know: BitNetFor
CausalLM's linears are plain nn.Linear and its forward quantizes nothing (from_config builds
that). Only a checkpoint loaded with quantization_config (quant_method bitnet) swaps them for
transformers' BitLinear / AutoBitLinear, which round activations to int8 per token and hold
ternary weights times one scale per tensor. That is a weight format here (`ternary`,
estimate/storage.py: 2 bits per weight + a bf16 scale per tensor, as the checkpoint packs
them), the spec's weight_format when the config.json's quantization_config says bitnet; the
network read and built is the class's, in full precision, and a packed checkpoint
(uint8 weights, weight_scale tensors) is refused when loaded.
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _ACT, _base, _heads
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.components import GATED_KINDS
from archscope.spec.schema import ModelSpec

# the activations BitNetMLP (Gemma's gated MLP) may square or not: relu2 is BitNet's own
_BITNET_ACT = {**_ACT, "relu2": "relu2"}
_HF_ACT = {**HF_ACT, "relu2": "relu2"}


def read(c: Keys) -> dict:
    base = _base(c)
    width = base["d_model"]
    heads, kv, head_dim = _heads(c, width)
    if heads * head_dim != width:
        raise c.error("head_dim" if "head_dim" in c.raw else "num_attention_heads",
                      f"the attention output ({heads} x {head_dim}) must be hidden_size "
                      f"({width}) wide: BitNet's attn_sub_norm normalises hidden_size values")
    act = _BITNET_ACT[c.text("hidden_act", _BITNET_ACT, noun="activation")]
    quantization = c.raw.get("quantization_config")
    packed = isinstance(quantization, dict) and quantization.get("quant_method") == "bitnet"
    return {**base, **({"weight_format": "ternary"} if packed else {}),
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": head_dim, "bias": c.flag("attention_bias"),
                          "sub_norm": True},
            "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": act,
                    "sub_norm": True}}


def write(s: ModelSpec) -> dict:
    """BitNetConfig's keys for `s`; what its class cannot build (a layer without both sub-norms,
    attention not hidden_size wide) is named here, anything else by the exporter's read-back."""
    for layer in s.plan:
        if not (layer.attention.sub_norm and layer.ffn.kind in GATED_KINDS
                and layer.ffn.sub_norm):
            raise SpecError(f"transformers' BitNet has both sub-norms and a gated MLP in every "
                            f"layer; layer {layer.index} does not", key="layers"
                            if layer.attention is not s.attention or layer.ffn is not s.ffn
                            else "attention.sub_norm" if not layer.attention.sub_norm
                            else "ffn.sub_norm")
    a, f = s.attention, s.ffn
    if a.n_heads * a.head_dim != s.d_model:
        raise SpecError(f"transformers' BitNet sizes attn_sub_norm as hidden_size ({s.d_model}); "
                        f"the attention output is {a.n_heads} x {a.head_dim}",
                        key="attention.head_dim")
    return {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "attention_bias": a.bias, "intermediate_size": f.d_ff,
            # GemmaMLP's gate: a geglu reads back as its swiglu with gelu_tanh (one network)
            "hidden_act": "gelu_pytorch_tanh" if f.kind == "geglu" else _HF_ACT[f.activation],
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


def _sub_norms(s: ModelSpec) -> bool:
    return any(layer.attention is not None and layer.attention.sub_norm
               or layer.ffn is not None and layer.ffn.sub_norm for layer in s.plan)


BITNET = LLAMA.but(
    "bitnet", "BitNetForCausalLM", read=read, write=write, exports=_sub_norms,
    ffns=GATED_KINDS,
    weights=LLAMA.weights + rules(
        ("model.layers.{i}.self_attn.attn_sub_norm.weight",
         "layers.{i}.self_attn.attn_sub_norm.weight"),
        ("model.layers.{i}.mlp.ffn_sub_norm.weight", "layers.{i}.mlp.ffn_sub_norm.weight")),
    spec_keys=LLAMA.key_table(**{"attention.out_bias": "attention_bias"}),
    names=("bitnet",), doc="Llama + RMSNorms before o_proj and down_proj, a relu2 gated MLP")
FAMILIES = (BITNET,)
