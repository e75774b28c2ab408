"""K-EXAONE (transformers' `exaone_moe`, ExaoneMoeForCausalLM): dots.llm1's model (Qwen3's
per-head QK-norm, no attention bias; DeepSeek-V3's sigmoid MoE with num_shared_experts) with
EXAONE 4's hybrid attention: the `sliding_attention` layers attend in a window and rotate, and
when sliding_window is set the `full_attention` layers do not rotate (NoPE). The MoE layers are
those mlp_layer_types marks "sparse" (absent: from first_k_dense_replace on).

ExaoneMoeConfig derives layer_types, when absent, from sliding_window_pattern: layer i is
global when (i + 1) % pattern == 0. A string pattern ("LLLG", which its docstring offers) or a
null sliding_window then fails in transformers itself, and is refused here.
"""

from __future__ import annotations

from archscope.spec.families.base import frozen
from archscope.spec.families.deepseek_v2 import PER_EXPERT
from archscope.spec.families.deepseek_v3 import sigmoid_routed
from archscope.spec.families.dots1 import DOTS1, MOE_KEYS, moe_keys, sigmoid_moe, with_dense
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.qwen3 import QWEN3, head_norm
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _check_types, _patch, _select
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec

_MLP_TYPES = ("dense", "sparse")


def _layer_types(c: Keys, n: int, window: int | None) -> list[str]:
    types = c.get("layer_types", None)
    if types is None:
        if window is None:
            raise c.error("sliding_window", "is null and layer_types absent: ExaoneMoeConfig "
                                            "then divides by a pattern of 0")
        pattern = c.get("sliding_window_pattern")
        if isinstance(pattern, str) or pattern is None:
            raise c.error("sliding_window_pattern", f"without layer_types, ExaoneMoeConfig "
                                                    f"needs an integer period, {what(pattern)}")
        pattern = c.size("sliding_window_pattern")
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention"
                 for i in range(n)]
    _check_types(c, types, n)
    return types


def dense_layers(c: Keys, n: int, first: int | None = None) -> list[int]:
    """The layers mlp_layer_types marks "dense" (absent: the first `first`, else the first
    first_k_dense_replace)."""
    types = c.raw.get("mlp_layer_types")
    if types is None:
        k = c.size("first_k_dense_replace", least=0) if first is None else first
        return list(range(min(k, n)))
    _check_types(c, types, n, _MLP_TYPES, "dense or sparse")
    return [i for i, t in enumerate(types) if t == "dense"]


def read(c: Keys) -> dict:
    out = _patch(read_llama(c, bias=()), attention={"qk_norm": "head"})
    n = out["n_layers"]
    window = c.size("sliding_window", null=True)
    types = _layer_types(c, n, window)
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    if sliding and window is None:
        raise c.error("sliding_window", f"is null, but layer_types marks layer {sliding[0]} "
                                        "sliding_attention")
    if sliding and len(sliding) == n:
        out = _patch(out, attention={"window": window})
    elif sliding:
        out["layers"] = [{"select": _select(sliding), "attention": {"window": window}}]
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    if window is not None and full:  # global NoPE
        out.setdefault("layers", []).append({"select": _select(full),
                                             "attention": {"rope": False}})
    dense = dense_layers(c, n)
    moe = sigmoid_moe(c, experts="num_experts", shared="num_shared_experts") \
        if len(dense) < n else {}
    return with_dense(out, moe, dense)


def write(s: ModelSpec) -> dict:
    """ExaoneMoeConfig's keys for `s`: the window and which layers slide (the others NoPE when
    there is a window), which layers are MoE; the read-back names what it cannot hold."""
    a = s.attention
    window = next((layer.window for layer in s.plan if layer.window), None)
    moe = without(moe_keys(s), "first_k_dense_replace", "n_routed_experts", "n_shared_experts")
    first = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    if first is not None:
        moe.update(num_experts=first.n_experts, num_shared_experts=first.shared_experts)
    return {**without(QWEN3.write(s), "attention_bias", "layer_types", "sliding_window",
                      "use_sliding_window", "max_window_layers", "intermediate_size"),
            **moe, "sliding_window": window,
            "layer_types": [layer.layer_type for layer in s.plan],
            "mlp_layer_types": [_MLP_TYPES[layer.is_moe] for layer in s.plan],
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


EXAONE_MOE = DOTS1.but(
    "exaone_moe", "ExaoneMoeForCausalLM", read=read, write=write,
    exports=lambda s: head_norm(s) and sigmoid_routed(s) and any(
        layer.attention and not layer.attention.rope for layer in s.plan),
    ffns=("moe", "swiglu"),
    weights=DOTS1.weights, per_expert=PER_EXPERT,
    # K-EXAONE's files keep the correction bias beside the router, not in it
    renamed_tensors=(("model.layers.{i}.mlp.e_score_correction_bias",
                      "model.layers.{i}.mlp.gate.e_score_correction_bias"),),
    spec_keys=QWEN3.key_table(**{**MOE_KEYS, "ffn.n_experts": "num_experts",
                                             "ffn.n_shared_experts": "num_shared_experts",
                                             "attention.rope": "sliding_window",
                                             "layers": "layer_types"}),
    # ExaoneMoeConfig's defaults give its sliding layers a window of 4,096 in a context of
    # 2,048, which archscope refuses as a spec (a window longer than the context): the context
    # raised to the window
    default_fix=frozen({"max_position_embeddings": 4096}),
    doc="dots.llm1 + EXAONE 4's sliding layers with NoPE global layers")
FAMILIES = (EXAONE_MOE,)
