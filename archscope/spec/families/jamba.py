"""Jamba (transformers' `jamba`, JambaForCausalLM) config.json <-> spec, both directions.

Jamba interleaves Mamba-1 and attention layers, every layer with an FFN (its norms
input_layernorm and pre_ff_layernorm, RMSNorms with rms_norm_eps):

- layer i attends when i % attn_layer_period == attn_layer_offset, else runs the Mamba-1 mixer
  `mamba` (JambaMambaMixer: keys mamba_*, as spec/mamba1.py's table says), whose dt, B and C
  are RMS-normalised WITH weights (dt_layernorm, b_layernorm, c_layernorm; eps rms_norm_eps):
  the mixer's dt_bc_norm weighted;
- the attention is GQA (num_attention_heads, num_key_value_heads, head_dim = hidden_size //
  heads unless the file sets head_dim) without biases and without any positional encoding
  (JambaAttention applies no RoPE: position.kind none);
- layer i's FFN is the MoE when i % expert_layer_period == expert_layer_offset and num_experts
  > 1 (JambaSparseMoeBlock: a router `router`, softmax over all experts in fp32, top-k, the
  chosen weights NOT renormalised; fused experts of intermediate_size, no shared expert), else
  a SwiGLU MLP of intermediate_size; both with hidden_act, which is also the Mamba conv's
  activation, so it must be silu.

In a spec: the model's mixer is the Mamba-1 mixer, attention layers say `mixer: attention`;
the model's ffn is the MoE where there is one, the MLP layers replace it with the SwiGLU.
Read by no module: use_mamba_kernels, use_mambapy, use_associative_scan (implementations of
the same scan), router_aux_loss_coef, output_router_logits (training), the token ids.
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import Family, frozen, rules
from archscope.spec.families.mamba import auto_rank, silu_conv
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _act, _heads, _select
from archscope.spec.schema import ModelSpec


def _period(c: Keys, name: str, n: int) -> list[int]:
    """The layers {name}_layer_period / _offset pick, as JambaConfig.validate_architecture
    checks them (offset below period)."""
    period = c.size(f"{name}_layer_period")
    offset = c.size(f"{name}_layer_offset", least=0)
    if offset >= period:
        raise c.error(f"{name}_layer_offset", f"must be below {name}_layer_period ({period}), "
                                              f"{what(offset)}; transformers refuses it")
    return [i for i in range(n) if i % period == offset]


def read(c: Keys) -> dict:
    d, n = c.size("hidden_size"), c.size("num_hidden_layers")
    silu_conv(c)
    heads, kv, head_dim = _heads(c, d)
    swiglu = {"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": _act(c)}
    attends = _period(c, "attn", n)
    experts, k = c.size(c.alias("num_experts", "num_local_experts")), c.size("num_experts_per_tok")
    routed = _period(c, "expert", n) if experts > 1 else []
    if routed and k > experts:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed num_experts "
                                             f"({experts})")
    moe = {"kind": "moe", "activation": swiglu["activation"], "n_experts": experts, "top_k": k,
           "d_expert": swiglu["d_ff"], "router": {"normalize": False}}
    out = {"vocab_size": c.size("vocab_size"), "d_model": d, "n_layers": n,
           "max_seq_len": c.size("max_position_embeddings"),
           "tie_embeddings": c.flag("tie_word_embeddings"),
           "norm": {"kind": "rmsnorm", "eps": c.number("rms_norm_eps"), "position": "pre"},
           "position": {"kind": "none"},
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim},
           "ffn": moe if routed else swiglu}
    layers = []
    if len(attends) < n:
        out["mixer"] = {"kind": "mamba1", "d_inner": c.size("mamba_expand") * d,
                        "d_state": c.size("mamba_d_state"),
                        "dt_rank": auto_rank(c, "mamba_dt_rank", d),
                        "conv_kernel": c.size("mamba_d_conv"),
                        "conv_bias": c.flag("mamba_conv_bias"),
                        "proj_bias": c.flag("mamba_proj_bias"), "dt_bc_norm": "weighted",
                        "dt_bc_norm_eps": out["norm"]["eps"]}
        if attends:
            layers.append({"select": _select(attends), "mixer": "attention"})
    dense = [i for i in range(n) if i not in routed]
    if routed and dense:
        layers.append({"select": _select(dense), "ffn": swiglu})
    return {**out, **({"layers": layers} if layers else {})}


def _pattern(s: ModelSpec, picked: list[int], key: str) -> tuple[int, int]:
    """(period, offset) picking exactly the layers `picked` (none: a period past the last)."""
    n = s.n_layers
    if not picked:
        return n + 1, n
    period = picked[1] - picked[0] if len(picked) > 1 else max(n, picked[0] + 1)
    offset = picked[0] % period
    if [i for i in range(n) if i % period == offset] != picked:
        raise SpecError(f"transformers' Jamba places these layers every {key}_layer_period "
                        f"from {key}_layer_offset; layers {picked} are no such pattern",
                        key="layers")
    return period, offset


def write(s: ModelSpec) -> dict:
    """JambaConfig's keys for `s`; what Jamba cannot build is named here or by the read-back
    comparison in hf_export."""
    a, m = s.attention, s.mixer
    if any(layer.ffn is None or layer.mixer is None for layer in s.plan):
        raise SpecError("transformers' Jamba layers each have a mixer and an FFN", key="layers")
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    dense = next((layer.ffn for layer in s.plan if not layer.is_moe), None)
    width = (moe or dense).d_expert if moe else dense.d_ff
    if moe is not None and dense is not None and dense.d_ff != moe.d_expert:
        raise SpecError(f"transformers' Jamba sizes its MLP and its experts alike "
                        f"(intermediate_size); here {dense.d_ff} and {moe.d_expert}",
                        key="ffn.d_expert")
    if (moe or dense).activation != "silu":
        raise SpecError("transformers' Jamba runs its Mamba conv with hidden_act, the FFN's "
                        f"activation, and archscope's with silu; here {(moe or dense).activation}",
                        key="ffn.activation")
    attn_period, attn_offset = _pattern(s, [l.index for l in s.plan if l.attention], "attn")
    exp_period, exp_offset = _pattern(s, [l.index for l in s.plan if l.is_moe], "expert")
    out = {"vocab_size": s.vocab_size, "hidden_size": s.d_model, "num_hidden_layers": s.n_layers,
           "max_position_embeddings": s.max_seq_len, "tie_word_embeddings": s.tie_embeddings,
           "rms_norm_eps": s.norm.eps, "num_attention_heads": a.n_heads,
           "num_key_value_heads": a.kv_heads, "head_dim": a.head_dim,
           "intermediate_size": width, "hidden_act": "silu",
           "num_experts": moe.n_experts if moe else 1,
           "num_experts_per_tok": moe.top_k if moe else 1,
           "attn_layer_period": attn_period, "attn_layer_offset": attn_offset,
           "expert_layer_period": exp_period, "expert_layer_offset": exp_offset,
           "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    if m is not None:
        if m.d_inner % s.d_model:
            raise SpecError(f"transformers sizes Jamba's mixer as mamba_expand (an integer) * "
                            f"hidden_size; d_inner {m.d_inner} is no multiple of d_model "
                            f"{s.d_model}", key="mixer.d_inner")
        if m.dt_bc_norm_eps != s.norm.eps:
            raise SpecError("transformers' Jamba normalises dt, B and C with rms_norm_eps, the "
                            f"model's norm eps ({s.norm.eps}), not {m.dt_bc_norm_eps}",
                            key="mixer.dt_bc_norm_eps")
        out.update({"mamba_expand": m.d_inner // s.d_model, "mamba_d_state": m.d_state,
                    "mamba_dt_rank": m.dt_rank, "mamba_d_conv": m.conv_kernel,
                    "mamba_conv_bias": m.conv_bias, "mamba_proj_bias": m.proj_bias})
    return out


_L = "model.layers.{i}"
_MAMBA = ("conv1d.{p}", "in_proj.{p}", "x_proj.weight", "dt_proj.{p}", "A_log", "D",
          "out_proj.{p}", "dt_layernorm.weight", "b_layernorm.weight", "c_layernorm.weight")
WEIGHTS = rules(
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    (f"{_L}.input_layernorm.weight", "layers.{i}.input_layernorm.weight"),
    (f"{_L}.pre_ff_layernorm.weight", "layers.{i}.post_attention_layernorm.weight"),
    *[(f"{_L}.self_attn.{p}_proj.weight", f"layers.{{i}}.self_attn.{p}_proj.weight")
      for p in "qkvo"],
    *[(f"{_L}.mamba.{name}", f"layers.{{i}}.mixer.{name}") for name in _MAMBA],
    *[(f"{_L}.feed_forward.{p}.weight", f"layers.{{i}}.mlp.{p}.weight")
      for p in ("gate_proj", "up_proj", "down_proj")],
    (f"{_L}.feed_forward.router.weight", "layers.{i}.mlp.gate.weight"),
    *[(f"{_L}.feed_forward.experts.{p}", f"layers.{{i}}.mlp.experts.{p}")
      for p in ("gate_up_proj", "down_proj")],
    ("model.final_layernorm.weight", "norm.weight"),
    ("lm_head.weight", "lm_head.weight"))
_FUSED = f"{_L}.feed_forward.experts"

JAMBA = Family(
    "jamba", "JambaForCausalLM", read=read, write=write,
    exports=lambda s: s.mixer is not None and s.mixer.kind == "mamba1"
    and s.mixer.dt_bc_norm == "weighted",
    ffns=("swiglu", "moe"), mixers=("mamba1",), weights=WEIGHTS,
    # AI21's files hold one gate/up/down tensor per expert (transformers' conversion fuses them)
    per_expert=((f"{_L}.feed_forward.experts.{{j}}.gate_proj.weight", f"{_FUSED}.gate_up_proj",
                 0, 2),
                (f"{_L}.feed_forward.experts.{{j}}.up_proj.weight", f"{_FUSED}.gate_up_proj",
                 1, 2),
                (f"{_L}.feed_forward.experts.{{j}}.down_proj.weight", f"{_FUSED}.down_proj",
                 0, 1)),
    spec_keys=frozen({
        "vocab_size": "vocab_size", "d_model": "hidden_size", "n_layers": "num_hidden_layers",
        "max_seq_len": "max_position_embeddings", "tie_embeddings": "tie_word_embeddings",
        "norm.eps": "rms_norm_eps", "attention.n_heads": "num_attention_heads",
        "attention.n_kv_heads": "num_key_value_heads", "attention.head_dim": "head_dim",
        "ffn.d_ff": "intermediate_size", "ffn.d_expert": "intermediate_size",
        "ffn.n_experts": "num_experts", "ffn.top_k": "num_experts_per_tok",
        "ffn.activation": "hidden_act", "mixer": "attn_layer_period",
        "layers": "attn_layer_period", "mixer.d_inner": "mamba_expand",
        "mixer.d_state": "mamba_d_state", "mixer.dt_rank": "mamba_dt_rank",
        "mixer.conv_kernel": "mamba_d_conv", "mixer.conv_bias": "mamba_conv_bias",
        "mixer.proj_bias": "mamba_proj_bias", "mixer.dt_bc_norm_eps": "rms_norm_eps"}),
    key_fields=frozen({"mamba_d_state": "d_state", "mamba_dt_rank": "dt_rank",
                       "mamba_d_conv": "conv_kernel", "mamba_expand": "d_inner",
                       "attn_layer_period": "n_layers", "attn_layer_offset": "n_layers",
                       "expert_layer_period": "n_layers", "expert_layer_offset": "n_layers"}),
    names=("jamba",), usual={"jamba": "jamba-mini-1.7"},
    doc="Mamba-1 (weighted dt/B/C norms) and attention layers (no RoPE), each with an MLP or MoE")
FAMILIES = (JAMBA,)
