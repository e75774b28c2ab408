"""Multi-head latent attention (DeepSeek-V2, section 2.1; transformers' DeepseekV2Attention).

Modules: q_a_proj d -> q_lora_rank, q_a_layernorm RMSNorm(q_lora_rank), q_b_proj q_lora_rank ->
n_heads*(qk_nope+qk_rope), or without a q_lora_rank q_proj d -> n_heads*(qk_nope+qk_rope);
kv_a_proj_with_mqa d -> kv_lora_rank + qk_rope_head_dim; kv_a_layernorm RMSNorm(kv_lora_rank);
kv_b_proj kv_lora_rank -> n_heads*(qk_nope+v_head_dim); o_proj n_heads*v_head_dim -> d. As in
HF, attention.bias adds a bias to q_a_proj and kv_a_proj_with_mqa only, has_out_bias to o_proj.

Cache: the latent and the one RoPE key every head shares, kv_lora_rank + qk_rope_head_dim
elements per token per layer (576 for DeepSeek-V2). Decompressed, as a naive implementation
stores it after kv_b_proj: n_heads * (qk_nope + qk_rope) for K plus n_heads * v_head_dim for V,
which is also the layer's MHA-equivalent (128 * (192 + 128) = 40,960 for DeepSeek-V2).

FLOPs per query-key pair: per head q/k dim qk_nope + qk_rope and v dim v_head_dim, except under
the `absorbed` convention, where attention runs on the latent: q/k dim kv_lora_rank +
qk_rope_head_dim, v dim kv_lora_rank (estimate/flops.py states the conventions).

With attention.indexer (DeepSeek Sparse Attention: DeepSeek-V3.2, GLM-5) the layer adds the
indexer's modules (registered last, as transformers' `self_attn.indexer`), caches one indexer
key per token beside the latent, scores every key it may see and attends to the topk best:
kinds/indexer.py holds its parts, cache, FLOPs and wording.
"""

from __future__ import annotations

from dataclasses import replace

from archscope.kinds import indexer
from archscope.kinds.registry import register
from archscope.kinds.base import AttentionKind, linear, norm
from archscope.kinds.wording import attention_extras, rope_text, scale_text, window_label
from archscope.units import commas


def parts(attn, d: int):
    h = attn.n_heads
    if attn.q_lora_rank:
        query = [linear("attention.q_a_proj", d, attn.q_lora_rank, attn.bias),
                 norm("attention.q_a_layernorm", attn.q_lora_rank),
                 linear("attention.q_b_proj", attn.q_lora_rank, h * attn.qk_head_dim)]
    else:
        query = [linear("attention.q_proj", d, h * attn.qk_head_dim)]
    kv_b = linear("attention.kv_b_proj", attn.kv_lora_rank,
                  h * (attn.qk_nope_head_dim + attn.v_head_dim))
    return query + [
        linear("attention.kv_a_proj_with_mqa", d, attn.kv_lora_rank + attn.qk_rope_head_dim,
               attn.bias),
        norm("attention.kv_a_layernorm", attn.kv_lora_rank),
        replace(kv_b, per_key=True),
        linear("attention.o_proj", h * attn.v_head_dim, d, attn.has_out_bias),
        *([linear("attention.g_proj", d, h)] if attn.head_gate else []),  # Ling's head gate
        *indexer.parts(attn, d)]


def cache_elements(attn) -> int:
    """The latent, the shared RoPE key and an indexer's key (DSA)."""
    return attn.kv_lora_rank + attn.qk_rope_head_dim + indexer.cache_elements(attn)


def pair_dims(attn, convention: str) -> tuple[int, int]:
    if convention == "absorbed":
        return attn.kv_lora_rank + attn.qk_rope_head_dim, attn.kv_lora_rank
    return attn.qk_head_dim, attn.v_head_dim


def mha_projections(attn, d: int) -> dict[str, int]:
    """Plain per-head projections with the same head sizes, no latent."""
    h = attn.n_heads
    return {"q_proj": d * h * attn.qk_head_dim, "k_proj": d * h * attn.qk_head_dim,
            "v_proj": d * h * attn.v_head_dim, "o_proj": h * attn.v_head_dim * d}


def describe(attn) -> str:
    q = f"q_lora_rank {attn.q_lora_rank}" if attn.q_lora_rank else "full-rank q"
    return (f"MLA: {attn.n_heads} heads, kv_lora_rank {attn.kv_lora_rank}, {q}, "
            f"qk {attn.qk_nope_head_dim}+{attn.qk_rope_head_dim} (rope), v {attn.v_head_dim}"
            ) + attention_extras(attn) + indexer.text(attn)


def draw(g, spec, a):
    d, h, rank = commas(spec.d_model), a.n_heads, commas(a.q_lora_rank or 0)
    qk = f"{h}×({a.qk_nope_head_dim}+{a.qk_rope_head_dim})"
    if a.q_lora_rank:
        first = g.node("q_a", f"q_a_proj<br/>{d} → {rank}")
        g.node("q_norm", f"q_a_layernorm<br/>RMSNorm({rank})")
        q = g.node("q_b", f"q_b_proj<br/>{rank} → {qk}")
        g.edge(first, "q_norm")
        g.edge("q_norm", q)
    else:
        first = q = g.node("q", f"q_proj<br/>{d} → {qk}")
    kv_a = g.node("kv_a", f"kv_a_proj_with_mqa<br/>{d} → {a.kv_lora_rank} + {a.qk_rope_head_dim}")
    kv_norm = g.node("kv_norm", f"kv_a_layernorm<br/>RMSNorm({a.kv_lora_rank})")
    rope = g.node("rope", f"{rope_text(spec)}<br/>on each head's q_rope and the shared k_rope")
    cache = g.store("cache", f"KV cache: latent c_KV {a.kv_lora_rank} + k_rope "
                             f"{a.qk_rope_head_dim}{indexer.cache_formula(a)}<br/>= "
                             f"{cache_elements(a)} per token")
    kv_b = g.node("kv_b", f"kv_b_proj<br/>{a.kv_lora_rank} → {h}×({a.qk_nope_head_dim}+{a.v_head_dim})"
                          f"<br/>per-head k_nope and v")
    sdpa = g.node("sdpa", f"causal softmax(q·[k_nope, k_rope]ᵀ {scale_text(spec, a.qk_head_dim)})·v"
                          f"<br/>{h} heads")
    o = g.node("o_proj", f"o_proj<br/>{h}×{a.v_head_dim} → {d}")
    g.edge(q, rope, "q")
    g.edge(kv_a, kv_norm, "latent")
    g.edge(kv_a, rope, "k_rope")
    g.edge(kv_norm, cache, "c_KV")
    g.edge(rope, cache, "k_rope")
    g.edge(rope, sdpa, "q")
    g.edge(cache, kv_b, "c_KV")
    g.edge(cache, sdpa, "k_rope")
    g.edge(kv_b, sdpa, "k_nope, v")
    g.edge(sdpa, o)
    entries = indexer.draw(g, a, "q_norm" if a.q_lora_rank else first, cache, sdpa)
    return [first, kv_a, *entries], o


def explain(a, d: int) -> str:
    """The latent: what is cached, what it decompresses to, and the saving."""
    latent, rope, h = a.kv_lora_rank, a.qk_rope_head_dim, a.n_heads
    cached, full = latent + rope, h * (a.qk_head_dim + a.value_head_dim)
    q = (f"q passes a rank-{a.q_lora_rank} bottleneck (q_a_proj, RMSNorm, q_b_proj)"
         if a.q_lora_rank else "q = x·W_q")
    return (f"Multi-head latent attention (MLA): keys and values of all {h} heads are "
            f"up-projected (kv_b_proj) from one latent c = x·W_DKV of {latent} dims, and one "
            f"RoPE key of {rope} dims is shared by every head; {q}. Per head the query-key "
            f"dot product spans {a.qk_nope_head_dim} + {rope} = {a.qk_head_dim} dims and the value "
            f"{a.value_head_dim}. Only the latent and the RoPE key are cached: {latent} + {rope} = "
            f"{commas(cached)} elements per token per layer, against {h} × ({a.qk_head_dim} + "
            f"{a.value_head_dim}) = {commas(full)} for the decompressed keys and values "
            f"({full / cached:.1f}× less). Serving kernels fold kv_b_proj into the query and the "
            "output and attend over the latent itself.") + indexer.explain(a)


register(AttentionKind(
    name="mla", module="archscope.nn.mla:MLAttention", parts=parts,
    cache_elements=cache_elements,
    decompressed_elements=lambda a: (a.n_heads * (a.qk_head_dim + a.v_head_dim)
                                     + indexer.cache_elements(a)),
    pair_dims=pair_dims, mha_projections=mha_projections, describe=describe,
    cache_formula=lambda a: f"{a.kv_lora_rank} + {a.qk_rope_head_dim}" + (
        f" + {a.indexer.head_dim}" if a.scores_keys else ""),
    label=lambda a: a.variant + window_label(a) + (
        f" + DSA top {commas(a.indexer.topk)}" if a.indexer else ""),
    heads=lambda a: f"{a.n_heads}/{a.kv_heads} (latent {a.kv_lora_rank}+{a.qk_rope_head_dim})",
    title=lambda a: (f"MLA self-attention: {a.n_heads} heads, cached latent {a.kv_lora_rank} + "
                     f"shared RoPE key {a.qk_rope_head_dim}" + indexer.text(a)),
    short=lambda a: f"MLA {a.n_heads} heads, latent {a.kv_lora_rank}"
                    + (f", window {commas(a.window)}" if a.window else "")
                    + (f", DSA top {commas(a.indexer.topk)}" if a.indexer else ""),
    draw=draw, explain=explain, compressed_cache=True, scoring_macs=indexer.scoring_macs))
