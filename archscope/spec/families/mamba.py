"""Mamba (transformers' `mamba`, MambaForCausalLM) config.json <-> spec, both directions.

A pure Mamba-1 stack: an embedding, num_hidden_layers blocks `x + mixer(norm(x))` (MambaBlock:
an RMSNorm with layer_norm_epsilon, then MambaMixer; no attention, no FFN), a final RMSNorm
`norm_f` and an lm_head tied to the embedding unless tie_word_embeddings says otherwise. In a
spec that is the model's `mixer` (kind mamba1, keys as spec/mamba.py's table says) with one
`layers` override giving every layer `ffn: none`, no positional encoding (position none).

A spec must hold an `attention` and an `ffn` even where no layer has them: these families
write the fixed, unused ones of UNUSED (no layer builds or counts them; `show` lists none).

The mixer's width is the file's intermediate_size where it has one (transformers sets it over
the expand * hidden_size its __post_init__ computed), else expand * hidden_size. Keys read by
no module, so neither read nor written: residual_in_fp32 (transformers then keeps
the residual stream in fp32 under bf16 weights, archscope in the weights' dtype: the same in
fp32, a bf16 rounding apart in bf16, no count changes), use_mambapy and use_associative_scan
(other implementations of the same scan), the dt init keys (time_step_scale/min/max/floor/
init_scheme), rescale_prenorm_residual and the token ids. MambaConfig has no context length (a
Mamba has no positional limit): max_seq_len is the file's max_position_embeddings when it has
one (archscope writes it), else 2048, the sequence length the Mamba paper (Gu and Dao 2023,
section 4.2) trained its language models at. hidden_act is the conv's activation: silu only.
"""

from __future__ import annotations

import math

from archscope.errors import SpecError
from archscope.spec.families.base import Family, frozen, rules
from archscope.spec.hf_keys import Keys, what
from archscope.spec.schema import ModelSpec

CONTEXT_FALLBACK = 2048  # see the module doc
# the attention and FFN no layer has (a spec holds both): fixed, so configs round-trip
UNUSED = {"attention": {"kind": "gqa", "n_heads": 1, "n_kv_heads": 1, "head_dim": 1},
          "ffn": {"kind": "mlp", "d_ff": 1}}


def auto_rank(c: Keys, key: str, width: int) -> int:
    """A dt_rank key: 'auto' is ceil(hidden_size / 16), as Mamba's and Jamba's configs say."""
    value = c.get(key)
    return math.ceil(width / 16) if value == "auto" else c.size(key)


def silu_conv(c: Keys, key: str = "hidden_act") -> None:
    act = c.get(key)
    if act != "silu":
        raise c.error(key, f"is the Mamba conv's activation, which archscope builds as silu "
                           f"only, {what(act)}")


def inner(c: Keys, d: int) -> int:
    """The mixer's width: the file's intermediate_size where it has one (transformers sets it
    after __post_init__ computed expand * hidden_size, so it wins: TII's Falcon-Mamba files say
    expand 16 beside intermediate_size 8192, and 8192 is what loads), else expand * hidden_size."""
    if c.raw.get("intermediate_size") is not None:
        return c.size("intermediate_size")
    return c.size("expand") * d


def mixer(c: Keys, d: int) -> dict:
    """MambaMixer's keys (FalconMambaMixer's too)."""
    silu_conv(c)
    return {"kind": "mamba1", "d_inner": inner(c, d), "d_state": c.size("state_size"),
            "dt_rank": auto_rank(c, "time_step_rank", d), "conv_kernel": c.size("conv_kernel"),
            "conv_bias": c.flag("use_conv_bias"), "proj_bias": c.flag("use_bias")}


def read(c: Keys) -> dict:
    d, n = c.size("hidden_size"), c.size("num_hidden_layers")
    return {"vocab_size": c.size("vocab_size"), "d_model": d, "n_layers": n,
            "max_seq_len": c.size("max_position_embeddings", fallback=CONTEXT_FALLBACK),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "rmsnorm", "eps": c.number("layer_norm_epsilon"), "position": "pre"},
            "position": {"kind": "none"}, **UNUSED, "mixer": mixer(c, d),
            "layers": [{"select": f"0:{n}", "ffn": "none"}]}


def only_mamba_blocks(s: ModelSpec, norm: str = "none") -> bool:
    """Whether `s` is a pure Mamba-1 stack (every layer the mixer alone) with dt/B/C `norm`."""
    m = s.mixer
    return (m is not None and m.kind == "mamba1" and m.dt_bc_norm == norm
            and all(layer.state is not None and layer.ffn is None for layer in s.plan))


def write(s: ModelSpec, norm: str = "none", model: str = "Mamba") -> dict:
    """MambaConfig's keys for `s` (`norm`: the dt/B/C norms the class builds). What the class
    cannot build (an FFN or attention layer, a position encoding, a width that is no whole
    multiple of d_model) is named here or by the exporter's read-back comparison."""
    m = s.mixer
    if m is None or m.kind != "mamba1":
        raise SpecError(f"transformers' {model} builds Mamba-1 mixers only", key="mixer.kind")
    if m.dt_bc_norm != norm:
        raise SpecError(f"transformers' {model} normalises dt, B and C as {norm!r}, not "
                        f"{m.dt_bc_norm!r}", key="mixer.dt_bc_norm")
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
            "max_position_embeddings": s.max_seq_len, "tie_word_embeddings": s.tie_embeddings,
            "layer_norm_epsilon": s.norm.eps, "state_size": m.d_state,
            # intermediate_size sizes the mixer (see `inner`); expand, an integer, only where
            # it says the same
            "intermediate_size": m.d_inner,
            **({"expand": m.d_inner // s.d_model} if m.d_inner % s.d_model == 0 else {}),
            "conv_kernel": m.conv_kernel,
            "use_bias": m.proj_bias, "use_conv_bias": m.conv_bias,
            "time_step_rank": m.dt_rank, "hidden_act": "silu",
            # the class's default token ids (0) mean nothing to a spec
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


_MIXER = ("conv1d.{p}", "in_proj.{p}", "x_proj.weight", "dt_proj.{p}", "A_log", "D",
          "out_proj.{p}")
WEIGHTS = rules(
    ("backbone.embeddings.weight", "embed_tokens.weight"),
    # the older name MambaModel's load hook renames
    ("backbone.embedding.weight", "embed_tokens.weight", {"alias": True}),
    ("backbone.layers.{i}.norm.weight", "layers.{i}.input_layernorm.weight"),
    *[(f"backbone.layers.{{i}}.mixer.{name}", f"layers.{{i}}.mixer.{name}") for name in _MIXER],
    ("backbone.norm_f.weight", "norm.weight"),
    ("lm_head.weight", "lm_head.weight"))

SPEC_KEYS = frozen({
    "vocab_size": "vocab_size", "d_model": "hidden_size", "n_layers": "num_hidden_layers",
    "max_seq_len": "max_position_embeddings", "tie_embeddings": "tie_word_embeddings",
    "norm.eps": "layer_norm_epsilon", "mixer.d_inner": "intermediate_size",
    "mixer.d_state": "state_size",
    "mixer.dt_rank": "time_step_rank", "mixer.conv_kernel": "conv_kernel",
    "mixer.conv_bias": "use_conv_bias", "mixer.proj_bias": "use_bias"})
KEY_FIELDS = frozen({"state_size": "d_state", "time_step_rank": "dt_rank",
                     "expand": "d_inner", "intermediate_size": "d_inner"})

MAMBA = Family(
    "mamba", "MambaForCausalLM", read=read, write=write, exports=only_mamba_blocks,
    mixers=("mamba1",), weights=WEIGHTS, spec_keys=SPEC_KEYS, key_fields=KEY_FIELDS,
    doc="a pure Mamba-1 stack: x + mixer(norm(x)), no attention, no FFN")
FAMILIES = (MAMBA,)
