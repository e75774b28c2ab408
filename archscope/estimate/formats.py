"""Weight formats with their real storage cost, and one function that prices a model in one.

A format says how the tensors it quantizes are stored (storage.py: bits per block, scales and
zero points included) and which tensors it leaves in higher precision. The checkpoints people
ship keep the token embedding, the lm_head, every norm, bias and the MoE router in 16 bits:
- fp8 / int8 / int4-g128 / nvfp4 / mxfp4 quantize the decoder's linear layers (attention,
  FFN, routed and shared experts, and the linear layers of kinds added later), as llm-compressor
  recipes do (targets: Linear; ignore: lm_head and the router gate, e.g.
  huggingface.co/mgoin/Mixtral-8x7B-Instruct-v0.1-FP8 recipe.yaml) and ModelOpt NVFP4 does
  (hf_quant_config.json: exclude_modules lm_head; the router "mlp.gate" in
  huggingface.co/nvidia/DeepSeek-R1-NVFP4);
- fp8-block is DeepSeek-V3's checkpoint: the same layers, 128 x 128 fp32 scale tiles;
- mxfp4-experts is gpt-oss's checkpoint: ONLY the routed experts in MXFP4; attention, router,
  embeddings and head stay bf16 (transformers' MXFP4 docs, quantization_config
  modules_to_not_convert: self_attn, mlp.router, embed_tokens, lm_head);
- ternary is BitNet b1.58's checkpoint: the decoder's linear layers as -1/0/+1 packed four to
  a byte plus one bf16 scale per tensor (storage.TERNARY); embeddings, lm_head and norms bf16
  (transformers' BitNet quantizer converts nn.Linear modules only, and leaves lm_head out);
- q8_0 / q6_k / q5_k_m / q4_k_m are llama.cpp's GGUF files, typed tensor by tensor (gguf.py).
Weights only: the KV cache's dtype is a separate choice (estimate/kv_cache.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from archscope.estimate import storage as st
from archscope.estimate.gguf import DEFAULT as GGUF_DEFAULT, gguf_storage
from archscope.estimate.tensors import Tensor, weight_tensor_counts, weight_tensors
from archscope.spec import ModelSpec
from archscope.spec.weight_formats import (  # noqa: F401  (re-exported)
    ALIASES, NAMES, UnknownFormatError, canonical_format)

# Roles a linear-layer format leaves alone (vectors, norms and biases are never quantized).
HIGH_PRECISION = ("embedding", "positional", "lm_head", "router", "norms", "biases")


@dataclass(frozen=True)
class WeightFormat:
    name: str
    title: str
    storage: st.Storage  # what the tensors it quantizes are stored in (GGUF: the default type)
    keep: st.Storage = st.BF16  # what the rest stays in
    only: tuple[str, ...] | None = None  # quantize only these roles (gpt-oss: experts)
    keeps: str = "embeddings, lm_head, norms, biases, router"  # what stays in `keep`, for people
    assign: Callable | None = field(default=None, compare=False)  # (spec, tensors) -> storages

    def storages(self, spec: ModelSpec, tensors: list[Tensor]) -> list[st.Storage]:
        """The storage of each tensor, in order."""
        if self.assign is not None:
            return self.assign(spec, tensors)
        return [self.storage if self.quantizes(t) else self.keep for t in tensors]

    def quantizes(self, t: Tensor) -> bool:
        if t.role in ("norms", "biases") or t.rows == 1:
            return False
        return t.role in self.only if self.only is not None else t.role not in HIGH_PRECISION


def _plain(name: str, s: st.Storage) -> WeightFormat:
    return WeightFormat(name, f"every tensor in {name}", s, keep=s, only=(), keeps="nothing")


def _gguf(ftype: str, title: str) -> WeightFormat:
    return WeightFormat(ftype, title, GGUF_DEFAULT[ftype], keep=st.F32,
                        keeps="norms, biases, router in F32; the mix's Q6_K/Q8_0 tensors (gguf.py)",
                        assign=lambda spec, tensors: gguf_storage(ftype, spec, tensors))


FORMATS: dict[str, WeightFormat] = {f.name: f for f in (
    _plain("bf16", st.BF16), _plain("fp16", st.F16), _plain("fp32", st.F32),
    WeightFormat("fp8", "fp8 e4m3, one fp32 scale per tensor", st.FP8),
    WeightFormat("fp8-block", "fp8 e4m3, fp32 scale per 128x128 block (DeepSeek-V3)",
                 st.FP8_BLOCK),
    WeightFormat("int8", "int8, one 16-bit scale per output channel", st.INT8),
    WeightFormat("int4-g128", "int4, fp16 scale + 4-bit zero per 128 (GPTQ/AWQ)", st.INT4_G128,
                 keep=st.F16),
    WeightFormat("nvfp4", "e2m1, e4m3 scale per 16 + fp32 per tensor", st.NVFP4),
    WeightFormat("mxfp4", "e2m1, e8m0 scale per 32 (OCP MX)", st.MXFP4),
    WeightFormat("mxfp4-experts", "MXFP4 routed experts only, rest bf16 (gpt-oss)", st.MXFP4,
                 only=("experts",), keeps="everything but the routed experts"),
    WeightFormat("ternary", "ternary -1/0/+1, 4 per byte + bf16 scale per tensor (BitNet b1.58)",
                 st.TERNARY),
    _gguf("q8_0", "GGUF Q8_0"), _gguf("q6_k", "GGUF Q6_K"),
    _gguf("q5_k_m", "GGUF Q5_K_M (Q5_K, some Q6_K)"),
    _gguf("q4_k_m", "GGUF Q4_K_M (Q4_K, some Q6_K)"))}
# the names are the spec layer's (spec/weight_formats.py: a spec names its checkpoint's format)
if tuple(FORMATS) != NAMES:
    raise ImportError(f"estimate/formats.py prices {tuple(FORMATS)} but the spec layer names "
                      f"{NAMES}: the two lists must be the same")


def weight_format(name: str | WeightFormat) -> WeightFormat:
    """'Q4_K_M', 'nvfp4', 'gptq' -> the format; an unknown name lists the known ones."""
    if isinstance(name, WeightFormat):
        return name
    return FORMATS[canonical_format(name)]


@dataclass(frozen=True)
class FormatWeights:
    """A model's weights in one format: bytes in total, per role and per storage type."""

    model: str
    format: str
    total_bytes: int
    active_bytes: int  # what one token reads: top_k routed experts, everything else whole
    params: int
    by_role: dict[str, int] = field(hash=False)
    by_storage: dict[str, int] = field(hash=False)  # 'q4_K' -> bytes
    kept: tuple[str, ...] = ()  # this model's roles the format left in higher precision

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.total_bytes / self.params


def weights_in_format(spec: ModelSpec, fmt: str | WeightFormat) -> FormatWeights:
    """Price every stored tensor of `spec` in `fmt`: each tensor's bytes (Storage.nbytes: whole
    blocks per row, scales per row / tile / tensor) times its copies, summed by role and type."""
    fmt = weight_format(fmt)
    # a format that types tensors by their layer (GGUF's mixes: gguf.py) sees every layer; the
    # others price each distinct layer once, times the layers like it
    counted = [(t, 1) for t in weight_tensors(spec)] if fmt.assign is not None \
        else weight_tensor_counts(spec)
    tensors = [t for t, _ in counted]
    by_role: dict[str, int] = {}
    by_storage: dict[str, int] = {}
    total = active = params = 0
    kept: dict[str, None] = {}
    for (t, n), s in zip(counted, fmt.storages(spec, tensors)):
        one = s.nbytes(t.rows, t.cols)
        total += one * t.copies * n
        active += one * t.active * n
        params += t.elements * t.copies * n
        by_role[t.role] = by_role.get(t.role, 0) + one * t.copies * n
        by_storage[s.name] = by_storage.get(s.name, 0) + one * t.copies * n
        if s.bits_per_weight > fmt.storage.bits_per_weight:
            kept[t.role] = None
    return FormatWeights(spec.name, fmt.name, total, active, params, by_role, by_storage,
                         tuple(kept))
