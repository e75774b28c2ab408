"""Zamba 2 (transformers' models/zamba2, Zamba2ForCausalLM) config.json <-> spec, both ways.

Every layer is a Mamba-2 layer (input_layernorm, mixer, residual; no MLP): BambaMixer's scan
with n_mamba_heads heads of mamba_expand * hidden_size / n_mamba_heads channels, mamba_ngroups
groups, its conv always with a bias (the class ignores use_conv_bias), in_proj and out_proj
biases add_bias_linear, dt clamped below at time_step_min, its gated norm's eps fixed at 1e-5
(so rms_norm_eps must be 1e-5 here: archscope's gated norm takes the model's). The "hybrid"
layers of layers_block_type first run a shared transformer block (spec/shared_blocks.py: the
spec's attention and ffn), num_mem_blocks of them in turn: attention over concat(hidden,
embeddings) with head_dim 2 * hidden_size // num_attention_heads and the softmax scale
(head_dim / 2) ** -0.5 (multipliers.attention), RoPE only with use_mem_rope, then the gated
MLP (gate_up_proj fused, hidden_act on the gate) with its per-use adapter of adapter_rank
(always there in transformers 5: Zamba2MLP builds it whatever the config), q/k/v adapters with
use_shared_attention_adapter, and a per-use linear into the layer's Mamba input.
"""

from __future__ import annotations

import dataclasses
import math

from archscope.errors import SpecError
from archscope.spec.families.base import Family, frozen, renamed, rules
from archscope.spec.families.granitemoehybrid import MAMBA_WEIGHTS
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _act, _base
from archscope.spec.hf_writers_base import HF_ACT, rope_parameters
from archscope.spec.schema import ModelSpec

MAMBA, HYBRID = ("mamba", "linear_attention"), "hybrid"
_GATED_NORM_EPS = 1e-5  # Zamba2MambaMixer's Zamba2RMSNormGated(..., eps=1e-5)


def hybrid_layers(c: Keys, n: int, model: str = "Zamba2Model", default=None) -> list[int]:
    """The indices of the layers_block_type entries that run the shared block, the list
    checked; `default()` gives the list where the file has none (Zamba's pattern)."""
    types = c.get("layers_block_type")
    if types is None and default is not None:
        types = default()
    if not isinstance(types, list) or len(types) != n:
        raise c.error("layers_block_type", f"expected a list of {n} entries (num_hidden_layers: "
                                           f"{model} builds one layer per entry), "
                                           f"{what(types)}")
    for i, t in enumerate(types):
        if t not in MAMBA + (HYBRID,):
            raise c.error(f"layers_block_type[{i}]", f"expected one of "
                                                     f"{', '.join(MAMBA + (HYBRID,))}, {what(t)}")
    return [i for i, t in enumerate(types) if t == HYBRID]


def _mixer(c: Keys, d: int) -> dict:
    heads, inner = c.size("n_mamba_heads"), c.size("mamba_expand") * d
    if inner % heads:
        raise c.error("n_mamba_heads", f"must divide mamba_expand * hidden_size ({inner}), "
                                       f"{what(heads)}")
    groups = c.size("mamba_ngroups")
    if heads % groups:
        raise c.error("mamba_ngroups", f"must divide n_mamba_heads ({heads}), {what(groups)}")
    c.flag("use_conv_bias")  # read by no module: the conv always has a bias
    return {"kind": "mamba2", "n_heads": heads, "head_dim": inner // heads,
            "d_state": c.size("mamba_d_state"), "n_groups": groups,
            "conv_kernel": c.size("mamba_d_conv"), "chunk_size": c.size("chunk_size"),
            "conv_bias": True, "proj_bias": c.flag("add_bias_linear"),
            "dt_limit_min": c.number("time_step_min", positive=False), "dt_limit_max": None}


def read(c: Keys) -> dict:
    if c.flag("use_long_context"):
        raise c.error("use_long_context", "Zamba 2's long-context RoPE rescaling, which "
                                          "archscope does not read")
    base = _base(c)
    if not c.flag("use_mem_rope"):
        base["position"] = {"kind": "none"}
    d, n = base["d_model"], base["n_layers"]
    if base["norm"]["eps"] != _GATED_NORM_EPS:
        raise c.error("rms_norm_eps", f"Zamba 2's Mamba gated norm keeps eps 1e-5 whatever "
                                      f"the config says, and archscope's takes rms_norm_eps: "
                                      f"only 1e-5 is built alike, {what(base['norm']['eps'])}")
    heads = c.size("num_attention_heads")
    kv = c.size("num_key_value_heads", null=True) or heads
    if heads % kv:
        raise c.error("num_key_value_heads", f"must divide num_attention_heads ({heads}), "
                                             f"{what(kv)}")
    head_dim = 2 * d // heads
    if not head_dim:
        raise c.error("num_attention_heads", f"2 * hidden_size ({2 * d}) // heads is 0")
    attention_adapter = c.flag("use_shared_attention_adapter")
    if attention_adapter and (heads * head_dim != 2 * d or kv != heads):
        raise c.error("use_shared_attention_adapter", "its q, k and v adapters are 2 * "
                                                      "hidden_size wide, so transformers builds "
                                                      "them only when num_attention_heads "
                                                      "divides it and num_key_value_heads "
                                                      "equals num_attention_heads")
    d_ff = c.size("intermediate_size", null=True) or 4 * d
    hybrid = hybrid_layers(c, n)
    out = {**base, "mixer": _mixer(c, d),
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                         "head_dim": head_dim, "rope": True},
           "ffn": {"kind": "swiglu", "d_ff": d_ff, "activation": _act(c),
                   "bias": c.flag("add_bias_linear"), "fused_gate_up": True},
           "multipliers": {"attention": (head_dim / 2) ** -0.5},
           "layers": [{"select": f"0:{n}", "ffn": "none"}]}
    if hybrid:
        out["shared"] = {"at": hybrid, "copies": min(c.size("num_mem_blocks"), len(hybrid)),
                         "adapter_rank": c.size("adapter_rank"), "ffn_adapter": True,
                         "attention_adapter": attention_adapter}
    if out["position"]["kind"] == "none":
        out["attention"]["rope"] = True  # (no RoPE table: position.kind none rotates nothing)
    return out


def write(s: ModelSpec) -> dict:
    """Zamba2Config's keys for `s` (a spec whose shared blocks it builds: `exports`)."""
    a, f, m, sh = s.attention, s.ffn, s.mixer, s.shared
    if not sh.ffn_adapter:
        raise SpecError("transformers' Zamba 2 gives every use of a shared block an FFN "
                        "adapter", key="shared.ffn_adapter")
    if a.head_dim != 2 * s.d_model // a.n_heads:
        raise SpecError("Zamba 2's head_dim is 2 * d_model // n_heads", key="attention.head_dim")
    rope = s.position.kind == "rope"
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
            "max_position_embeddings": s.max_seq_len, "tie_word_embeddings": s.tie_embeddings,
            "rms_norm_eps": s.norm.eps, "use_mem_rope": rope,
            **({"rope_parameters": rope_parameters(s.position)} if rope else {}),
            "layers_block_type": [HYBRID if i in sh.at else MAMBA[0] for i in range(s.n_layers)],
            "num_attention_heads": a.n_heads, "num_key_value_heads": a.n_kv_heads,
            "intermediate_size": f.d_ff, "hidden_act": HF_ACT[f.activation],
            "add_bias_linear": f.bias, "num_mem_blocks": sh.copies,
            "adapter_rank": sh.adapter_rank or 1,
            "use_shared_attention_adapter": sh.attention_adapter,
            "n_mamba_heads": m.n_heads, "mamba_expand": m.d_inner // s.d_model,
            "mamba_d_state": m.d_state, "mamba_ngroups": m.n_groups,
            "mamba_d_conv": m.conv_kernel, "chunk_size": m.chunk_size,
            "time_step_min": m.dt_limit_min,
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


def _exports(s: ModelSpec) -> bool:
    m = s.mixer
    return (s.shared is not None and m is not None and m.kind == "mamba2" and m.conv_bias
            and m.dt_limit_max is None and m.d_inner % s.d_model == 0
            and m.proj_bias == s.ffn.bias and s.norm.eps == _GATED_NORM_EPS
            and math.isclose(s.mults.attention or 0, (s.attention.head_dim / 2) ** -0.5)
            and all(layer.ffn is None and layer.state is not None for layer in s.plan))


_L, _B = "model.layers.{i}", "model.layers.{i}.shared_transformer"
_O = "layers.{i}.shared_transformer"
_MAMBA = rules(*MAMBA_WEIGHTS)
WEIGHTS = _MAMBA + tuple(dataclasses.replace(r, ours=tuple(
    o.replace(".mixer.", ".mamba_decoder.mamba.") for o in r.ours))
    for r in renamed(_MAMBA, ".mamba.", ".mamba_decoder.mamba.")) + rules(
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    (f"{_L}.input_layernorm.weight", "layers.{i}.input_layernorm.weight"),
    (f"{_L}.mamba_decoder.input_layernorm.weight",
     "layers.{i}.mamba_decoder.input_layernorm.weight"),
    (f"{_L}.linear.weight", "layers.{i}.linear.weight"),
    *[(f"{_B}.self_attn.{x}_proj.weight", f"{_O}.self_attn.{x}_proj.weight") for x in "qkvo"],
    *[(f"{_B}.self_attn.linear_{x}_adapter_list.{{k}}.{j}.weight",
       f"{_O}.self_attn.linear_{x}_adapter_list.{{k}}.{j}.weight") for x in "qkv" for j in "01"],
    *[(f"{_B}.feed_forward.{x}.{{p}}", f"{_O}.feed_forward.{x}.{{p}}")
      for x in ("gate_up_proj", "down_proj")],
    *[(f"{_B}.feed_forward.gate_up_proj_adapter_list.{{k}}.{j}.weight",
       f"{_O}.feed_forward.gate_up_proj_adapter_list.{{k}}.{j}.weight") for j in "01"],
    *[(f"{_B}.{x}.weight", f"{_O}.{x}.weight") for x in ("input_layernorm", "pre_ff_layernorm")],
    ("model.final_layernorm.weight", "norm.weight"),
    ("lm_head.weight", "lm_head.weight"))

ZAMBA2 = Family(
    "zamba2", "Zamba2ForCausalLM", read=read, write=write, exports=_exports,
    attentions=("gqa",), ffns=("swiglu", "geglu"), mixers=("mamba2",), weights=WEIGHTS,
    spec_keys=frozen({
        "vocab_size": "vocab_size", "d_model": "hidden_size", "n_layers": "num_hidden_layers",
        "max_seq_len": "max_position_embeddings", "tie_embeddings": "tie_word_embeddings",
        "norm.eps": "rms_norm_eps", "attention.n_heads": "num_attention_heads",
        "attention.n_kv_heads": "num_key_value_heads", "ffn.d_ff": "intermediate_size",
        "shared.at": "layers_block_type", "shared.copies": "num_mem_blocks",
        "shared.adapter_rank": "adapter_rank",
        "shared.attention_adapter": "use_shared_attention_adapter",
        "mixer.n_heads": "n_mamba_heads", "mixer.d_state": "mamba_d_state",
        "mixer.n_groups": "mamba_ngroups", "mixer.conv_kernel": "mamba_d_conv",
        "mixer.chunk_size": "chunk_size"}),
    key_fields=frozen({"n_mamba_heads": "n_heads", "mamba_d_state": "d_state",
                       "mamba_ngroups": "n_groups", "mamba_d_conv": "conv_kernel",
                       "chunk_size": "chunk_size", "intermediate_size": "d_ff",
                       "mamba_expand": "n_heads", "adapter_rank": "d_ff",
                       "num_mem_blocks": "n_layers"}),
    doc="Mamba-2 layers + shared transformer blocks (attention + MLP over concat(hidden, "
        "embeddings)) reused at the hybrid layers with per-use adapters")
FAMILIES = (ZAMBA2,)
