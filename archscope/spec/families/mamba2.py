"""Mamba-2 as a whole model (transformers' `mamba2`, Mamba2ForCausalLM) config.json <-> spec.

Mamba2ForCausalLM = Nemotron-H with every layer an M layer: `x + mixer(norm(x))`, no attention,
no FFN, an RMSNorm `norm_f`, an lm_head tied to the embeddings when tie_word_embeddings says so
(its _tied_weights_keys). In a spec: `mixer` (mamba2) with one override, `ffn: none`, on every
layer. The mixer is transformers 5.24's Mamba2Mixer, the module spec/mamba2.py describes:

| config.json | spec |
|---|---|
| num_heads, head_dim, state_size, n_groups | mixer.n_heads, head_dim, d_state, n_groups |
| conv_kernel, chunk_size | mixer.conv_kernel, chunk_size |
| use_conv_bias, use_bias | mixer.conv_bias, proj_bias (in_proj and out_proj) |
| time_step_limit [lo, hi] | mixer.dt_limit_min, dt_limit_max (inf: null) |
| layer_norm_epsilon | norm.eps (the block norms, norm_f and the gated norm) |
| expand | checked: expand * hidden_size must equal num_heads * head_dim (the class's own check) |

What the class does that the spec has no key for, and why it is accepted or refused:
- the gated norm is always RMSNorm(y * silu(z)) over n_groups groups (norm_before_gate false,
  hard-coded in Mamba2Mixer), so mamba_ssm's `rms_norm` false or `norm_before_gate` true in a
  file (keys transformers reads nowhere) name a network transformers would not run: refused;
- hidden_act is the conv's activation: silu only (the spec has no key for another);
- residual_in_fp32 (default true) keeps the residual stream in fp32 under bf16/fp16 weights.
  An fp32 run is the same either way and no count changes; archscope's model keeps the residual
  in the weights' dtype, so a bf16 run differs from transformers' by that rounding. Read, not
  refused, and written back as true;
- no context length: Mamba2Config has no max_position_embeddings (a recurrent model runs at any
  length). A file that gives one sets max_seq_len; without it max_seq_len is archscope's
  largest context (limits.CONTEXT_MAX), and the writer then leaves the key out.
- time_step_rank, time_step_min/max/floor, rescale_prenorm_residual, initializer_range seed
  the initial weights only: not read.

A Mamba-2 model has no attention and no FFN, but a spec's `attention` and `ffn` are required:
they hold placeholders no layer builds or counts (one attention head of the mixer's head_dim; a
SwiGLU of the mixer's width), derived from the file so that a round trip gives them back.
"""

from __future__ import annotations

import math

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.granitemoehybrid import _time_step_limit
from archscope.spec.families.nemotron_h import NEMOTRON_H
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _select
from archscope.spec.limits import CONTEXT_MAX
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    c.text("hidden_act", ("silu",), noun="activation")  # the conv's: the spec has no key
    for key, default in (("rms_norm", True), ("norm_before_gate", False)):
        if c.raw.get(key, default) is not default:
            raise c.error(key, f"is {what(c.raw[key])}, but transformers' Mamba2Mixer always "
                               "normalises y * silu(z) with an RMSNorm (it reads no such key): "
                               "it would run another network than the one this file describes")
    c.flag("residual_in_fp32")  # a precision, not a structure: see the module doc
    d, heads, head_dim = c.size("hidden_size"), c.size("num_heads"), c.size("head_dim")
    expand = c.size("expand")
    if expand * d != heads * head_dim:
        raise c.error("expand", f"expand * hidden_size ({expand} * {d}) must equal num_heads * "
                                f"head_dim ({heads} * {head_dim}): transformers sizes the mixer "
                                "by the one and splits its heads by the other")
    lo, hi = _time_step_limit(c)
    n = c.size("num_hidden_layers")
    return {"vocab_size": c.size("vocab_size"), "d_model": d, "n_layers": n,
            "max_seq_len": c.size("max_position_embeddings", fallback=CONTEXT_MAX),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "rmsnorm", "eps": c.number("layer_norm_epsilon"), "position": "pre"},
            "position": {"kind": "none"},
            # placeholders (the module doc): no layer attends or has an FFN
            "attention": {"kind": "gqa", "n_heads": 1, "n_kv_heads": 1, "head_dim": head_dim},
            "ffn": {"kind": "swiglu", "d_ff": heads * head_dim},
            "mixer": {"kind": "mamba2", "n_heads": heads, "head_dim": head_dim,
                      "d_state": c.size("state_size"), "n_groups": c.size("n_groups"),
                      "conv_kernel": c.size("conv_kernel"), "chunk_size": c.size("chunk_size"),
                      "conv_bias": c.flag("use_conv_bias"), "proj_bias": c.flag("use_bias"),
                      "dt_limit_min": lo, "dt_limit_max": hi},
            "layers": [{"select": _select(list(range(n))), "ffn": "none"}]}


def pure_mamba2(s: ModelSpec) -> bool:
    """Whether every layer of `s` is a Mamba-2 mixer alone (no attention, no FFN)."""
    return all(layer.state is not None and layer.state.kind == "mamba2"
               and layer.attention is None and layer.ffn is None for layer in s.plan)


def write(s: ModelSpec) -> dict:
    """Mamba2Config's keys for `s`; what the class cannot build (a mixer width that is no whole
    multiple of hidden_size) is named here, the rest by the exporter's read-back comparison."""
    m = s.mixer
    if m is None or m.kind != "mamba2" or m.d_inner % s.d_model:
        raise SpecError("transformers' Mamba2 sizes its mixer as expand (an integer) * "
                        "hidden_size; this spec's mixer is not such a Mamba-2 mixer",
                        key="mixer.head_dim")
    out = {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
           "tie_word_embeddings": s.tie_embeddings, "layer_norm_epsilon": s.norm.eps,
           "hidden_act": "silu", "residual_in_fp32": True, "num_heads": m.n_heads,
           "head_dim": m.head_dim, "expand": m.d_inner // s.d_model, "state_size": m.d_state,
           "n_groups": m.n_groups, "conv_kernel": m.conv_kernel, "chunk_size": m.chunk_size,
           "use_conv_bias": m.conv_bias, "use_bias": m.proj_bias,
           "time_step_limit": [m.dt_limit_min, m.dt_limit_max or math.inf],
           # the class's defaults (bos 0, eos 2, pad 1) may be out of a small vocabulary
           "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    if s.max_seq_len != CONTEXT_MAX:  # an extra key transformers keeps (the module doc)
        out["max_position_embeddings"] = s.max_seq_len
    return out


# Weight names: Mamba2ForCausalLM's modules are `backbone.` (embeddings, layers.N.norm,
# layers.N.mixer, norm_f) and `lm_head`; the mixer's parameter names are ours. The one block
# norm is our input_layernorm. `backbone.embedding.weight` is an older name its load hook renames.
_L = "backbone.layers.{i}"
_MAMBA = ("in_proj.{p}", "conv1d.{p}", "out_proj.{p}", "dt_bias", "A_log", "D", "norm.weight")
ROWS = (
    ("backbone.embeddings.weight", "embed_tokens.weight"),
    (f"{_L}.norm.weight", "layers.{i}.input_layernorm.weight"),
    *[(f"{_L}.mixer.{name}", f"layers.{{i}}.mixer.{name}") for name in _MAMBA],
    ("backbone.norm_f.weight", "norm.weight"),
    ("lm_head.weight", "lm_head.weight"),
    ("backbone.embedding.weight", "embed_tokens.weight", {"alias": True}),
)

MAMBA2 = NEMOTRON_H.but(
    "mamba2", "Mamba2ForCausalLM", read=read, write=write, exports=pure_mamba2,
    weights=rules(*ROWS), per_expert=(),
    spec_keys=NEMOTRON_H.key_table(**{
        "norm.eps": "layer_norm_epsilon", "n_layers": "num_hidden_layers",
        "layers": "num_hidden_layers", "max_seq_len": "max_position_embeddings",
        **{f"mixer.{k}": v for k, v in (
            ("n_heads", "num_heads"), ("head_dim", "head_dim"), ("d_state", "state_size"),
            ("n_groups", "n_groups"), ("conv_kernel", "conv_kernel"),
            ("chunk_size", "chunk_size"), ("conv_bias", "use_conv_bias"),
            ("proj_bias", "use_bias"), ("dt_limit_min", "time_step_limit"),
            ("dt_limit_max", "time_step_limit"))}}),
    key_fields=NEMOTRON_H.field_table(num_heads="n_heads", head_dim="head_dim",
                                      state_size="d_state", expand="n_heads"),
    names=("mamba2", "mamba-2"), doc="Nemotron-H with Mamba-2 layers only (x + mixer(norm(x))), "
                                      "a tied head when tie_word_embeddings says so")
FAMILIES = (MAMBA2,)
