"""Zamba (transformers' models/zamba, ZambaForCausalLM) config.json <-> spec, both ways: Zamba 2's
difference (spec/families/zamba2.py).

Every layer is a Mamba-1 layer (input_layernorm, mixer, residual; no MLP): ZambaMambaMixer, a
Mamba-1 selective scan split into n_mamba_heads heads of mamba_expand * hidden_size /
n_mamba_heads channels, each with its own x_proj and dt_proj (spec/mamba1.py's n_heads),
dt_rank mamba_dt_rank ('auto': ceil(hidden_size / 16)), conv bias mamba_conv_bias, in/out
projection biases mamba_proj_bias, the conv activation hidden_mamba_act (silu only). Its in_proj
alternates x and z rows (weight layout interleaved_rows). The "hybrid" layers of
layers_block_type first run ONE shared transformer block (spec/shared_blocks.py, copies 1, no
adapters: transformers ties every hybrid layer's shared_transf to the first): attention over
concat(hidden, embeddings) (attention_hidden_size, which must be 2 * hidden_size) with head_dim
attention_head_dim (default 2 * hidden_size // num_attention_heads), softmax scale
(head_dim / 2) ** -0.5, no positional encoding, then the gated MLP (gate_proj and up_proj
apart, hidden_act on the gate, no bias), and a per-use linear into the layer's Mamba input.
The dt init keys (time_step_min/max/floor) only seed weights; use_mamba_kernels and
use_associative_scan choose kernels, not the network.
"""

from __future__ import annotations

import math

from archscope.errors import SpecError
from archscope.spec.families.base import frozen, rules
from archscope.spec.families.mamba import auto_rank, silu_conv
from archscope.spec.families.zamba2 import HYBRID, MAMBA, ZAMBA2, hybrid_layers
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _act
from archscope.spec.hf_writers_base import HF_ACT
from archscope.spec.schema import ModelSpec


def _default_types(c: Keys, n: int) -> list[str]:
    """ZambaConfig.__post_init__'s layers where the file lists none."""
    period, offset = c.size("attn_layer_period"), c.size("attn_layer_offset", least=0)
    return [MAMBA[1]] * 2 + [HYBRID] + [HYBRID if i % period == offset else MAMBA[1]
                                        for i in range(n - 3)]


def _mixer(c: Keys, d: int) -> dict:
    silu_conv(c, "hidden_mamba_act")
    heads, inner = c.size("n_mamba_heads"), c.size("mamba_expand") * d
    if inner % heads:
        raise c.error("n_mamba_heads", f"must divide mamba_expand * hidden_size ({inner}), "
                                       f"{what(heads)}")
    return {"kind": "mamba1", "d_inner": inner, "n_heads": heads,
            "dt_rank": auto_rank(c, "mamba_dt_rank", d), "d_state": c.size("mamba_d_state"),
            "conv_kernel": c.size("mamba_d_conv"), "conv_bias": c.flag("mamba_conv_bias"),
            "proj_bias": c.flag("mamba_proj_bias")}


def read(c: Keys) -> dict:
    d, n = c.size("hidden_size"), c.size("num_hidden_layers")
    width = c.size("attention_hidden_size", null=True) or 2 * d
    if width != 2 * d:
        raise c.error("attention_hidden_size", f"the shared block's attention reads concat("
                                               f"hidden, embeddings), 2 * hidden_size ({2 * d}) "
                                               f"wide, which archscope builds; {what(width)}")
    heads = c.size("num_attention_heads")
    kv = c.size("num_key_value_heads", null=True) or heads
    if heads % kv:
        raise c.error("num_key_value_heads", f"must divide num_attention_heads ({heads}), "
                                             f"{what(kv)}")
    head_dim = c.size("attention_head_dim", null=True) or 2 * d // heads
    if not head_dim:
        raise c.error("num_attention_heads", f"2 * hidden_size ({2 * d}) // heads is 0")
    hybrid = hybrid_layers(c, n, "ZambaModel", default=lambda: _default_types(c, n))
    out = {"vocab_size": c.size("vocab_size"), "d_model": d, "n_layers": n,
           "max_seq_len": c.size("max_position_embeddings"),
           "tie_embeddings": c.flag("tie_word_embeddings"),
           "norm": {"kind": "rmsnorm", "eps": c.number("rms_norm_eps"), "position": "pre"},
           "position": {"kind": "none"}, "mixer": _mixer(c, d),
           # (position.kind none: the rope flag rotates nothing, as in Zamba 2 without RoPE)
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                         "head_dim": head_dim, "rope": True},
           "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"),
                   "activation": _act(c), "fused_gate_up": True},
           "multipliers": {"attention": (head_dim / 2) ** -0.5},
           "layers": [{"select": f"0:{n}", "ffn": "none"}]}
    if hybrid:
        out["shared"] = {"at": hybrid, "copies": 1}
    return out


def write(s: ModelSpec) -> dict:
    """ZambaConfig's keys for `s` (a spec its class builds: `exports`)."""
    a, f, m, sh = s.attention, s.ffn, s.mixer, s.shared
    if m.d_inner % s.d_model:
        raise SpecError("Zamba's mixer width is mamba_expand * d_model", key="mixer.d_inner")
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
            "max_position_embeddings": s.max_seq_len, "tie_word_embeddings": s.tie_embeddings,
            "rms_norm_eps": s.norm.eps, "attention_hidden_size": 2 * s.d_model,
            "layers_block_type": [HYBRID if i in sh.at else MAMBA[0] for i in range(s.n_layers)],
            "num_attention_heads": a.n_heads, "num_key_value_heads": a.n_kv_heads,
            "attention_head_dim": a.head_dim,
            "intermediate_size": f.d_ff, "hidden_act": HF_ACT[f.activation],
            "hidden_mamba_act": "silu", "n_mamba_heads": m.n_heads,
            "mamba_expand": m.d_inner // s.d_model, "mamba_dt_rank": m.dt_rank,
            "mamba_d_state": m.d_state, "mamba_d_conv": m.conv_kernel,
            "mamba_conv_bias": m.conv_bias, "mamba_proj_bias": m.proj_bias,
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


def _exports(s: ModelSpec) -> bool:
    m, sh, a = s.mixer, s.shared, s.attention
    return (sh is not None and sh.copies == 1 and not (sh.ffn_adapter or sh.attention_adapter)
            and m is not None and m.kind == "mamba1" and m.dt_bc_norm == "none"
            and s.position.kind == "none" and not s.ffn.bias
            and math.isclose(s.mults.attention or 0, (a.head_dim / 2) ** -0.5)
            and all(layer.ffn is None and layer.state is not None for layer in s.plan))


_L, _B, _O = "model.layers.{i}", "model.layers.{i}.shared_transf", "layers.{i}.shared_transformer"
_HEADS, _VECTOR, _ROWS = {"layout": "head_axis"}, {"layout": "head_axis_vector"}, {
    "layout": "interleaved_rows"}


# ZambaMambaMixer's tensors (transformers' name, ours, how they are laid out)
_MAMBA = (("in_proj.{p}", "in_proj.{p}", _ROWS), ("conv1d.{p}", "conv1d.{p}"),
          ("x_proj_weight", "x_proj.weight", _HEADS), ("dt_proj_weight", "dt_proj.weight", _HEADS),
          ("dt_proj_bias", "dt_proj.bias", _VECTOR), ("A_log", "A_log", _HEADS),
          ("D", "D", _VECTOR), ("out_proj.{p}", "out_proj.{p}"))


WEIGHTS = rules(
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    (f"{_L}.input_layernorm.weight", "layers.{i}.input_layernorm.weight"),
    *[(f"{_L}.mamba.{h}", f"layers.{{i}}.mixer.{o}", *kw) for h, o, *kw in _MAMBA],
    (f"{_L}.mamba_decoder.input_layernorm.weight",
     "layers.{i}.mamba_decoder.input_layernorm.weight"),
    *[(f"{_L}.mamba_decoder.mamba.{h}", f"layers.{{i}}.mamba_decoder.mamba.{o}", *kw)
      for h, o, *kw in _MAMBA],
    (f"{_L}.linear.weight", "layers.{i}.linear.weight"),
    *[(f"{_B}.self_attn.{x}_proj.weight", f"{_O}.self_attn.{x}_proj.weight") for x in "qkvo"],
    *[(f"{_B}.feed_forward.{x}_proj.weight", f"{_O}.feed_forward.gate_up_proj.weight",
       {"part": (j, 2)}) for j, x in enumerate(("gate", "up"))],
    (f"{_B}.feed_forward.down_proj.weight", f"{_O}.feed_forward.down_proj.weight"),
    *[(f"{_B}.{x}.weight", f"{_O}.{x}.weight") for x in ("input_layernorm", "pre_ff_layernorm")],
    ("model.final_layernorm.weight", "norm.weight"),
    ("lm_head.weight", "lm_head.weight"))

ZAMBA = ZAMBA2.but(
    "zamba", "ZambaForCausalLM", read=read, write=write, exports=_exports,
    mixers=("mamba1",), weights=WEIGHTS,
    spec_keys=frozen({
        "vocab_size": "vocab_size", "d_model": "hidden_size", "n_layers": "num_hidden_layers",
        "max_seq_len": "max_position_embeddings", "tie_embeddings": "tie_word_embeddings",
        "norm.eps": "rms_norm_eps", "attention.n_heads": "num_attention_heads",
        "attention.n_kv_heads": "num_key_value_heads", "attention.head_dim": "attention_head_dim",
        "ffn.d_ff": "intermediate_size", "ffn.activation": "hidden_act",
        "shared.at": "layers_block_type", "mixer.n_heads": "n_mamba_heads",
        "mixer.d_inner": "mamba_expand", "mixer.dt_rank": "mamba_dt_rank",
        "mixer.d_state": "mamba_d_state", "mixer.conv_kernel": "mamba_d_conv",
        "mixer.conv_bias": "mamba_conv_bias", "mixer.proj_bias": "mamba_proj_bias"}),
    key_fields=frozen({"n_mamba_heads": "n_heads", "mamba_d_state": "d_state",
                       "mamba_dt_rank": "dt_rank", "mamba_d_conv": "conv_kernel",
                       "intermediate_size": "d_ff", "mamba_expand": "d_inner",
                       "attention_head_dim": "head_dim"}),
    doc="Mamba-1 layers (multi-head: per-head x_proj, dt_proj) + one shared transformer block "
        "(attention + MLP over concat(hidden, embeddings)) reused at the hybrid layers")
FAMILIES = (ZAMBA,)
