"""llama.cpp's GGUF types and its K-quant mixes (Q8_0, Q6_K, Q5_K_M, Q4_K_M), tensor by tensor.

Block layouts (ggml/src/ggml-common.h, github.com/ggml-org/llama.cpp, commit 01243c58):
  Q8_0  32 values: fp16 scale + 32 int8                                  = 34 B  (8.5 bpw)
  Q4_K  256 values: fp16 d, dmin + 12 B of 6-bit scales/mins + 128 B     = 144 B (4.5 bpw)
  Q5_K  256 values: fp16 d, dmin + 12 B scales + 32 B high bits + 128 B  = 176 B (5.5 bpw)
  Q6_K  256 values: 128 B low bits + 64 B high bits + 16 B scales + fp16 = 210 B (6.5625 bpw)
  Q5_0  32 values: fp16 + 4 B high bits + 16 B = 22 B; Q5_1: + fp16 min  = 24 B
Which tensor gets which type: src/llama-quant.cpp (commit 007dbbf3), as facts:
- only 2-D/3-D tensors whose name ends in "weight" are quantized; norms, 1-D tensors, biases,
  the MoE router (ffn_gate_inp) and position embeddings stay as convert_hf_to_gguf.py wrote
  them: F32 ("Some tensor types are always in float32");
- the file type's default: Q8_0 -> Q8_0, Q6_K -> Q6_K, Q5_K_M -> Q5_K, Q4_K_M -> Q4_K;
- output.weight (the head; the token embedding when tied) -> Q6_K, or Q8_0 when its row length
  is not a multiple of the default type's block (or the default is Q8_0);
- attn_v / attn_qkv / attn_kv_b ("attn_v-like"), counted in file order, and ffn_down (routed,
  shared and dense alike), by layer: Q6_K in Q4_K_M and Q5_K_M when use_more_bits(i, n):
  i < n/8 or i >= 7n/8 or (i - n/8) % 3 == 2 (integer division);
- 8-expert models (Mixtral): attn_v and attn_k -> Q8_0, and in Q4_K_M attn_output -> Q5_K;
- a row length that the chosen type's block does not divide falls back: Q4_K -> Q5_0,
  Q5_K -> Q5_1, Q6_K -> Q8_0, then F16 if even that block does not divide it.
Not modelled: Llama-70B's attn_v bump (LLM_TYPE_70B: Q4_K -> Q5_K on the layers without
use_more_bits), Falcon's rules, importance-matrix-only types, and the file's metadata and
tokenizer (a few MB: the tests compare with a published file size and allow for them).
"""

from __future__ import annotations

from archscope.estimate.storage import F16, F32, Storage
from archscope.estimate.tensors import Tensor
from archscope.spec import ModelSpec

Q8_0 = Storage("q8_0", block=32, block_bits=34 * 8)
Q4_K = Storage("q4_K", block=256, block_bits=144 * 8)
Q5_K = Storage("q5_K", block=256, block_bits=176 * 8)
Q6_K = Storage("q6_K", block=256, block_bits=210 * 8)
Q5_0 = Storage("q5_0", block=32, block_bits=22 * 8)
Q5_1 = Storage("q5_1", block=32, block_bits=24 * 8)
FALLBACK = {"q4_K": Q5_0, "q5_K": Q5_1, "q6_K": Q8_0}

# File type -> the type most tensors get.
DEFAULT = {"q8_0": Q8_0, "q6_k": Q6_K, "q5_k_m": Q5_K, "q4_k_m": Q4_K}
MORE_BITS = ("q4_k_m", "q5_k_m")  # the mixes that give some attn_v and ffn_down Q6_K

# archscope module name -> llama.cpp's tensor category (llama-quant.cpp tensor_get_category).
# A fused gate_up_proj is stored as ffn_up (Phi-3's GGUF layout); MLA's q_a/q_b/kv_a are "other".
CATEGORY = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "qkv_proj": "attn_qkv",
            "kv_b_proj": "attn_kv_b", "o_proj": "attn_output", "gate_proj": "ffn_gate",
            "up_proj": "ffn_up", "gate_up_proj": "ffn_up", "down_proj": "ffn_down"}
ATTN_V_LIKE = ("attn_v", "attn_qkv", "attn_kv_b")


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's choice of the layers that get more bits: the first and last eighth, and every
    third layer in between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _category(t: Tensor) -> str:
    if t.role == "embedding":
        return "token_embd"
    if t.role == "lm_head":
        return "output"
    return CATEGORY.get(t.kind, "other")


def _fallback(storage: Storage, cols: int) -> Storage:
    """A type whose block does not divide the row length is swapped as llama.cpp does."""
    if storage.divides(cols):
        return storage
    alt = FALLBACK.get(storage.name, F16)  # llama.cpp has no fallback for Q8_0: F16 here
    return alt if alt.divides(cols) else F16


def _mixed(ftype: str, t: Tensor, category: str, n_expert: int, wv: tuple[int, int],
           n_layers: int) -> Storage:
    """The type llama_tensor_get_type_impl picks for one quantizable tensor; `wv` is this
    tensor's place among the attn_v-like tensors and their count."""
    default, more = DEFAULT[ftype], ftype in MORE_BITS
    if category == "output":
        return Q8_0 if default is Q8_0 or not default.divides(t.cols) else Q6_K
    if category in ATTN_V_LIKE:
        if n_expert == 8:  # "for the 8-expert model, bumping this to Q8_0 trades just ~128MB"
            return Q8_0
        return Q6_K if more and use_more_bits(*wv) else default
    if category == "attn_k" and n_expert == 8:
        return Q8_0
    if category == "ffn_down" and more and use_more_bits(t.layer, n_layers):
        return Q6_K
    if category == "attn_output" and n_expert == 8 and ftype == "q4_k_m":
        return Q5_K
    return default


def gguf_storage(ftype: str, spec: ModelSpec, tensors: list[Tensor]) -> list[Storage]:
    """One Storage per tensor for GGUF file type `ftype` ('q4_k_m', 'q5_k_m', 'q6_k', 'q8_0')."""
    n_expert = max((getattr(p.ffn, "n_experts", None) or 0) for p in spec.plan)
    tied = not any(t.role == "lm_head" for t in tensors)
    n_wv = sum(_category(t) in ATTN_V_LIKE for t in tensors)
    i_wv, out = 0, []
    for t in tensors:
        if t.role in ("norms", "biases", "router", "positional") or t.rows == 1:
            out.append(F32)  # never quantized, and written as F32 by the converter
            continue
        category = _category(t)
        if category == "token_embd" and tied:
            category = "output"  # a tied embedding is quantized as the head would be
        chosen = _mixed(ftype, t, category, n_expert, (i_wv, n_wv), spec.n_layers)
        i_wv += category in ATTN_V_LIKE
        out.append(_fallback(chosen, t.cols))
    return out
