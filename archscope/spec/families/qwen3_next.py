"""Qwen3-Next (transformers' qwen3_next, Qwen3NextForCausalLM) config.json <-> spec, both ways.

Qwen3-Next = Qwen3-MoE's skeleton (per-head QK-norm, softmax top-k router renormalised or not
by norm_topk_prob, dense layers where mlp_only_layers / decoder_sparse_step say) with:
- a Gated DeltaNet state mixer (`mixer`, linear_* keys) on the `linear_attention` layers and
  attention on the `full_attention` ones (`layer_types`, else every full_attention_interval-th
  layer): in the spec, `mixer: attention` overrides on those layers;
- gated attention (attention.output_gate: q_proj twice as wide, a sigmoid gate per channel)
  rotating the first int(head_dim * partial_rotary_factor) dims of each head
  (attention.rotary_fraction; Qwen3NextConfig's default 0.25);
- every RMSNorm (QK-norm included) scaling by (1 + weight) (norm.unit_offset), except the
  DeltaNet's own gated norm, a plain weight (nn/gated_deltanet.py);
- one shared expert of shared_expert_intermediate_size (n_shared_experts 1, d_shared when it is
  not moe_intermediate_size) behind a sigmoid gate (ffn.shared_gate).
The checkpoints ship multi-token-prediction weights (`mtp.*`), which Qwen3NextConfig has no key
for: `num_nextn_predict_layers` is read (absent: 0) and written when the spec has some.
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.deepseek_v2 import PER_EXPERT
from archscope.spec.families.gpt_oss import sliding_select
from archscope.spec.families.mixtral import MOE_WEIGHTS
from archscope.spec.families.qwen3 import QWEN3
from archscope.spec.families.qwen3_moe import QWEN3_MOE
from archscope.spec.gated_deltanet import HF_KEYS as MIXER_KEYS
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import (_act, _base, _check_types, _heads, _select,
                                           class_default, rotary_fraction)
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec

_PARTIAL, _PARTIAL_DEFAULT = "partial_rotary_factor", 0.25  # Qwen3NextConfig.__post_init__'s
_INTERVAL, _INTERVAL_DEFAULT = "full_attention_interval", 4  # the same (popped, no field)
_TYPES = ("linear_attention", "full_attention")
MTP_KEY = "num_nextn_predict_layers"  # no Qwen3NextConfig field: the checkpoints' own key


def _layer_types(c: Keys, n: int) -> list[str]:
    types = c.get("layer_types", None)
    if types is None:  # Qwen3NextConfig's rule: layer i attends when (i + 1) % interval == 0
        interval = (c.size(_INTERVAL) if _INTERVAL in c.raw
                    else class_default(c, _INTERVAL, _INTERVAL_DEFAULT))
        types = [_TYPES[(i + 1) % interval == 0] for i in range(n)]
    _check_types(c, types, n, _TYPES, "Qwen3-Next's two layer types")
    return types


def _ffn(c: Keys, n: int) -> tuple[dict | None, dict | None, list[int]]:
    """(the dense MLP, the MoE, the dense layers) by Qwen3NextDecoderLayer's rule: MoE when the
    layer is not in mlp_only_layers, num_experts > 0 and (i + 1) % decoder_sparse_step == 0.
    intermediate_size sizes the dense layers only (none: not read, so no default is noted)."""
    experts = c.size("num_experts", least=0)
    step, only = c.size("decoder_sparse_step"), c.indices("mlp_only_layers", n)
    dense = [i for i in range(n) if i in only or not experts or (i + 1) % step]
    act = _act(c)
    mlp = {"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": act} \
        if dense else None
    if len(dense) == n:
        return mlp, None, dense
    k = c.size("num_experts_per_tok")
    if k > experts:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed num_experts ({experts})")
    return mlp, {"kind": "moe", "activation": act, "n_experts": experts, "top_k": k,
                 "d_expert": c.size("moe_intermediate_size"), "n_shared_experts": 1,
                 "d_shared": c.size("shared_expert_intermediate_size"), "shared_gate": True,
                 "router": {"normalize": c.flag("norm_topk_prob")}}, dense


def read(c: Keys) -> dict:
    return read_hybrid(c, _ffn)


def read_hybrid(c: Keys, ffn, projections: str = "fused", mtp_key: str = MTP_KEY,
                rope_elsewhere: tuple[str, ...] = ()) -> dict:
    """Qwen3-Next's reader with the FFN read by `ffn(c, n)` -> (dense MLP, MoE, dense layers),
    the DeltaNet's `projections` layout, the MTP depth under `mtp_key` and RoPE keys read (or
    left, as equal on text) elsewhere: what Qwen3.5's text models change."""
    base = _base(c, read_elsewhere=(_PARTIAL, *rope_elsewhere))
    base["norm"]["unit_offset"] = True  # Qwen3NextRMSNorm: (1 + weight), every one of them
    heads, kv, head_dim = _heads(c, base["d_model"])
    n = base["n_layers"]
    mixer = {"kind": "gated_deltanet", **{field: c.size(key) for key, field in MIXER_KEYS.items()},
             **({"projections": projections} if projections != "fused" else {})}
    if mixer["n_value_heads"] % mixer["n_key_heads"]:  # the fused projections' per-key layout
        raise c.error("linear_num_value_heads", f"must be a multiple of linear_num_key_heads "
                                                f"({mixer['n_key_heads']}), "
                                                f"{what(mixer['n_value_heads'])}")
    mlp, moe, dense = ffn(c, n)
    out = {**base, "mixer": mixer, "ffn": moe or mlp,
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim,
                         "bias": c.flag("attention_bias"), "qk_norm": "head",
                         "output_gate": True,
                         "rotary_fraction": rotary_fraction(c, _PARTIAL_DEFAULT)},
           "mtp_layers": c.size(mtp_key, least=0, fallback=0)}
    attends = [i for i, t in enumerate(_layer_types(c, n)) if t == "full_attention"]
    layers = []
    if len(attends) == n:  # no state mixer at all: a plain (gated) attention stack
        del out["mixer"]
    elif attends:  # (none: the spec's attention is then used by no layer, as the class's)
        layers.append({"select": sliding_select(attends, n), "mixer": "attention"})
    if dense and moe:
        layers.append({"select": _select(dense), "ffn": mlp})
    return {**out, "layers": layers} if layers else out


def write(s: ModelSpec) -> dict:
    return write_hybrid(s)


def write_hybrid(s: ModelSpec, mtp_key: str = MTP_KEY) -> dict:
    """Qwen3NextConfig's keys for `s` (Qwen3.5's text configs: the same, less what they drop);
    what the class cannot build comes back different from the read-back (the exporter names
    the key), except what must be refused first."""
    for layer in s.plan:
        if layer.mixer is None or layer.ffn is None:
            missing = "mixer" if layer.mixer is None else "FFN"
            raise SpecError(f"layer {layer.index} has no {missing}: every Qwen3-Next (and "
                            "Qwen3.5) layer has a mixer and an FFN", key="layers")
    if s.mixer is not None and s.mixer.kind != "gated_deltanet":
        raise SpecError(f"Qwen3-Next's state mixer is gated_deltanet, not {s.mixer.kind!r}",
                        key="mixer.kind")
    a = s.attention
    base = to_base(s)
    base["rope_parameters"][_PARTIAL] = a.rotary_fraction or 1.0
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    dense = [layer for layer in s.plan if not layer.is_moe]
    out = {**base, "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim, "attention_bias": a.bias,
           "hidden_act": HF_ACT[(moe or s.plan[0].ffn).activation],
           "layer_types": [_TYPES[layer.state is None] for layer in s.plan],
           "intermediate_size": dense[0].ffn.d_ff if dense else None,
           "decoder_sparse_step": 1, "mlp_only_layers": [layer.index for layer in dense],
           "num_experts": moe.n_experts if moe else 0}
    if s.mixer is not None:
        out.update({key: getattr(s.mixer, field) for key, field in MIXER_KEYS.items()})
    if out["intermediate_size"] is None:
        del out["intermediate_size"]  # no dense layer: the class default, which none uses
    if moe is not None:
        out.update({"num_experts_per_tok": moe.top_k, "moe_intermediate_size": moe.d_expert,
                    "shared_expert_intermediate_size": moe.shared_width,
                    "norm_topk_prob": moe.routing.normalize})
    if s.mtp_layers:
        out[mtp_key] = s.mtp_layers
    return out


# Weight names: Qwen3's (q/k/v/o_proj, q_norm, k_norm on the full_attention layers) + Mixtral's
# MoE names + the Gated DeltaNet under `linear_attn` (archscope's `mixer`: same module names,
# nn/gated_deltanet.py) + one shared expert, `shared_expert` (archscope's `shared_experts`, the
# name every MoE here uses), and its sigmoid gate `shared_expert_gate`. q_proj is twice as wide
# (query and gate rows per head) but keeps its name. Dense layers (mlp_only_layers) use Llama's
# mlp names. The published checkpoint's per-expert tensors are merged while loading; its
# `mtp.*` tensors are skipped (weights/validate.without_mtp) when the spec declares mtp_layers.
_LINEAR = "model.layers.{i}.linear_attn"
# rows of mapping._rules, added there to QWEN3 + MOE (kept as data, so this module need not
# import mapping, which lists it)
QWEN3_NEXT_ROWS = (
    *[(f"{_LINEAR}.{name}.weight", f"layers.{{i}}.mixer.{name}.weight")
      for name in ("in_proj_qkvz", "in_proj_ba", "conv1d", "norm", "out_proj")],
    *[(f"{_LINEAR}.{name}", f"layers.{{i}}.mixer.{name}") for name in ("dt_bias", "A_log")],
    *[(f"model.layers.{{i}}.mlp.shared_expert.{proj}.weight",
       f"layers.{{i}}.mlp.shared_experts.{proj}.weight")
      for proj in ("gate_proj", "up_proj", "down_proj")],
    ("model.layers.{i}.mlp.shared_expert_gate.weight", "layers.{i}.mlp.shared_expert_gate.weight"),
)


def _claims(s: ModelSpec) -> bool:
    return (s.mixer is not None and s.mixer.kind == "gated_deltanet"
            and s.mixer.projections == "fused")


QWEN3_NEXT = QWEN3_MOE.but(
    "qwen3_next", "Qwen3NextForCausalLM", read=read, write=write, exports=_claims,
    mixers=("gated_deltanet",), ffns=("moe", "swiglu"),
    weights=QWEN3.weights + MOE_WEIGHTS + rules(*QWEN3_NEXT_ROWS), per_expert=PER_EXPERT,
    spec_keys=QWEN3_MOE.key_table(**{
        "attention.rotary_fraction": "partial_rotary_factor",
        "ffn.d_shared": "shared_expert_intermediate_size", "layers": "layer_types",
        "mtp_layers": "num_nextn_predict_layers",
        **{f"mixer.{field}": key for key, field in MIXER_KEYS.items()}}),
    key_fields=QWEN3_MOE.field_table(**MIXER_KEYS, full_attention_interval="n_layers",
                                     shared_expert_intermediate_size="d_shared"),
    names=("qwen",), doc="Qwen3-MoE + Gated DeltaNet layers + gated attention")
FAMILIES = (QWEN3_NEXT,)
