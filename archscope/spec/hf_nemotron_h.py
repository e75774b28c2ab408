"""Nemotron-H (transformers' `nemotron_h`, NemotronHForCausalLM) config.json <-> spec, both ways.

Nemotron-H's layers are single blocks, `x + mixer(norm(x))`, one type per layer from
`hybrid_override_pattern` (M: Mamba-2, *: attention, -: MLP, E: MoE; transformers 5 saves the
same list as `layers_block_type`: linear_attention, full_attention, mlp, moe). In a spec that is
the model's `mixer` (mamba2) with `layers` overrides: M layers `ffn: none`, * layers
`mixer: attention, ffn: none`, - layers `mixer: none`. What transformers 5.23 builds:

- attention: GQA (num_attention_heads, num_key_value_heads, head_dim) with no positional
  encoding at all (NemotronHAttention applies no RoPE: position.kind none) and no biases
  (its q/k/v/o_proj ignore attention_bias);
- the MLP: up_proj, mlp_hidden_act, down_proj, biases from mlp_bias (relu2, the squared ReLU of
  every published config: ffn.kind relu2; another activation: kind mlp);
- the Mamba-2 mixer: keys as in spec/mamba2.py's table; dt clamped to (time_step_min, inf);
- RMSNorms with layer_norm_epsilon (the gated norm inside the mixer too), a final `norm_f`;
- an lm_head never tied to the embeddings (NemotronHForCausalLM ties nothing, whatever
  tie_word_embeddings says), so tie_word_embeddings true is refused.

Read by no module, so neither read nor written: residual_in_fp32, rescale_prenorm_residual,
expand, time_step_max/floor/limit, mamba_proj_bias, mamba_ssm_cache_dtype, attention_bias,
sliding_window (checked as a window all the same), num_hidden_layers (the pattern's length
counts the layers; a file that gives both must make them agree), and
attention_head_dim (older files' spelling; head_dim is what the class reads). MoE layers (E)
are refused: their experts are ungated squared-ReLU MLPs behind a latent projection, which
archscope's MoE does not build.
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.hf_keys import FIELD, SPEC_TO_HF, Keys, what
from archscope.spec.hf_readers_base import _ACT, _select
from archscope.spec.hf_writers_base import HF_ACT
from archscope.spec.schema import ModelSpec

FIELD.update({"hybrid_override_pattern": "n_layers", "layers_block_type": "n_layers",
              "mamba_num_heads": "n_heads", "mamba_head_dim": "head_dim",
              "ssm_state_size": "d_state"})
SPEC_TO_HF["nemotron_h"] = {
    **SPEC_TO_HF["llama"], "norm.eps": "layer_norm_epsilon", "ffn.activation": "mlp_hidden_act",
    "n_layers": "hybrid_override_pattern", "layers": "hybrid_override_pattern",
    **{f"mixer.{k}": v for k, v in (
        ("n_heads", "mamba_num_heads"), ("head_dim", "mamba_head_dim"),
        ("d_state", "ssm_state_size"), ("n_groups", "n_groups"), ("conv_kernel", "conv_kernel"),
        ("chunk_size", "chunk_size"), ("conv_bias", "use_conv_bias"), ("proj_bias", "use_bias"),
        ("dt_limit_min", "time_step_min"))}}

# pattern character <-> layers_block_type entry <-> what the layer is in a spec
_TYPE = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
_SPEC = {"linear_attention": {"ffn": "none"}, "full_attention": {"mixer": "attention",
                                                                  "ffn": "none"},
         "mlp": {"mixer": "none"}}
_HF_ACT = {**HF_ACT, "relu2": "relu2"}


def _layer_types(c: Keys) -> tuple[str, list[str]]:
    """(the key the layers came from, one layers_block_type entry per layer): the list if the
    file has one (transformers prefers it), else the pattern string."""
    key = c.alias("layers_block_type", "layer_types")  # NemotronHConfig's attribute_map
    if c.raw.get(key) is None:
        key = "hybrid_override_pattern"
    value = c.raw.get(key)
    if value is None:
        raise c.error(key, "required: transformers' default layer list has a MoE layer, which "
                           "archscope does not build; give the file's pattern")
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
    if "moe" in value:
        raise c.error(key, f"layer {value.index('moe')} is a MoE block (E): its ungated "
                           "squared-ReLU experts behind a latent projection are not built by "
                           "archscope")
    return key, value


def read_nemotron_h(c: Keys) -> dict:
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
    out = {"vocab_size": c.size("vocab_size"), "d_model": c.size("hidden_size"),
           "n_layers": len(types), "max_seq_len": c.size("max_position_embeddings"),
           "norm": {"kind": "rmsnorm", "eps": c.number("layer_norm_epsilon"), "position": "pre"},
           "position": {"kind": "none"},
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                         "head_dim": c.size("head_dim")},
           "ffn": {"kind": "relu2" if act == "relu2" else "mlp", "d_ff":
                   c.size("intermediate_size"), "bias": c.flag("mlp_bias"),
                   **({} if act == "relu2" else {"activation": _ACT[act]})}}
    if "linear_attention" in types:
        out["mixer"] = _mamba2(c)
    out["layers"] = [{"select": _select(picked), **_SPEC[t]} for t in _SPEC
                     for picked in [[i for i, x in enumerate(types) if x == t]] if picked]
    return out


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


def write_nemotron_h(s: ModelSpec) -> dict:
    """NemotronHConfig's keys for `s`. What NemotronH cannot build is named here (a layer with
    both a mixer and an FFN, a tied head, an FFN kind it lacks) or by the read-back
    comparison in hf_export (RoPE, attention biases, a per-layer change)."""
    pattern = []
    for layer in s.plan:
        if layer.mixer is not None and layer.ffn is not None:
            raise SpecError(f"transformers' NemotronH layers are single blocks (a mixer or an "
                            f"FFN); layer {layer.index} has both", key="layers")
        pattern.append("M" if layer.state else "*" if layer.attention else "-")
    if s.tie_embeddings:
        raise SpecError("transformers' NemotronHForCausalLM never ties lm_head to the "
                        "embeddings", key="tie_embeddings")
    f, a = s.ffn, s.attention
    if f.kind not in ("relu2", "mlp"):
        raise SpecError(f"transformers' NemotronH MLP is up_proj, activation, down_proj (kind "
                        f"relu2 or mlp), not {f.kind!r}", key="ffn.kind")
    out = {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
           "hybrid_override_pattern": "".join(pattern), "max_position_embeddings":
           s.max_seq_len, "tie_word_embeddings": False, "layer_norm_epsilon": s.norm.eps,
           "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim, "intermediate_size": f.d_ff,
           "mlp_hidden_act": _HF_ACT[f.activation], "mlp_bias": f.bias}
    if (m := s.mixer) is not None:
        out.update({"mamba_num_heads": m.n_heads, "mamba_head_dim": m.head_dim,
                    "ssm_state_size": m.d_state, "n_groups": m.n_groups,
                    "conv_kernel": m.conv_kernel, "chunk_size": m.chunk_size,
                    "use_conv_bias": m.conv_bias, "use_bias": m.proj_bias,
                    "time_step_min": m.dt_limit_min, "mamba_hidden_act": "silu"})
    return out
