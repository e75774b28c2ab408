"""Gemma (transformers' `gemma`, GemmaForCausalLM): Llama (attention_bias covers q, k, v and o;
the MLP has none) whose RMSNorms scale by (1 + weight) (norm.unit_offset), whose embeddings are
scaled by sqrt(hidden_size) (multipliers.embedding) and whose gated MLP is GeGLU with the tanh
GELU: GemmaConfig reads the releases' legacy hidden_act "gelu" as gelu_pytorch_tanh. A file
without head_dim takes the class's 256. Bidirectional attention is refused."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families._dense import class_head_dim
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    if c.flag("use_bidirectional_attention", null=True):
        raise c.error("use_bidirectional_attention", "archscope models causal decoders only")
    out = class_head_dim(c, read_llama(c, bias=("attention_bias",)))
    # GemmaConfig.__post_init__ reads the releases' "gelu" as gelu_pytorch_tanh
    act = "gelu_tanh" if c.get("hidden_act") == "gelu" else out["ffn"]["activation"]
    ffn = {"kind": "geglu", "d_ff": out["ffn"]["d_ff"]} if act == "gelu_tanh" else {}
    return {**_patch(out, norm={"unit_offset": True}, ffn=ffn),
            # transformers: hidden_size**0.5, a Python float (stored in fp32, as archscope
            # multiplies)
            "multipliers": {"embedding": out["d_model"] ** 0.5}}


def write(s: ModelSpec) -> dict:
    if s.mults.embedding != s.d_model ** 0.5:
        raise SpecError(f"Gemma scales embeddings by sqrt(hidden_size) = {s.d_model ** 0.5!r} "
                        f"exactly, not {s.mults.embedding!r}", key="multipliers.embedding")
    return without(write_llama(s), "mlp_bias")


GEMMA = LLAMA.but(
    "gemma", "GemmaForCausalLM", read=read, write=write,
    exports=lambda s: bool(s.norm.unit_offset) and s.norm.position == "pre",
    spec_keys=LLAMA.key_table(**{"multipliers.embedding": "hidden_size"}), names=("gemma",),
    doc="Llama + (1 + w) RMSNorm + sqrt(d) embedding scale + GeGLU")
FAMILIES = (GEMMA,)
