"""Arcee (transformers' `arcee`, ArceeForCausalLM, AFM-4.5B): Llama with a two-matrix MLP
instead of the gated one (up_proj, hidden_act, down_proj; mlp_bias): the squared ReLU of the
class default (ffn.kind relu2), any other activation an `mlp`. ArceeConfig refuses heads that
do not divide hidden_size."""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _ACT, _base, _heads
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec

_UNGATED = ("mlp", "relu2")


def read(c: Keys, refused_by: str | None = "ArceeConfig", mlp_bias: bool = True) -> dict:
    """`refused_by`: the config class refusing heads that do not divide the width; `mlp_bias`:
    whether the class reads that switch (else the MLP has no bias)."""
    base = _base(c)
    heads, kv, head_dim = _heads(c, base["d_model"], refused_by)
    act = c.text("hidden_act", ("relu2", *_ACT), noun="activation")
    return {**base,
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": head_dim, "bias": c.flag("attention_bias")},
            "ffn": {"kind": "relu2" if act == "relu2" else "mlp",
                    "d_ff": c.size("intermediate_size"),
                    "bias": c.flag("mlp_bias") if mlp_bias else False,
                    **({} if act == "relu2" else {"activation": _ACT[act]})}}


def write(s: ModelSpec) -> dict:
    a, f = s.attention, s.ffn
    return {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias, "intermediate_size": f.d_ff,
            "hidden_act": "relu2" if f.kind == "relu2" else HF_ACT[f.activation],
            "mlp_bias": f.bias}


def ungated(s: ModelSpec) -> bool:
    """RoPE attention and a two-matrix MLP in every layer."""
    return s.position.kind == "rope" and all(
        layer.attention is not None and layer.ffn is not None and layer.ffn.kind in _UNGATED
        for layer in s.plan)


ARCEE = LLAMA.but(
    "arcee", "ArceeForCausalLM", read=read, write=write, exports=ungated, ffns=_UNGATED,
    weights=tuple(r for r in LLAMA.weights if ".gate_proj." not in r.hf),
    names=("arcee",), doc="Llama + a two-matrix MLP (squared ReLU)")
FAMILIES = (ARCEE,)
