"""Granite 4.0 (transformers' `granitemoehybrid`, GraniteMoeHybridForCausalLM) config.json <->
spec, both directions.

GraniteMoeHybrid = Granite's multipliers (embedding, attention as the softmax scale, residual,
logits) + per layer either Granite's attention or a Mamba-2 mixer (`layer_types`, alias
`layers_block_type`: "mamba"/"linear_attention" or "attention"/"full_attention"; absent: every
layer Mamba) + in every layer a shared SwiGLU of `shared_intermediate_size` (`shared_mlp`,
input_linear gate rows first), to which GraniteMoe's MoE (`block_sparse_moe`: softmax over the
top-k router logits, experts of `intermediate_size`) is added when num_local_experts > 0. So the
spec's FFN is a moe with one shared expert of width d_shared, or, with no experts, a dense swiglu
of shared_intermediate_size. RoPE only when position_embedding_type is "rope"; otherwise no
layer rotates (NoPE: the Granite 4.0-H hybrids say "nope"). The Mamba keys map as the table in
spec/mamba2.py says; hidden_act is both the MLP's activation and the mixer's conv activation
(transformers uses one key for both), so a model with Mamba layers must use silu.
"""

from __future__ import annotations

import math

from archscope.errors import SpecError
from archscope.spec.families.base import is_hybrid, rules
from archscope.spec.families.granitemoe import GRANITEMOE
from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _act, _base, _heads, _multipliers, _select
from archscope.spec.hf_writers_base import HF_ACT, rope_parameters
from archscope.spec.schema import ModelSpec

# config.json keys -> the spec fields whose limits bound them (the Mamba keys: Bamba's too)
KEY_FIELDS = LLAMA.field_table(
    shared_intermediate_size="d_ff", mamba_n_heads="n_heads", mamba_d_head="head_dim",
    mamba_d_state="d_state", mamba_n_groups="n_groups", mamba_d_conv="conv_kernel",
    mamba_chunk_size="chunk_size", mamba_expand="n_heads")
SPEC_KEYS = LLAMA.key_table(**{
    "ffn.d_ff": "shared_intermediate_size",
    "ffn.d_shared": "shared_intermediate_size", "ffn.d_expert": "intermediate_size",
    "ffn.n_experts": "num_local_experts", "ffn.top_k": "num_experts_per_tok",
    "position.kind": "position_embedding_type", "layers": "layer_types", "mixer": "layer_types",
    **{f"mixer.{ours}": theirs for ours, theirs in (
        ("n_heads", "mamba_n_heads"), ("head_dim", "mamba_d_head"), ("d_state", "mamba_d_state"),
        ("n_groups", "mamba_n_groups"), ("conv_kernel", "mamba_d_conv"),
        ("chunk_size", "mamba_chunk_size"), ("conv_bias", "mamba_conv_bias"),
        ("proj_bias", "mamba_proj_bias"), ("dt_limit_min", "time_step_limit"),
        ("dt_limit_max", "time_step_limit"))}})

MAMBA, ATTENTION = ("mamba", "linear_attention"), ("attention", "full_attention")
_POSITIONS = ("rope", "nope")  # transformers: anything but "rope" (null too) rotates nothing


def _layer_types(c: Keys, n: int) -> list[bool]:
    """Per layer: True for a Mamba layer. Absent: every layer Mamba (GraniteMoeHybridConfig)."""
    key = c.alias("layer_types", "layers_block_type")
    types = c.raw.get(key)
    if types is None:
        return [True] * n
    if not isinstance(types, list) or len(types) != n:
        raise c.error(key, f"expected a list of {n} entries (num_hidden_layers), each "
                           f"{' or '.join(MAMBA + ATTENTION)}, {what(types)}")
    for i, t in enumerate(types):
        if t not in MAMBA + ATTENTION:
            raise c.error(f"{key}[{i}]", f"expected one of {', '.join(MAMBA + ATTENTION)}, "
                                         f"{what(t)}")
    return [t in MAMBA for t in types]


def _time_step_limit(c: Keys) -> tuple[float, float | None]:
    value = c.get("time_step_limit")
    if isinstance(value, tuple):  # the class default, (0.0, inf)
        value = list(value)
    if not isinstance(value, list) or len(value) != 2:
        raise c.error("time_step_limit", f"expected [min, max] (max may be inf), {what(value)}; "
                                         "transformers' Mamba scan indexes both")
    lo, hi = value
    lo = c.number("time_step_limit[0]", value=lo, positive=False)
    if hi == math.inf or hi == {"__float__": "Infinity"}:  # transformers 5 saves inf tagged
        return lo, None
    return lo, c.number("time_step_limit[1]", value=hi)


def mamba(c: Keys, width: int) -> dict:
    """The Mamba-2 mixer, checked as GraniteMoeHybridConfig.validate_architecture (and
    BambaConfig's) checks it."""
    heads, expand = c.size("mamba_n_heads"), c.size("mamba_expand")
    inner = expand * width
    if inner % heads:
        raise c.error("mamba_n_heads", f"must divide mamba_expand * hidden_size ({inner}), "
                                       f"{what(heads)}")
    head_dim = c.get("mamba_d_head")
    head_dim = inner // heads if head_dim == "auto" else c.size("mamba_d_head")
    if head_dim * heads != inner:
        raise c.error("mamba_d_head", f"mamba_d_head * mamba_n_heads ({head_dim} * {heads}) "
                                      f"must equal mamba_expand * hidden_size ({inner})")
    lo, hi = _time_step_limit(c)
    return {"kind": "mamba2", "n_heads": heads, "head_dim": head_dim,
            "d_state": c.size("mamba_d_state"), "n_groups": c.size("mamba_n_groups"),
            "conv_kernel": c.size("mamba_d_conv"), "chunk_size": c.size("mamba_chunk_size"),
            "conv_bias": c.flag("mamba_conv_bias"), "proj_bias": c.flag("mamba_proj_bias"),
            "dt_limit_min": lo, "dt_limit_max": hi}


def _ffn(c: Keys) -> dict:
    shared, experts = c.size("shared_intermediate_size"), c.size("num_local_experts", least=0)
    if not experts:  # GraniteMoeHybridDecoderLayer: the shared MLP alone
        return {"kind": "swiglu", "d_ff": shared, "activation": _act(c)}
    k = c.size("num_experts_per_tok")
    if k > experts:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed num_local_experts "
                                             f"({experts})")
    return {"kind": "moe", "activation": _act(c), "n_experts": experts, "top_k": k,
            "d_expert": c.size("intermediate_size"), "n_shared_experts": 1, "d_shared": shared,
            "router": {"normalize": True}}


def read(c: Keys) -> dict:
    rope = c.text("position_embedding_type", _POSITIONS, null=True) == "rope"
    if rope:
        base = _base(c)
    else:  # no layer rotates: the RoPE keys (IBM's files carry rope_theta) are not read
        base = {"vocab_size": c.size("vocab_size"), "d_model": c.size("hidden_size"),
                "n_layers": c.size("num_hidden_layers"),
                "max_seq_len": c.size("max_position_embeddings"),
                "tie_embeddings": c.flag("tie_word_embeddings"),
                "norm": {"kind": "rmsnorm", "eps": c.number("rms_norm_eps"), "position": "pre"},
                "position": {"kind": "none"}}
    d, n = base["d_model"], base["n_layers"]
    heads, kv, head_dim = _heads(c, d)
    out = {**base, "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                                 "head_dim": head_dim, "bias": c.flag("attention_bias")},
           "ffn": _ffn(c), "multipliers": _multipliers(c)}
    is_mamba = _layer_types(c, n)
    mixer = mamba(c, d)  # validated whatever the layers, as transformers' config does
    if any(is_mamba):
        if out["ffn"]["activation"] != "silu":
            raise c.error("hidden_act", f"is also the Mamba conv's activation, which archscope "
                                        f"builds as silu only, {what(c.get('hidden_act'))}")
        out["mixer"] = mixer
        attends = [i for i, m in enumerate(is_mamba) if not m]
        if attends:
            out["layers"] = [{"select": _select(attends), "mixer": "attention"}]
    return out


def write(s: ModelSpec) -> dict:
    """GraniteMoeHybridConfig's keys for `s`. What the class cannot build (a layer's own FFN or
    attention, an MoE without its one shared MLP, a mixer width that is no whole multiple of
    hidden_size) is named here or by the read-back comparison (hf_export)."""
    a, f, m, mults = s.attention, s.ffn, s.mixer, s.mults
    moe = f.kind == "moe"
    if moe and f.shared_experts != 1:
        raise SpecError("transformers' GraniteMoeHybrid adds exactly one shared MLP to its "
                        f"experts; n_shared_experts is {f.shared_experts}",
                        key="ffn.n_shared_experts")
    if m is not None and f.activation != "silu":
        raise SpecError("transformers' GraniteMoeHybrid runs its Mamba conv with hidden_act, the "
                        f"MLP's activation, and archscope's with silu; here {f.activation}",
                        key="ffn.activation")
    rope = s.position.kind == "rope"
    out = {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
           "max_position_embeddings": s.max_seq_len, "tie_word_embeddings": s.tie_embeddings,
           "rms_norm_eps": s.norm.eps, "position_embedding_type": "rope" if rope else "nope",
           **({"rope_parameters": rope_parameters(s.position)} if rope else {}),
           "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim, "attention_bias": a.bias,
           "embedding_multiplier": mults.embedding, "residual_multiplier": mults.residual,
           "attention_multiplier": mults.attention or a.qk_head_dim ** -0.5,  # as resolved()
           "logits_scaling": mults.logits, "hidden_act": HF_ACT[f.activation],
           # IBM's spelling, which transformers 5 reads as linear_attention / full_attention
           "layer_types": ["mamba" if layer.state else "attention" for layer in s.plan],
           "shared_intermediate_size": f.shared_width if moe else f.d_ff,
           "intermediate_size": f.d_expert if moe else f.d_ff,
           "num_local_experts": f.n_experts if moe else 0,
           "num_experts_per_tok": f.top_k if moe else 0,
           # the class's defaults (bos 1, eos 2) may be out of a small vocabulary; a spec has none
           "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    return {**out, **(mamba_keys(s) if m is not None else {})}


def mamba_keys(s: ModelSpec) -> dict:
    """The mamba_* keys and time_step_limit of `s`'s Mamba-2 mixer (Granite 4.0-H's and Bamba's
    spelling). inf is written as Python's json writes it, which transformers reads."""
    m = s.mixer
    if m.d_inner % s.d_model:
        raise SpecError(f"transformers sizes this mixer as mamba_expand (an integer) * "
                        f"hidden_size; {m.n_heads} x {m.head_dim} = {m.d_inner} is no multiple of "
                        f"d_model {s.d_model}", key="mixer.head_dim")
    return {"mamba_n_heads": m.n_heads, "mamba_d_head": m.head_dim,
            "mamba_expand": m.d_inner // s.d_model, "mamba_d_state": m.d_state,
            "mamba_n_groups": m.n_groups, "mamba_d_conv": m.conv_kernel,
            "mamba_chunk_size": m.chunk_size, "mamba_conv_bias": m.conv_bias,
            "mamba_proj_bias": m.proj_bias,
            "time_step_limit": [m.dt_limit_min, m.dt_limit_max or math.inf]}


# weight names: Llama's embedding, attention, norms and head + a Mamba-2 mixer under `mamba`
# (ours: `mixer`, with transformers' own parameter names) + GraniteMoe's MoE names + `shared_mlp`,
# whose input_linear holds gate rows then up rows. shared_mlp is the MoE's shared expert when the
# layer has experts and the whole dense MLP when num_local_experts is 0, so each of its tensors
# has two rules; the loader takes the one whose targets the model has (weights/mapping.py), and
# the writer the one whose first target it has.
_LAYER = "model.layers.{i}"
_SHARED_MLP = f"{_LAYER}.shared_mlp"
# (HF name, our name or names) rows, in mapping._rules' form
MAMBA_WEIGHTS = (
    *[(f"{_LAYER}.mamba.{name}.{{p}}", f"layers.{{i}}.mixer.{name}.{{p}}")
      for name in ("in_proj", "conv1d", "out_proj")],
    *[(f"{_LAYER}.mamba.{name}", f"layers.{{i}}.mixer.{name}")
      for name in ("dt_bias", "A_log", "D", "norm.weight")],
)
ROWS = (
    *MAMBA_WEIGHTS,
    *[(f"{_SHARED_MLP}.input_linear.weight",
       [f"layers.{{i}}.mlp.{at}{proj}.weight" for proj in ("gate_proj", "up_proj")])
      for at in ("shared_experts.", "")],
    *[(f"{_SHARED_MLP}.output_linear.weight", f"layers.{{i}}.mlp.{at}down_proj.weight")
      for at in ("shared_experts.", "")],
)


def single_blocks(s: ModelSpec) -> bool:
    """Whether some layer is one block (a mixer or an FFN, never both): Nemotron-H's layout."""
    return any(layer.attention is None and layer.state is None or layer.ffn is None
               for layer in s.plan)


def mamba_hybrid(s: ModelSpec) -> bool:
    return is_hybrid(s) and (s.mixer is None or s.mixer.kind == "mamba2")


GRANITEMOEHYBRID = LLAMA.but(
    "granitemoehybrid", "GraniteMoeHybridForCausalLM", read=read, write=write,
    exports=lambda s: mamba_hybrid(s) and not single_blocks(s), mixers=("mamba2",),
    ffns=("moe", "swiglu"),
    weights=tuple(r for r in LLAMA.weights if ".mlp." not in r.hf) + rules(*ROWS)
    + tuple(r for r in GRANITEMOE.weights if ".block_sparse_moe." in r.hf),
    spec_keys=SPEC_KEYS, key_fields=KEY_FIELDS, names=("granite",),
    doc="Granite + MoE with a shared MLP + Mamba-2 layers")
FAMILIES = (GRANITEMOEHYBRID,)
