"""Cohere 2 MoE (transformers' `cohere2_moe`, Cohere2MoeForCausalLM; modular: Cohere 2's
attention and parallel block, Mixtral's experts): Cohere 2 (one norm feeding attention and the
FFN side by side, sliding layers with RoPE, global layers without, logits times logit_scale) +
a MoE FFN on the layers mlp_layer_types marks "sparse" (the others a dense MLP of
prefix_dense_intermediate_size, else intermediate_size).

Where it differs from Cohere 2 besides the MoE: head_dim is Cohere2MoeConfig's field (default
128), not hidden_size / heads; with rms_norm_eps set every norm is an RMSNorm (else Cohere's
LayerNorm without bias, layer_norm_eps); a dense layer also rotates on a global layer when
prefix_dense_sliding_window_pattern is 1 (Cohere2MoeAttention's force_rope); and with neither
layer_types nor mlp_layer_types in the file, the first `first_k_dense_replace` layers are dense
and follow prefix_dense_sliding_window_pattern, the rest sliding_window_pattern.

The MoE (Cohere2MoeSparseMoeBlock): num_experts experts of intermediate_size, the top
num_experts_per_tok logits weighed by their softmax (the chosen weights renormalised: a softmax
router's top-k, renormalised) or, with expert_selection_fn sigmoid, their sigmoids
(renormalised when norm_topk_prob); num_shared_experts shared experts (one MLP of
num_shared_experts * intermediate_size) added ("sum"), or averaged with the routed output
("average", Cohere2MoeConfig's default), which archscope's MoE cannot express.
"""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.cohere import logit_scale, write_base
from archscope.spec.families.cohere2 import COHERE2
from archscope.spec.families.deepseek_v2 import PER_EXPERT
from archscope.spec.families.mixtral import MOE_WEIGHTS
from archscope.spec.families.minimax_m2 import head_dims
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _check_types, _rope, _select
from archscope.spec.hf_writers_base import HF_ACT
from archscope.spec.schema import ModelSpec


def _types(c: Keys, n: int) -> tuple[list[str], list[str]]:
    """(layer_types, mlp_layer_types), by Cohere2MoeConfig.__post_init__'s rule where absent."""
    k = c.size("first_k_dense_replace", least=0, fallback=0)
    types = c.get("layer_types", None)
    if types is None:
        prefix = c.size("prefix_dense_sliding_window_pattern")
        pattern = c.size("sliding_window_pattern")
        types = ["sliding_attention" if (i + 1) % prefix else "full_attention"
                 for i in range(min(k, n))]
        types += ["sliding_attention" if (i + 1) % pattern else "full_attention"
                  for i in range(n - min(k, n))]
    _check_types(c, types, n)
    mlp = c.get("mlp_layer_types", None)
    if mlp is None:
        mlp = ["dense" if i < k else "sparse" for i in range(n)]
    if not isinstance(mlp, list) or len(mlp) != n or set(mlp) - {"dense", "sparse"}:
        raise c.error("mlp_layer_types", f"must list 'dense' or 'sparse' for each of the {n} "
                                         "layers")
    return types, mlp


def _moe(c: Keys) -> dict:
    n, k = c.size("num_experts"), c.size("num_experts_per_tok")
    if k > n:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed num_experts ({n})")
    shared = c.size("num_shared_experts", least=0)
    combine = c.text("shared_expert_combination_strategy", ("sum", "average"))
    if shared and combine == "average":
        raise c.error("shared_expert_combination_strategy",
                      "'average' halves the sum of the routed and the shared experts' outputs; "
                      "archscope's MoE adds them (the combination 'sum')")
    scoring = c.text("expert_selection_fn", ("softmax", "sigmoid"), noun="router scoring")
    router = ({"normalize": True} if scoring == "softmax" else
              {"scoring": "sigmoid", "normalize": c.flag("norm_topk_prob")})
    return {"kind": "moe", "activation": _act(c), "n_experts": n, "top_k": k,
            "d_expert": c.size("intermediate_size"), "n_shared_experts": shared,
            "router": router}


def read(c: Keys) -> dict:
    width = c.size("hidden_size")
    heads, kv, head_dim = head_dims(c, width)
    rms = c.number("rms_norm_eps", null=True)
    norm = ({"kind": "rmsnorm", "eps": rms} if rms is not None else
            {"kind": "layernorm", "eps": c.number("layer_norm_eps"), "bias": False})
    n = c.size("num_hidden_layers")
    types, mlp = _types(c, n)
    window = c.size("sliding_window", null=True)
    force = c.size("prefix_dense_sliding_window_pattern") == 1
    dense = [i for i in range(n) if mlp[i] == "dense"]
    out = {"vocab_size": c.size("vocab_size"), "d_model": width, "n_layers": n,
           "max_seq_len": c.size("max_position_embeddings"),
           "tie_embeddings": c.flag("tie_word_embeddings"),
           "norm": {**norm, "position": "parallel"},
           "position": {**_rope(c), "interleaved": True},
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                         "head_dim": head_dim, "bias": c.flag("attention_bias")},
           "ffn": _moe(c) if len(dense) < n else {},
           "multipliers": logit_scale(c)}
    d_ff = c.size("prefix_dense_intermediate_size", null=True) or c.size("intermediate_size")
    mlp_spec = {"kind": "swiglu", "d_ff": d_ff, "activation": _act(c)}
    if len(dense) == n:
        out["ffn"] = mlp_spec
    layers = [{"select": _select(dense), "ffn": mlp_spec}] if dense and len(dense) < n else []
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    if sliding and window is None:
        raise c.error("sliding_window", f"is null, but layer_types marks layer {sliding[0]} "
                                        "sliding_attention")
    nope = [i for i, t in enumerate(types) if t == "full_attention"
            and not (force and mlp[i] == "dense")]
    if sliding:
        layers.append({"select": _select(sliding), "attention": {"window": window}})
    if nope:
        layers.append({"select": _select(nope), "attention": {"rope": False}})
    if layers:
        out["layers"] = layers
    return out


def write(s: ModelSpec) -> dict:
    """Cohere2MoeConfig's keys, layer by layer (layer_types, mlp_layer_types); what the class
    cannot build comes back different from the read-back, which names the key."""
    a = s.attention
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    dense = [layer for layer in s.plan if not layer.is_moe]
    windows = [layer.window for layer in s.plan if layer.window]
    # force_rope: a dense global layer rotates when the prefix pattern is 1
    roped = any(layer.attention.rope for layer in dense if not layer.window)
    rms = s.norm.kind == "rmsnorm"
    out = {**write_base(s), "head_dim": a.head_dim,
           "rms_norm_eps": s.norm.eps if rms else None,
           "layer_norm_eps": 1e-5 if rms else s.norm.eps,
           "hidden_act": HF_ACT[(moe or dense[0].ffn).activation],
           "sliding_window": windows[0] if windows else None,
           "layer_types": ["sliding_attention" if layer.window else "full_attention"
                           for layer in s.plan],
           "mlp_layer_types": ["sparse" if layer.is_moe else "dense" for layer in s.plan],
           "prefix_dense_sliding_window_pattern": 1 if roped else 2,
           "prefix_dense_intermediate_size": dense[0].ffn.d_ff if dense else None,
           "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    if moe is None:
        return {**out, "intermediate_size": dense[0].ffn.d_ff}
    r = moe.routing
    return {**out, "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "intermediate_size": moe.d_expert, "num_shared_experts": moe.shared_experts,
            "shared_expert_combination_strategy": "sum", "expert_selection_fn": r.scoring,
            "norm_topk_prob": r.normalize}


def _claims(s: ModelSpec) -> bool:
    """A parallel block with MoE layers: only Cohere 2 MoE's class builds one."""
    return s.norm.position == "parallel" and any(layer.is_moe for layer in s.plan)


# Cohere 2's names + Mixtral's MoE names + the shared experts (DeepSeek's spelling)
COHERE2_MOE = COHERE2.but(
    "cohere2_moe", "Cohere2MoeForCausalLM", read=read, write=write, exports=_claims,
    ffns=("moe", "swiglu"), per_expert=PER_EXPERT,  # save_pretrained's per-expert names
    weights=COHERE2.weights + MOE_WEIGHTS + rules(
        *[(f"model.layers.{{i}}.mlp.shared_experts.{proj}.weight",
           f"layers.{{i}}.mlp.shared_experts.{proj}.weight")
          for proj in ("gate_proj", "up_proj", "down_proj")]),
    spec_keys=COHERE2.key_table(**{"ffn.n_experts": "num_experts",
                                   "ffn.d_expert": "intermediate_size",
                                   "ffn.n_shared_experts": "num_shared_experts",
                                   "ffn.router.normalize": "norm_topk_prob",
                                   "norm.eps": "rms_norm_eps"}),
    doc="Cohere 2 + MoE, RMSNorms with rms_norm_eps, dense layers that may rotate")
FAMILIES = (COHERE2_MOE,)
