"""Multi-head latent attention (DeepSeek-V2, section 2.1), caching only the latent.

Per token, `kv_a_proj_with_mqa` makes a latent of `kv_lora_rank` (RMS-normalised) plus one
RoPE key of `qk_rope_head_dim` shared by all heads. Only those two go into the cache: 512 + 64 =
576 values per token per layer for DeepSeek-V2, against the MHA-equivalent
n_heads * (qk_nope + qk_rope + v_head_dim) = 128 * (192 + 128) = 40,960 (keys 192 wide, values
128 wide; archscope.estimate.kv_cache.mha_elements_per_token). `kv_b_proj` maps a latent to the
per-head no-RoPE keys and values. Queries come from a low-rank path (`q_a_proj`, its RMSNorm,
`q_b_proj`) or, when `q_lora_rank` is null (DeepSeek-V2-Lite), a plain `q_proj`.

Two equivalent ways to attend (same logits up to rounding):
- decompress (`_naive`; what transformers' DeepseekV2Attention computes): up-project every held
  latent through kv_b_proj, then ordinary multi-head attention over [k_nope, k_rope] and v;
- absorbed (`_absorbed`; DeepSeek's inference form): fold kv_b_proj's key half into the query
  and its value half into the output, so attention runs directly on the latent as multi-query
  attention with one "head" of kv_lora_rank + qk_rope_head_dim (values kv_lora_rank wide).

Which one runs is decided per call by the position it starts at and `decode_form`:
- a call into an empty cache or with no cache (start == 0: a prefill, a plain forward) always
  decompresses. Over a prompt of T tokens kv_b_proj runs once per token either way, while the
  absorbed form would multiply every one of the T^2 query-key pairs over kv_lora_rank +
  qk_rope_head_dim instead of qk_nope + qk_rope per head (and kv_lora_rank instead of
  v_head_dim), which is why serving implementations decompress for a prefill; it is also
  exactly transformers' computation;
- a call with tokens already cached (start > 0: decode steps, a chunked continuation) uses the
  absorbed form when `decode_form == "absorbed"` (the default: what serving kernels run in
  decode, and archscope.estimate's decode_flops(mla="absorbed")), and decompresses every held
  latent again when it is "recompute" (transformers' decode over its latent-only cache:
  decode_flops(mla="recompute")). A decode step whose position is a device tensor
  (KVCache.keep_length_on_device: captured or compiled single-token steps) counts as start > 0:
  the host does not read the position.
Set the form on a whole built model with `set_mla_decode_form(model, form)`.

With attention.indexer (DeepSeek Sparse Attention, nn/dsa.py) the layer also caches an indexer
key per token and attends only to the keys its indexer selects (or, shared, the last indexed
layer selected): a single query gathers them (both forms; `recompute` decompresses only those),
several attend under the selection's mask.

Conventions that follow transformers' DeepseekV2Attention (and DeepSeek's reference code):
- RoPE rotates interleaved pairs (x0, x1), (x2, x3), ... not the half-split pairs of Llama
  (attention.rope_half_split: half-split pairs, as MiniCPM3's rotate_half);
- the rotary cos/sin already carry YaRN's attention factor mscale(s, mscale) /
  mscale(s, mscale_all_dim) (archscope.nn.rope, as transformers' yarn init computes it), and the
  softmax scale is 1/sqrt(qk_nope + qk_rope) times mscale(s, mscale_all_dim)^2 when the spec's
  yarn scaling sets mscale_all_dim;
- q_a_layernorm and kv_a_layernorm use eps 1e-6 whatever the model's norm eps (both
  implementations construct them with the RMSNorm default).
"""

from __future__ import annotations

import torch
from torch import nn

from archscope.errors import InputError
from archscope.nn.attention import attend, temperature_of, tuned
from archscope.nn.cache import LayerCache
from archscope.nn.dsa import Indexer, attend_masked, attend_one, gathered, selection_mask
from archscope.nn.linear import Linear
from archscope.nn.norms import RMSNorm
from archscope.nn.rope import _yarn_mscale, apply_rope, apply_rope_interleaved
from archscope.nn.shards import local
from archscope.spec.schema import AttentionSpec, ModelSpec

LATENT_NORM_EPS = 1e-6  # transformers/DeepSeek build both latent RMSNorms with the default eps
DECODE_FORMS = ("absorbed", "recompute")  # MLAttention.decode_form; the first is the default


def softmax_scale(spec: ModelSpec, attn: AttentionSpec) -> float:
    """1/sqrt(q/k head dim) (or Granite-style attention multiplier), times DeepSeek's mscale^2."""
    scale = spec.mults.attention or attn.qk_head_dim ** -0.5
    scaling = spec.position.scaling
    if scaling is not None and scaling.mscale_all_dim:
        scale *= _yarn_mscale(scaling.factor, scaling.mscale_all_dim) ** 2
    return scale


class MLAttention(nn.Module):
    """MLA with transformers' DeepseekV2Attention module names; caches latent + RoPE key."""

    def __init__(self, spec: ModelSpec, attn: AttentionSpec):
        super().__init__()
        d, h = spec.d_model, attn.n_heads
        self.n_heads, self.window = h, attn.window
        self.tokens_held = attn.tokens_held  # the window cap: the cache holds no more
        self.nope, self.rope_dim = attn.qk_nope_head_dim, attn.qk_rope_head_dim
        self.v_dim = attn.v_head_dim
        self.latent = attn.kv_lora_rank
        if attn.q_lora_rank:
            self.q_a_proj = Linear(d, attn.q_lora_rank, bias=attn.bias)
            self.q_a_layernorm = RMSNorm(attn.q_lora_rank, LATENT_NORM_EPS, spec.norm.unit_offset)
            self.q_b_proj = Linear(attn.q_lora_rank, h * attn.qk_head_dim, bias=False)
        else:
            self.q_proj = Linear(d, h * attn.qk_head_dim, bias=False)
        self.low_rank_query = bool(attn.q_lora_rank)
        self.kv_a_proj_with_mqa = Linear(d, self.latent + self.rope_dim, bias=attn.bias)
        self.kv_a_layernorm = RMSNorm(self.latent, LATENT_NORM_EPS, spec.norm.unit_offset)
        self.kv_b_proj = Linear(self.latent, h * (self.nope + self.v_dim), bias=False)
        self.o_proj = Linear(h * self.v_dim, d, bias=attn.has_out_bias)
        # Ling 3's sigmoid gate per head (attention.head_gate), registered after o_proj
        self.g_proj = Linear(d, h, bias=False) if attn.head_gate else None
        self.scale = softmax_scale(spec, attn)
        # adjacent pairs (DeepSeek's) or half-split pairs (MiniCPM3's rotate_half)
        self.rotate = apply_rope if attn.rope_half_split else apply_rope_interleaved
        self.temperature = temperature_of(attn)  # Mistral 4's query scale by position
        self.decode_form: str = DECODE_FORMS[0]  # for start > 0 only; see the module docstring
        # DSA: an indexer of its own (registered last, as transformers'), or a shared one that
        # reads `selection_source`'s (nn.dsa.link_shared_indexers); a source keeps its selection
        shared = attn.indexer is not None and bool(attn.indexer.shared)
        self.indexer = Indexer(spec, attn) if attn.scores_keys else None
        self.shares_selection, self.keeps_selection = shared, False
        self.selection_source: tuple = ()
        self.selection = None

    def forward(self, x, rope, start: int, cache: LayerCache | None):
        b, t, _ = x.shape
        q_latent = self.q_a_layernorm(self.q_a_proj(x)) if self.low_rank_query else None
        q = self.q_b_proj(q_latent) if self.low_rank_query else self.q_proj(x)
        q = q.view(b, t, self.n_heads, self.nope + self.rope_dim).transpose(1, 2)
        q_nope, q_rope = q.split([self.nope, self.rope_dim], dim=-1)
        latent, k_rope = self.kv_a_proj_with_mqa(x).split([self.latent, self.rope_dim], dim=-1)
        latent = self.kv_a_layernorm(latent)  # [B, T, kv_lora_rank]
        if rope is not None:  # position.kind none (Kimi Linear's MLA): the key passes unrotated
            cos, sin = rope
            q_rope = self.rotate(q_rope, cos, sin)
            k_rope = self.rotate(k_rope, cos, sin)  # [B, T, rope]: one key for all heads
        if self.temperature[0] is not None:  # the whole query, after RoPE (transformers')
            q_nope, q_rope = (tuned(part, start, self.temperature) for part in (q_nope, q_rope))
        held = {"latent": latent, "k_rope": k_rope}
        if self.indexer is not None:
            held["index_k"] = self.indexer.key(x, rope)
        key_pos = None
        if cache is not None:
            held, key_pos = cache.append(held, start)
        selected = self._selected(x, q_latent, rope, held, start, key_pos)
        attention = self._absorbed if self.absorbs_at(start) else self._naive
        out = attention(q_nope, q_rope, held["latent"], held["k_rope"], start, key_pos,
                        selected)  # [B, H, T, v]
        if self.g_proj is not None:  # the gate in fp32, cast back, as transformers'
            gate = torch.sigmoid(self.g_proj(x).float()).to(x.dtype)  # [B, T, H]
            out = out * gate.transpose(1, 2)[..., None]
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))

    def _selected(self, x, q_latent, rope, held, start, key_pos):
        """The keys each query attends to [B, T, k] (DSA), or None: every key it may see."""
        if self.shares_selection:
            return self.selection_source[0].selection
        if self.indexer is None:
            return None
        selected = self.indexer.select(x, q_latent, rope, held["index_k"], start, key_pos)
        if self.keeps_selection:
            self.selection = selected
        return selected

    def absorbs_at(self, start) -> bool:
        """Whether a call starting at position `start` attends on the latent (module docstring):
        never into an empty cache (start == 0); with tokens cached, as decode_form says."""
        if self.decode_form not in DECODE_FORMS:
            raise InputError(f"decode_form must be one of {', '.join(map(repr, DECODE_FORMS))}, "
                             f"got {self.decode_form!r}")
        if self.decode_form != "absorbed":
            return False
        return isinstance(start, torch.Tensor) or start > 0

    def _naive(self, q_nope, q_rope, latent, k_rope, start, key_pos, selected=None):
        """Decompress every held (or selected) latent into per-head keys and values, then MHA."""
        valid = None
        if selected is not None and q_nope.shape[2] == 1:  # one query: its keys only
            (latent, k_rope), valid = gathered(selected, key_pos, latent, k_rope)
        b, s, _ = latent.shape
        kv = self.kv_b_proj(latent).view(b, s, self.n_heads, self.nope + self.v_dim).transpose(1, 2)
        k_nope, v = kv.split([self.nope, self.v_dim], dim=-1)
        k_rope = k_rope[:, None].expand(b, self.n_heads, s, self.rope_dim)
        q = torch.cat((q_nope, q_rope), dim=-1)
        k = torch.cat((k_nope, k_rope), dim=-1)
        return self._attend(q, k, v, start, key_pos, selected, valid, gqa=False)

    def _absorbed(self, q_nope, q_rope, latent, k_rope, start, key_pos, selected=None):
        """Attend on the latent itself: q_nope . (W_uk c) == (W_uk^T q_nope) . c, per head."""
        valid = None
        if selected is not None and q_nope.shape[2] == 1:  # one query: its keys only
            (latent, k_rope), valid = gathered(selected, key_pos, latent, k_rope)
        w = local(self.kv_b_proj.weight).view(self.n_heads, self.nope + self.v_dim, self.latent)
        w_uk, w_uv = w.split([self.nope, self.v_dim], dim=1)
        q_latent = torch.einsum("bhtn,hnc->bhtc", q_nope, w_uk)
        q = torch.cat((q_latent, q_rope), dim=-1)  # [B, H, T, kv_lora_rank + rope]
        k = torch.cat((latent, k_rope), dim=-1)[:, None]  # [B, 1, S, ...]: one shared "head"
        out_latent = self._attend(q, k, latent[:, None], start, key_pos, selected, valid,
                                  gqa=True)
        return torch.einsum("bhtc,hvc->bhtv", out_latent, w_uv)

    def _attend(self, q, k, v, start, key_pos, selected, valid, gqa: bool):
        """Dense attention (causal, windowed), or DSA's over the selected keys (nn/dsa.py)."""
        if selected is None:
            return attend(q, k, v, start=start, key_pos=key_pos, window=self.window,
                          scale=self.scale, gqa=gqa)
        if q.shape[2] == 1:  # k and v hold the selected keys already
            return attend_one(q, k, v, self.scale, gqa, valid)
        mask = selection_mask(selected, k.shape[2], start, key_pos)
        return attend_masked(q, k, v, mask, self.scale, gqa)

    def new_cache(self, batch: int, max_len: int, device, dtype) -> LayerCache:
        """Latent and RoPE key only: (kv_lora_rank + qk_rope_head_dim) values per token, and
        an indexer's key (index head_dim) on a layer with one of its own."""
        capacity = self.tokens_held(max_len)
        shapes = {"latent": (batch, self.latent), "k_rope": (batch, self.rope_dim)}
        if self.indexer is not None:  # DSA: the indexer's key per token too
            shapes["index_k"] = (batch, self.indexer.head_dim)
        return LayerCache(shapes, seq_dim=1, capacity=capacity, device=device, dtype=dtype)


def set_mla_decode_form(model: nn.Module, form: str) -> int:
    """Set `decode_form` ("absorbed" or "recompute") on every MLA layer of a built model.

    Returns how many MLA layers were set (0 for a model without MLA: nothing to change).
    A prefill (start == 0) decompresses whatever the form; see the module docstring.
    """
    if form not in DECODE_FORMS:
        raise InputError(f"form must be one of {', '.join(map(repr, DECODE_FORMS))}, got {form!r}")
    layers = [m for m in model.modules() if isinstance(m, MLAttention)]
    for module in layers:
        module.decode_form = form
    return len(layers)
