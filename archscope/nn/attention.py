"""Grouped-query attention (MHA and MQA as the two extremes), with an optional sliding window
or chunk (Llama 4), RoPE on q and k unless the layer is NoPE (attention.rope false, SmolLM3),
on half-split or adjacent pairs (position.interleaved, Llama 4) and on part of each head
(attention.rotary_fraction, GLM-4.5), an optional norm of q and k (QK-norm: RMSNorm per head as
in Qwen3, full width as in OLMo 2, a LayerNorm per head as in Phi-2 or with a weight row per
head as in Cohere, before RoPE or after it as in Hunyuan; Llama 4's weightless l2 per head, after
RoPE), temperature tuning of q (Llama 4's on NoPE layers, Ministral 3's on all), q, k and v
from one fused projection or three (Phi-3's qkv_proj, Llama's q/k/v_proj), optional attention
sinks (gpt-oss: a learned logit per head in the softmax's denominator), a soft cap on the
logits (Gemma 2), q/k/v clamped (OLMo's and DBRX's clip_qkv) and an RMSNorm of the output
before o_proj (BitNet's attn_sub_norm)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archscope.nn.cache import LayerCache, attention_mask
from archscope.nn.linear import Linear
from archscope.nn.norms import RMSNorm, qk_norm
from archscope.nn.rope import apply_partial_rope, apply_rope, apply_rope_interleaved
from archscope.spec.attention import QK_NORMS_WITH_WEIGHTS
from archscope.spec.schema import AttentionSpec, ModelSpec


class L2Norm(nn.Module):
    """Llama 4's QK-norm: x / sqrt(mean(x^2) + eps) over the last dim, no weight, in fp32."""

    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.float()
        return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def attend(q, k, v, *, start: int, key_pos, window: int | None, scale: float, gqa: bool,
           chunk: int | None = None, sinks: torch.Tensor | None = None,
           softcap: float | None = None):
    """SDPA over q [B,H,T,D] and k/v [B,Hkv,S,D] for queries at positions start..start+T-1.

    Decides the mask: none for a single query over exactly the cache slots it sees, `is_causal`
    for a plain prompt, an explicit causal/window/chunk mask otherwise. On the CPU a single
    query is `one_query`'s, not SDPA's. `start` may be a device tensor (a fixed-shape decode
    step reading every slot; `key_pos` then marks the valid ones).
    `gqa`: k/v have fewer heads than q. A static flag from the module, not read off the shapes,
    so that tracing (fvcore, torch.jit) sees a Python bool. `sinks` [H] and `softcap`: see
    `attend_explicitly`.
    """
    n_q = q.shape[2]
    if sinks is not None or softcap is not None:  # the same masks; SDPA has no argument for it
        mask = None
        if n_q > 1 or key_pos is not None:
            query_pos = torch.arange(n_q, device=q.device) + start
            mask = attention_mask(query_pos, query_pos if key_pos is None else key_pos, window,
                                  chunk)
        return attend_explicitly(q, k, v, mask, scale, gqa, sinks, softcap)
    if n_q == 1 and q.device.type == "cpu":  # a decode step (see one_query)
        mask = None
        if key_pos is not None:
            mask = attention_mask(torch.arange(1, device=q.device) + start, key_pos, window,
                                  chunk)
        return one_query(q, k, v, scale, mask)
    if n_q == 1 and key_pos is None:
        return F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=gqa)
    if key_pos is None and window is None and chunk is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=gqa)
    query_pos = torch.arange(n_q, device=q.device) + start
    if key_pos is None:
        key_pos = query_pos
    mask = attention_mask(query_pos, key_pos, window, chunk)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale, enable_gqa=gqa)


def one_query(q, k, v, scale: float, mask=None):
    """One query per sequence over the keys it sees (a decode step: every key, or those `mask`
    [1, S] marks when a fixed-shape step reads every slot of a static cache), as two matmuls
    with each KV head's group of query heads together, in fp32 and rounded once to the values'
    dtype (as exact as SDPA's own result: against fp64, the same error in bf16). On the CPU,
    SDPA's kernel costs several times this at one query in bf16 (8 KV heads of 32 query heads:
    193 us against 39 at 140 keys, 1.5 ms against 0.17 at 1,100; fp32 30 against 36, 166
    against 120; benchmarks/decode_attention.py), a few percent of a whole decode step and
    more as the context grows."""
    b, heads, _, _ = q.shape
    grouped = q.reshape(b, k.shape[1], heads // k.shape[1], q.shape[-1]).float()  # [B,Hkv,G,D]
    scores = (grouped @ k.transpose(-1, -2).float()) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights @ v.float()).to(v.dtype).reshape(b, heads, 1, v.shape[-1])


def attend_explicitly(q, k, v, mask, scale: float, gqa: bool, sinks: torch.Tensor | None = None,
                      softcap: float | None = None):
    """Attention written out, for what SDPA takes no argument for: `softcap` caps the scaled
    logits at cap * tanh(scores / cap) before the mask (Gemma 2); `sinks` [H] adds one more
    logit per head to the softmax, with no value: it only enlarges the denominator, so a head
    may attend to nothing (gpt-oss). The matmuls are SDPA's (q.k over every key, the weights
    times v), so FLOPs are unchanged. `mask` [T, S] bool (True: may attend) or None (every
    key)."""
    if gqa:  # each key/value head serves a group of query heads
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = (q @ k.transpose(-1, -2)).float() * scale
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    if sinks is None:
        return scores.softmax(dim=-1).to(v.dtype) @ v
    sink = sinks.float().view(1, -1, 1, 1).expand(*scores.shape[:-1], 1)
    weights = torch.cat((scores, sink), dim=-1).softmax(dim=-1)[..., :-1]
    return weights.to(v.dtype) @ v


class GQAAttention(nn.Module):
    def __init__(self, spec: ModelSpec, attn: AttentionSpec):
        super().__init__()
        d, h, hkv, hd = spec.d_model, attn.n_heads, attn.n_kv_heads, attn.head_dim
        self.n_heads, self.n_kv_heads, self.head_dim, self.window = h, hkv, hd, attn.window
        self.chunk = attn.chunk
        self.tokens_held = attn.tokens_held  # the window/chunk cap: the cache holds no more
        # Phi-3's fused_qkv: one qkv_proj (rows q, k, v), under its HF name so a checkpoint
        # loads as it is; else Llama's three
        self.fused = bool(attn.fused_qkv)
        # Qwen3-Next's output gate: q_proj's rows per head are its query, then its gate
        self.gated = bool(attn.output_gate)
        q_rows = 2 * h * hd if self.gated else h * hd
        self.widths = (q_rows, hkv * hd, hkv * hd)
        if self.fused:
            self.qkv_proj = Linear(d, sum(self.widths), bias=attn.bias)
        else:
            self.q_proj = Linear(d, q_rows, bias=attn.bias)
            self.k_proj = Linear(d, hkv * hd, bias=attn.bias)
            self.v_proj = Linear(d, hkv * hd, bias=attn.bias)
        # QK-norm normalises groups of `*_norm_width` values: one head (Qwen3's q_norm/k_norm of
        # head_dim; Cohere's per_head, a weight row per head) or the whole projection (OLMo 2's,
        # of n_heads*head_dim and n_kv_heads*head_dim); before RoPE, with the model's eps and
        # unit offset (Gemma's (1 + weight) here too), as in transformers.
        self.q_norm_width, self.k_norm_width = {"full": (h * hd, hkv * hd)}.get(attn.qk_norm,
                                                                                 (hd, hd))
        qk = attn.qk_norm in QK_NORMS_WITH_WEIGHTS
        self.q_norm = qk_norm(spec.norm, attn, h, self.q_norm_width) if qk else nn.Identity()
        self.k_norm = qk_norm(spec.norm, attn, hkv, self.k_norm_width) if qk else nn.Identity()
        self.norm_after_rope = bool(attn.qk_norm_after_rope)  # Hunyuan's order
        # Llama 4's l2 norm has no weight and follows RoPE (transformers' order), so it is a
        # module outside the q_norm/k_norm slots, which hold weights and precede RoPE
        self.l2_norm = L2Norm(spec.norm.eps) if attn.qk_norm == "l2" else nn.Identity()
        self.o_proj = Linear(h * hd, d, bias=attn.has_out_bias)
        self.scale = spec.mults.attention or hd ** -0.5
        self.rotary = spec.position.kind == "rope" and attn.rope  # false: a NoPE layer
        # rotary_fraction < 1 (GLM-4.5): the model's cos/sin cover the first rotary_dim dims
        self.rotate = (apply_rope_interleaved if spec.position.interleaved else
                       apply_rope if attn.rotary_dim == hd else apply_partial_rope)
        self.temperature = temperature_of(attn)
        self.sinks = nn.Parameter(torch.empty(h)) if attn.sinks else None  # gpt-oss's
        self.softcap, self.clip = attn.softcap, attn.clip_qkv  # Gemma 2's; OLMo's, DBRX's
        # BitNet's attn_sub_norm: an RMSNorm of the attention output, before o_proj
        self.attn_sub_norm = (RMSNorm(h * hd, spec.norm.eps, spec.norm.unit_offset)
                              if attn.sub_norm else nn.Identity())

    def _heads(self, y, heads: int, norm: nn.Module, width: int):
        """[B, T, heads*head_dim] -> [B, heads, T, head_dim], normed in groups of `width`
        (unless the norm follows RoPE)."""
        b, t, _ = y.shape
        if not self.norm_after_rope:  # reshape: a split of qkv_proj is not contiguous
            y = norm(y.reshape(b, t, -1, width))
        return y.reshape(b, t, heads, self.head_dim).transpose(1, 2)

    def _normed(self, y, norm: nn.Module, width: int):
        """[B, heads, T, head_dim] normed in groups of `width` (a QK-norm after RoPE)."""
        b, heads, t, hd = y.shape
        y = norm(y.transpose(1, 2).reshape(b, t, -1, width))
        return y.reshape(b, t, heads, hd).transpose(1, 2)

    def project(self, x):
        """q, k and v, [B, T, width] each: one matmul split, or three."""
        if self.fused:
            return self.qkv_proj(x).split(self.widths, dim=-1)
        return self.q_proj(x), self.k_proj(x), self.v_proj(x)

    def forward(self, x, rope, start: int, cache: LayerCache | None):
        b, t, _ = x.shape
        q, k, v = self.project(x)
        if self.clip is not None:
            q, k, v = (y.clamp(-self.clip, self.clip) for y in (q, k, v))
        if self.gated:
            q, gate = q.view(b, t, self.n_heads, 2, self.head_dim).unbind(3)
            q = q.reshape(b, t, -1)
        q = self._heads(q, self.n_heads, self.q_norm, self.q_norm_width)
        k = self._heads(k, self.n_kv_heads, self.k_norm, self.k_norm_width)
        v = v.reshape(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if self.rotary:
            cos, sin = rope
            q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
        if self.norm_after_rope:
            q = self._normed(q, self.q_norm, self.q_norm_width)
            k = self._normed(k, self.k_norm, self.k_norm_width)
        q, k = self.l2_norm(q), self.l2_norm(k)
        if self.temperature[0] is not None:
            q = tuned(q, start, self.temperature)
        key_pos = None
        if cache is not None:
            kv, key_pos = cache.append({"k": k, "v": v}, start)
            k, v = kv["k"], kv["v"]
        out = attend(q, k, v, start=start, key_pos=key_pos, window=self.window, scale=self.scale,
                     gqa=self.n_kv_heads != self.n_heads, chunk=self.chunk, sinks=self.sinks,
                     softcap=self.softcap)
        out = out.transpose(1, 2).reshape(b, t, -1)
        if self.gated:
            out = out * torch.sigmoid(gate.reshape(b, t, -1))
        return self.o_proj(self.attn_sub_norm(out))

    def new_cache(self, batch: int, max_len: int, device, dtype) -> LayerCache:
        capacity = self.tokens_held(max_len)
        shape = (batch, self.n_kv_heads, self.head_dim)
        return LayerCache({"k": shape, "v": shape}, seq_dim=2, capacity=capacity,
                          device=device, dtype=dtype, chunk=self.chunk)


def temperature_of(attn) -> tuple:
    """(floor, scale, offset) of an attention spec's temperature tuning (floor None: none)."""
    return (attn.temperature_floor, attn.temperature_scale,
            1 if attn.temperature_offset is None else attn.temperature_offset)


def tuned(q: torch.Tensor, start, temperature: tuple) -> torch.Tensor:
    """q [B, H, T, D] times the temperature at each query's position, counted from p + 1
    (Llama 4's) or p (Ministral 3's, Mistral 4's); computed in fp32 from positions on the
    device, so `start` may be a device tensor."""
    floor, strength, offset = temperature
    pos = torch.arange(q.shape[2], device=q.device) + start
    scale = torch.log1p(torch.floor((pos.float() + offset) / floor)) * strength + 1.0
    return (q * scale[:, None]).to(q.dtype)
