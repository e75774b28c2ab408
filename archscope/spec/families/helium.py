"""Helium (transformers' `helium`, HeliumForCausalLM): Llama with RoPE on adjacent pairs
(position.interleaved) and an o_proj that never has a bias (attention_bias covers q, k and v
only). HeliumAttention builds o_proj as hidden_size x hidden_size, so the class runs only when
num_attention_heads * head_dim is hidden_size; HeliumConfig defaults head_dim to 128."""

from __future__ import annotations

from archscope.spec.families._dense import class_head_dim
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch


def read(c: Keys) -> dict:
    out = class_head_dim(c, read_llama(c))
    a = out["attention"]
    if a["n_heads"] * a["head_dim"] != out["d_model"]:
        raise c.error("head_dim", f"num_attention_heads x head_dim is {a['n_heads']} x "
                                  f"{a['head_dim']} = {a['n_heads'] * a['head_dim']}, not "
                                  f"hidden_size ({out['d_model']}): transformers' "
                                  "HeliumAttention builds o_proj as hidden_size x hidden_size "
                                  "and cannot run such a model")
    out = _patch(out, attention={"out_bias": False})
    return {**out, "position": {**out["position"], "interleaved": True}}


HELIUM = LLAMA.but("helium", "HeliumForCausalLM", read=read,
                   write=write_llama,  # Llama's keys; o_proj's missing bias is the class's
                   exports=lambda s: bool(s.position.interleaved), names=("helium",),
                   doc="Llama + RoPE on adjacent pairs + no o_proj bias")
FAMILIES = (HELIUM,)
