"""Nemotron-H (transformers' `nemotron_h`, NemotronHForCausalLM) config.json <-> spec, both ways.

Nemotron-H's layers are single blocks, `x + mixer(norm(x))`, one type per layer from
`hybrid_override_pattern` (M: Mamba-2, *: attention, -: MLP, E: MoE; transformers 5 saves the
same list as `layers_block_type`: linear_attention, full_attention, mlp, moe). In a spec that is
the model's `mixer` (mamba2) with `layers` overrides: M layers `ffn: none`, * layers
`mixer: attention, ffn: none`, - and E layers `mixer: none` (with E layers the model's `ffn` is
the MoE and - layers replace it with the MLP). What transformers 5.24 builds:

- attention: GQA (num_attention_heads, num_key_value_heads, head_dim) with no positional
  encoding at all (NemotronHAttention applies no RoPE: position.kind none) and no biases
  (its q/k/v/o_proj ignore attention_bias);
- the MLP: up_proj, mlp_hidden_act, down_proj, biases from mlp_bias (relu2, the squared ReLU of
  every published config: ffn.kind relu2; another activation: kind mlp);
- the MoE (NemotronHMoE): a router in fp32 (sigmoid scores, a selection-only
  e_score_correction_bias, groups scored by their best two: noaux_tc with n_group/topk_group,
  norm_topk_prob, routed_scaling_factor), n_routed_experts experts of moe_intermediate_size and
  ONE shared expert of moe_shared_expert_intermediate_size (n_shared_experts is read by no
  module), each an ungated MLP with mlp_hidden_act (ffn.expert relu2, or mlp); with
  moe_latent_size the routed experts work in that latent (ffn.d_latent: fc1_latent_proj down
  before them, fc2_latent_proj back up after);
- the Mamba-2 mixer: keys as in spec/mamba2.py's table; dt clamped to (time_step_min, inf);
- RMSNorms with layer_norm_epsilon (the gated norm inside the mixer too), a final `norm_f`;
- an lm_head never tied to the embeddings (NemotronHForCausalLM ties nothing, whatever
  tie_word_embeddings says), so tie_word_embeddings true is refused.

Read by no module, so neither read nor written: residual_in_fp32, rescale_prenorm_residual,
expand, time_step_max/floor/limit, mamba_proj_bias, mamba_ssm_cache_dtype, attention_bias,
sliding_window (checked as a window all the same), num_hidden_layers (the pattern's length
counts the layers; a file that gives both must make them agree), and
attention_head_dim (older files' spelling; head_dim is what the class reads), n_shared_experts,
moe_shared_expert_overlap. Refused: mlp_bias with E layers (then the shared expert and latent
projections have biases and the routed experts none).
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.granitemoehybrid import mamba_hybrid, single_blocks
from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _ACT, _select, class_default
from archscope.spec.hf_writers_base import HF_ACT
from archscope.spec.schema import ModelSpec

# pattern character <-> layers_block_type entry <-> what the layer is in a spec
_TYPE = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
_SPEC = {"linear_attention": {"ffn": "none"}, "full_attention": {"mixer": "attention",
                                                                  "ffn": "none"},
         "mlp": {"mixer": "none"}, "moe": {"mixer": "none"}}
# NemotronHConfig.__post_init__'s layers when the file gives neither list nor pattern
_DEFAULT_TYPES = ["linear_attention", "moe", "full_attention", "mlp"]
_HF_ACT = {**HF_ACT, "relu2": "relu2"}


def _layer_types(c: Keys) -> tuple[str, list[str]]:
    """(the key the layers came from, one layers_block_type entry per layer): the list if the
    file has one (transformers prefers it), else the pattern string."""
    key = c.alias("layers_block_type", "layer_types")  # NemotronHConfig's attribute_map
    if c.raw.get(key) is None:
        key = "hybrid_override_pattern"
    if key not in c.raw and c.raw.get("layers_block_type", c.raw.get("layer_types")) is None:
        return key, class_default(c, "layers_block_type", _DEFAULT_TYPES)
    value = c.raw.get(key)
    if value is None:
        raise c.error(key, "required when given: null is no layer list (transformers cannot "
                           "read it); give the pattern or leave the key out")
    if key == "hybrid_override_pattern":
        if not isinstance(value, str):
            raise c.error(key, f"expected a string of M, *, - and E, {what(value)}")
        bad = next((i for i, ch in enumerate(value) if ch not in _TYPE), None)
        if bad is not None:
            raise c.error(f"{key}[{bad}]", f"expected M, *, - or E, {what(value[bad])}")
        value = [_TYPE[ch] for ch in value]
    elif not (isinstance(value, list) and all(t in _TYPE.values() for t in value)):
        raise c.error(key, f"expected a list of {', '.join(_TYPE.values())}, {what(value)}")
    c.size(key, value=len(value))  # at least one layer, within archscope's layer limit
    stated = c.raw.get("num_hidden_layers")
    if stated is not None and stated != len(value):  # transformers warns, builds the pattern's
        raise c.error("num_hidden_layers", f"{what(stated)}, but {key} lists {len(value)} "
                                           "layers: the two must agree")
    return key, value


def read(c: Keys) -> dict:
    key, types = _layer_types(c)
    if c.flag("tie_word_embeddings"):
        raise c.error("tie_word_embeddings", "is true, but transformers' NemotronHForCausalLM "
                                             "never ties lm_head to the embeddings (it ties no "
                                             "weight): a separate head is what it builds")
    if c.size("num_nextn_predict_layers", least=0, fallback=0):
        raise c.error("num_nextn_predict_layers", "Nemotron-H's MTP layers (attention + MoE) "
                                                  "are not modelled; only 0 is read")
    heads = c.size("num_attention_heads")
    kv = c.size("num_key_value_heads", null=True) or heads  # null: one per query head
    if heads % kv:
        raise c.error("num_key_value_heads", f"num_attention_heads ({heads}) must be a multiple "
                                             f"of num_key_value_heads ({kv})")
    c.size("sliding_window", null=True, fallback=None)  # unused, but a window must be one
    act = c.text("mlp_hidden_act", ("relu2", *_ACT), noun="activation")
    c.text("mamba_hidden_act", ("silu",), noun="activation")  # the conv's: the spec has no key
    kind, activation = ("relu2", {}) if act == "relu2" else ("mlp", {"activation": _ACT[act]})
    # the MLP sizes nothing without - layers (nor is intermediate_size read then)
    mlp = {"kind": kind, "d_ff": c.size("intermediate_size"), "bias": c.flag("mlp_bias"),
           **activation} if "mlp" in types or "moe" not in types else None
    out = {"vocab_size": c.size("vocab_size"), "d_model": c.size("hidden_size"),
           "n_layers": len(types), "max_seq_len": c.size("max_position_embeddings"),
           "norm": {"kind": "rmsnorm", "eps": c.number("layer_norm_epsilon"), "position": "pre"},
           "position": {"kind": "none"},
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                         "head_dim": c.size("head_dim")},
           "ffn": _moe(c, kind, activation) if "moe" in types else mlp}
    if "linear_attention" in types:
        out["mixer"] = _mamba2(c)
    spec = {**_SPEC, "mlp": {"mixer": "none", "ffn": mlp}} if "moe" in types else _SPEC
    out["layers"] = [{"select": _select(picked), **spec[t]} for t in spec
                     for picked in [[i for i, x in enumerate(types) if x == t]] if picked]
    return out


def _moe(c: Keys, kind: str, activation: dict) -> dict:
    """NemotronHMoE: routed experts and one shared expert, each an ungated MLP like the - layers'
    (no gate_proj), behind DeepSeek-V3's router (NemotronHTopkRouter is its line-for-line copy)."""
    if c.flag("mlp_bias"):
        raise c.error("mlp_bias", "is true with MoE layers (E): NemotronH's shared expert then "
                                  "has biases and its routed experts none, which archscope's "
                                  "MoE (biases on all or none) does not build")
    n, k = c.size(c.alias("n_routed_experts", "num_local_experts")), c.size("num_experts_per_tok")
    if k > n:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed n_routed_experts ({n})")
    router = {"method": "noaux_tc", "scoring": "sigmoid", "correction_bias": True,
              "normalize": c.flag("norm_topk_prob"),
              "scaling_factor": c.number("routed_scaling_factor"),
              "n_group": c.size("n_group"), "topk_group": c.size("topk_group")}
    return {"kind": "moe", "expert": kind, **activation, "n_experts": n, "top_k": k,
            "d_expert": c.size("moe_intermediate_size"), "n_shared_experts": 1,
            "d_shared": c.size("moe_shared_expert_intermediate_size"), "router": router,
            "d_latent": c.size("moe_latent_size", null=True)}


def _mamba2(c: Keys) -> dict:
    """The mixer's keys; each legacy name NemotronHConfig still accepts is read as well."""
    def key(name: str, legacy: str) -> str:
        return c.alias(name, legacy)
    return {"kind": "mamba2", "n_heads": c.size("mamba_num_heads"),
            "head_dim": c.size("mamba_head_dim"), "d_state": c.size("ssm_state_size"),
            "n_groups": c.size(key("n_groups", "mamba_n_groups")),
            "conv_kernel": c.size(key("conv_kernel", "mamba_d_conv")),
            "chunk_size": c.size(key("chunk_size", "mamba_chunk_size")),
            "conv_bias": c.flag(key("use_conv_bias", "mamba_conv_bias")),
            "proj_bias": c.flag("use_bias"),
            "dt_limit_min": c.number(key("time_step_min", "mamba_dt_min"), positive=False)}


def write(s: ModelSpec) -> dict:
    """NemotronHConfig's keys for `s`. What NemotronH cannot build is named here (a layer with
    both a mixer and an FFN, a tied head, an FFN kind it lacks) or by the exporter's read-back
    comparison (RoPE, attention biases, a per-layer change, a router other than its own)."""
    pattern = []
    for layer in s.plan:
        if layer.mixer is not None and layer.ffn is not None:
            raise SpecError(f"transformers' NemotronH layers are single blocks (a mixer or an "
                            f"FFN); layer {layer.index} has both", key="layers")
        pattern.append("M" if layer.state else "*" if layer.attention else
                       "E" if layer.is_moe else "-")
    if s.tie_embeddings:
        raise SpecError("transformers' NemotronHForCausalLM never ties lm_head to the "
                        "embeddings", key="tie_embeddings")
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    f = next((layer.ffn for layer in s.plan if layer.ffn and not layer.is_moe), None) or s.ffn
    a = s.attention
    out = {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
           "hybrid_override_pattern": "".join(pattern), "max_position_embeddings":
           s.max_seq_len, "tie_word_embeddings": False, "layer_norm_epsilon": s.norm.eps,
           "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim, "mamba_hidden_act": "silu"}  # read with or without Mamba
    if f.kind != "moe":
        if f.kind not in ("relu2", "mlp"):
            raise SpecError(f"transformers' NemotronH MLP is up_proj, activation, down_proj "
                            f"(kind relu2 or mlp), not {f.kind!r}", key="ffn.kind")
        out.update({"intermediate_size": f.d_ff, "mlp_hidden_act": _HF_ACT[f.activation],
                    "mlp_bias": f.bias})
    if moe is not None:
        out.update(_write_moe(moe))
    if (m := s.mixer) is not None:
        out.update({"mamba_num_heads": m.n_heads, "mamba_head_dim": m.head_dim,
                    "ssm_state_size": m.d_state, "n_groups": m.n_groups,
                    "conv_kernel": m.conv_kernel, "chunk_size": m.chunk_size,
                    "use_conv_bias": m.conv_bias, "use_bias": m.proj_bias,
                    "time_step_min": m.dt_limit_min})
    return out


def _write_moe(f) -> dict:
    """NemotronHMoE's keys: its experts share mlp_hidden_act with the MLP layers."""
    if f.expert not in ("relu2", "mlp"):
        raise SpecError("transformers' NemotronH experts are ungated MLPs (expert relu2 or "
                        f"mlp), not {f.expert or 'swiglu'}", key="ffn.expert")
    if f.shared_experts != 1:
        raise SpecError("transformers' NemotronH MoE has exactly one shared expert, not "
                        f"{f.shared_experts}", key="ffn.n_shared_experts")
    r = f.routing
    return {"n_routed_experts": f.n_experts, "num_experts_per_tok": f.top_k,
            "moe_intermediate_size": f.d_expert, "n_shared_experts": 1,
            "moe_shared_expert_intermediate_size": f.shared_width, "mlp_hidden_act":
            _HF_ACT[f.activation], "mlp_bias": f.bias, "norm_topk_prob": r.normalize,
            "routed_scaling_factor": r.scaling_factor, "n_group": r.n_group or 1,
            "topk_group": r.topk_group or 1, "moe_latent_size": f.d_latent}


# Weight names. Each Nemotron-H layer is one block: `layers.N.norm`, then `layers.N.mixer`, and
# a residual. The mixer is the Mamba-2 mixer (our `mixer`, the same parameter names),
# attention's q/k/v/o_proj (our `self_attn`) or the MLP's up/down_proj (our `mlp`), so the
# block's one norm is our input_layernorm (a layer with a mixer) or post_attention_layernorm (an
# MLP layer): two rules for one name, of which the loader takes the one the model has. Files
# name the model `backbone.` (the published checkpoints, and what transformers 5's
# save_pretrained writes back), transformers 5's modules `model.` (its conversion mapping
# renames one to the other on load); both are read, and archscope writes `model.`, the module
# names, so that a state dict loads into transformers' class directly
# (measure.reference.hf_twin) and a written checkpoint loads by name.
_L = "layers.{i}"
_MAMBA = ("in_proj.{p}", "conv1d.{p}", "out_proj.{p}", "dt_bias", "A_log", "D", "norm.weight")
_BLOCKS = (
    ("embeddings.weight", "embed_tokens.weight"),
    # one name, two alternatives: the first the model has is used (weights/mapping.py)
    (f"{_L}.norm.weight", "layers.{i}.input_layernorm.weight"),
    (f"{_L}.norm.weight", "layers.{i}.post_attention_layernorm.weight"),
    *[(f"{_L}.mixer.{name}", f"layers.{{i}}.mixer.{name}") for name in _MAMBA],
    *[(f"{_L}.mixer.{proj}.{{p}}", f"layers.{{i}}.self_attn.{proj}.{{p}}")
      for proj in ("q_proj", "k_proj", "v_proj", "o_proj")],
    *[(f"{_L}.mixer.{proj}.{{p}}", f"layers.{{i}}.mlp.{proj}.{{p}}")
      for proj in ("up_proj", "down_proj")],
    # an E layer's MoE (our `mlp`): router, fused ungated experts, the one shared expert
    (f"{_L}.mixer.gate.weight", "layers.{i}.mlp.gate.weight"),
    (f"{_L}.mixer.gate.e_score_correction_bias", "layers.{i}.mlp.gate.e_score_correction_bias"),
    *[(f"{_L}.mixer.experts.{proj}", f"layers.{{i}}.mlp.experts.{proj}")
      for proj in ("up_proj", "down_proj")],
    *[(f"{_L}.mixer.shared_experts.{proj}.{{p}}", f"layers.{{i}}.mlp.shared_experts.{proj}.{{p}}")
      for proj in ("up_proj", "down_proj")],
    *[(f"{_L}.mixer.{proj}.{{p}}", f"layers.{{i}}.mlp.{proj}.{{p}}")
      for proj in ("fc1_latent_proj", "fc2_latent_proj")],
    ("norm_f.weight", "norm.weight"),
)
NEMOTRON_H_ROWS = (
    *[(f"model.{hf}", ours, *extra) for hf, ours, *extra in _BLOCKS],
    ("lm_head.weight", "lm_head.weight"),
    *[(f"backbone.{hf}", ours, {**(extra[0] if extra else {}), "alias": True})
      for hf, ours, *extra in _BLOCKS],
)

NEMOTRON_H = LLAMA.but(
    "nemotron_h", "NemotronHForCausalLM", read=read, write=write,
    exports=lambda s: mamba_hybrid(s) and single_blocks(s), mixers=("mamba2",),
    ffns=("relu2", "mlp", "moe"),
    weights=rules(*NEMOTRON_H_ROWS),
    # published files (and transformers < 5) hold one up_proj and down_proj per expert
    per_expert=tuple((f"{top}.layers.{{i}}.mixer.experts.{{j}}.{proj}.weight",
                      f"{top}.layers.{{i}}.mixer.experts.{proj}", 0, 1)
                     for top in ("backbone", "model") for proj in ("up_proj", "down_proj")),
    spec_keys=LLAMA.key_table(**{
        "norm.eps": "layer_norm_epsilon", "ffn.activation": "mlp_hidden_act",
        "n_layers": "hybrid_override_pattern", "layers": "hybrid_override_pattern",
        **{f"mixer.{k}": v for k, v in (
            ("n_heads", "mamba_num_heads"), ("head_dim", "mamba_head_dim"),
            ("d_state", "ssm_state_size"), ("n_groups", "n_groups"),
            ("conv_kernel", "conv_kernel"), ("chunk_size", "chunk_size"),
            ("conv_bias", "use_conv_bias"), ("proj_bias", "use_bias"),
            ("dt_limit_min", "time_step_min"))},
        **{f"ffn.{k}": v for k, v in (
            ("n_experts", "n_routed_experts"), ("top_k", "num_experts_per_tok"),
            ("d_expert", "moe_intermediate_size"), ("expert", "mlp_hidden_act"),
            ("d_shared", "moe_shared_expert_intermediate_size"), ("bias", "mlp_bias"),
            ("router.n_group", "n_group"), ("router.topk_group", "topk_group"),
            ("router.normalize", "norm_topk_prob"),
            ("router.scaling_factor", "routed_scaling_factor"), ("d_latent", "moe_latent_size"))}}),
    key_fields=LLAMA.field_table(hybrid_override_pattern="n_layers",
                                 layers_block_type="n_layers", mamba_num_heads="n_heads",
                                 mamba_head_dim="head_dim", ssm_state_size="d_state",
                                 moe_shared_expert_intermediate_size="d_shared",
                                 moe_latent_size="d_latent"),
    names=("nemotron",), doc="single blocks: Mamba-2, attention (no RoPE), a squared-ReLU MLP or "
                                        "a MoE of them")
FAMILIES = (NEMOTRON_H,)
