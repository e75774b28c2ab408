"""Qwen2-MoE (transformers' `qwen2_moe`, Qwen1.5-MoE and Qwen2-57B-A14B): Qwen2's attention
(q/k/v bias switched by `qkv_bias`, never on o_proj) + Mixtral's MoE names + one shared expert of
shared_expert_intermediate_size behind a sigmoid gate (Qwen3-Next's: n_shared_experts 1,
d_shared, shared_gate), on the layers decoder_sparse_step and mlp_only_layers pick (the others a
dense MLP of intermediate_size). The router: softmax over the logits, top-k, renormalised only
when norm_topk_prob (default false).

Qwen2MoeConfig's own window rule: with layer_types absent, layer i slides when i is EVEN and
below max_window_layers and use_sliding_window (Qwen2's slides from max_window_layers on); and
sliding_window reads as 0 unless use_sliding_window.
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.deepseek_v2 import PER_EXPERT
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.mixtral import MOE_WEIGHTS
from archscope.spec.families.qwen2 import QWEN2
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _check_types, _patch, _select
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec


def windows(c: Keys, out: dict) -> dict:
    """The sliding layers by Qwen2MoeConfig's rule (see the module doc)."""
    n = out["n_layers"]
    # 0: what Qwen2MoeConfig saves when use_sliding_window is false
    window, first = c.size("sliding_window", null=True, least=0), c.size("max_window_layers",
                                                                         least=0)
    on = c.flag("use_sliding_window")
    if on and window == 0:
        raise c.error("sliding_window", "is 0 with use_sliding_window true: the window would "
                                        "mask every key")
    window = window or None
    types = c.get("layer_types", None)
    if types is None:
        types = ["sliding_attention" if (i + 1) % 2 and i < first and on else "full_attention"
                 for i in range(n)]
    _check_types(c, types, n)
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    if sliding and (not on or window is None):
        raise c.error("layer_types", f"marks layer {sliding[0]} sliding_attention, but "
                                     "use_sliding_window is false or sliding_window null: "
                                     "Qwen2MoeConfig then sets the window to 0, which masks "
                                     "every key; archscope refuses it")
    if sliding and len(sliding) == n:
        return _patch(out, attention={"window": window})
    if sliding:
        out["layers"] = [{"select": _select(sliding), "attention": {"window": window}}]
    return out


def moe_layers(c: Keys, n: int, experts: str = "num_experts") -> list[int]:
    """The dense layers by Qwen2MoeDecoderLayer's rule: MoE when the layer is not in
    mlp_only_layers, num_experts > 0 and (i + 1) % decoder_sparse_step == 0."""
    n_experts = c.size(experts, least=0)
    step, only = c.size("decoder_sparse_step"), c.indices("mlp_only_layers", n)
    return [i for i in range(n) if i in only or not n_experts or (i + 1) % step]


def read(c: Keys) -> dict:
    out = read_llama(c, bias=())
    if c.flag("qkv_bias"):
        out = _patch(out, attention={"bias": True, "out_bias": False})
    out = windows(c, out)
    n = out["n_layers"]
    dense = moe_layers(c, n)
    if len(dense) == n:
        return out
    experts, k = c.size("num_experts"), c.size("num_experts_per_tok")
    if k > experts:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed num_experts ({experts})")
    mlp = out["ffn"]
    out["ffn"] = {"kind": "moe", "activation": _act(c), "n_experts": experts, "top_k": k,
                  "d_expert": c.size("moe_intermediate_size"), "n_shared_experts": 1,
                  "d_shared": c.size("shared_expert_intermediate_size"), "shared_gate": True,
                  "router": {"normalize": c.flag("norm_topk_prob")}}
    if dense:
        out.setdefault("layers", []).append({"select": _select(dense), "ffn": mlp})
    return out


def write(s: ModelSpec) -> dict:
    """Qwen2MoeConfig's keys for `s`: dense layers as mlp_only_layers (decoder_sparse_step 1),
    the windows as layer_types; what the class cannot build comes back different from the
    read-back (the exporter names the key)."""
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    if moe is not None and moe.shared_experts != 1:
        raise SpecError("transformers' Qwen2Moe has exactly one shared expert; n_shared_experts "
                        f"is {moe.shared_experts}", key="ffn.n_shared_experts")
    dense = [layer.index for layer in s.plan if not layer.is_moe]
    window = next((layer.window for layer in s.plan if layer.window), None)
    a = s.attention
    out = {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim, "qkv_bias": a.bias,
           "hidden_act": HF_ACT[(moe or s.plan[0].ffn).activation],
           "decoder_sparse_step": 1, "mlp_only_layers": dense,
           "num_experts": moe.n_experts if moe else 0,
           "use_sliding_window": window is not None, "sliding_window": window,
           "max_window_layers": s.n_layers,
           "layer_types": [layer.layer_type for layer in s.plan]}
    if dense:
        out["intermediate_size"] = s.plan[dense[0]].ffn.d_ff
    if moe is not None:
        out.update({"num_experts_per_tok": moe.top_k, "moe_intermediate_size": moe.d_expert,
                    "shared_expert_intermediate_size": moe.shared_width,
                    "norm_topk_prob": moe.routing.normalize})
    return out


def _claims(s: ModelSpec) -> bool:
    """A MoE whose shared experts are gated (Qwen3-Next's class, which also has one, builds
    only hybrids)."""
    return any(layer.is_moe and layer.ffn.shared_gate for layer in s.plan)


# Llama's names + Mixtral's MoE names + the shared expert (`shared_expert`, archscope's
# `shared_experts`) and its gate; dense layers use Llama's mlp names. Published checkpoints keep
# one tensor per expert (DeepSeek's spelling), merged while loading.
SHARED_EXPERT_WEIGHTS = rules(
    *[(f"model.layers.{{i}}.mlp.shared_expert.{proj}.weight",
       f"layers.{{i}}.mlp.shared_experts.{proj}.weight")
      for proj in ("gate_proj", "up_proj", "down_proj")],
    ("model.layers.{i}.mlp.shared_expert_gate.weight", "layers.{i}.mlp.shared_expert_gate.weight"),
)
QWEN2_MOE = QWEN2.but(
    "qwen2_moe", "Qwen2MoeForCausalLM", read=read, write=write, exports=_claims,
    ffns=("moe", "swiglu"), weights=LLAMA.weights + MOE_WEIGHTS + SHARED_EXPERT_WEIGHTS,
    per_expert=PER_EXPERT,
    spec_keys=QWEN2.key_table(**{
        "attention.bias": "qkv_bias", "attention.out_bias": "qkv_bias",
        "ffn.n_experts": "num_experts", "ffn.d_expert": "moe_intermediate_size",
        "ffn.d_shared": "shared_expert_intermediate_size",
        "ffn.router.normalize": "norm_topk_prob", "layers": "mlp_only_layers"}),
    key_fields=QWEN2.field_table(shared_expert_intermediate_size="d_shared"),
    names=("qwen",), doc="Qwen2 + MoE with one sigmoid-gated shared expert")
FAMILIES = (QWEN2_MOE,)
