"""The built model's module structure as plain numbers: the one source for params and FLOPs.

It mirrors transformers' classes (and so archscope's builder), with HF module names:

- token embedding vocab x d; learned positions max_seq_len x d (position.kind learned);
- per layer two norms of d (input_layernorm, post_attention_layernorm; a LayerNorm with bias
  has weight + bias);
- GQA: q_proj d -> n_heads*head_dim, k_proj/v_proj d -> n_kv_heads*head_dim (bias when
  attention.bias), o_proj n_heads*head_dim -> d (bias when attention.has_out_bias);
- MLA (transformers' DeepseekV2Attention): q_a_proj d -> q_lora_rank, q_a_layernorm
  RMSNorm(q_lora_rank), q_b_proj q_lora_rank -> n_heads*(qk_nope+qk_rope), or without a
  q_lora_rank q_proj d -> n_heads*(qk_nope+qk_rope); kv_a_proj_with_mqa d -> kv_lora_rank +
  qk_rope_head_dim; kv_a_layernorm RMSNorm(kv_lora_rank); kv_b_proj kv_lora_rank ->
  n_heads*(qk_nope+v_head_dim); o_proj n_heads*v_head_dim -> d. As in HF, attention.bias
  adds a bias to q_a_proj and kv_a_proj_with_mqa only, and has_out_bias to o_proj;
- mlp: up_proj d -> d_ff, down_proj d_ff -> d; swiglu adds gate_proj d -> d_ff (bias when
  ffn.bias); moe: router d -> n_experts (no bias), n_experts routed swiglu experts of
  d_expert, and the shared experts as ONE swiglu of n_shared_experts*d_expert (if any);
- final norm of d (pre-norm only: a post-norm model ends on its last layer's norm);
- lm_head d -> vocab, whose weight is the embedding's when tie_embeddings.

Each `Part` carries its parameters and its multiply-adds per token (the weight elements of its
matmuls: biases, norms, activations and lookups do no matmul work).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from archscope.spec import AttentionSpec, FFNSpec, LayerPlan, ModelSpec


@dataclass(frozen=True)
class Part:
    """One named piece of the model, summed over the copies it has."""

    name: str  # breakdown key: "attention.q_proj", "ffn.experts", "norms", "lm_head", ...
    params: int  # parameters of one copy
    macs: int = 0  # multiply-adds per token of one copy
    copies: int = 1  # stored copies (routed experts: n_experts)
    active: int = 1  # copies one token uses (routed experts: top_k)
    per_key: bool = False  # MLA kv_b_proj: applied per decompressed key (see flops.py)


def linear(name: str, d_in: int, d_out: int, bias: bool = False) -> Part:
    """nn.Linear(d_in, d_out): d_in*d_out weights (+ d_out bias); d_in*d_out multiply-adds."""
    return Part(name, d_in * d_out + (d_out if bias else 0), d_in * d_out)


def norm(name: str, size: int, bias: bool = False) -> Part:
    """RMSNorm(size) has a weight; LayerNorm(size) a weight and, usually, a bias."""
    return Part(name, size * (2 if bias else 1))


def merged(name: str, parts: list[Part], copies: int = 1, active: int = 1) -> Part:
    """Several parts reported as one (an expert's gate/up/down), with `copies` of it stored."""
    return Part(name, sum(p.params for p in parts), sum(p.macs for p in parts), copies, active)


def gqa_parts(attn: AttentionSpec, d: int) -> list[Part]:
    q_width = attn.n_heads * attn.head_dim
    kv_width = attn.n_kv_heads * attn.head_dim
    return [linear("attention.q_proj", d, q_width, attn.bias),
            linear("attention.k_proj", d, kv_width, attn.bias),
            linear("attention.v_proj", d, kv_width, attn.bias),
            linear("attention.o_proj", q_width, d, attn.has_out_bias)]


def mla_parts(attn: AttentionSpec, d: int) -> list[Part]:
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
        linear("attention.o_proj", h * attn.v_head_dim, d, attn.has_out_bias)]


def swiglu_parts(prefix: str, d: int, d_ff: int, bias: bool) -> list[Part]:
    return [linear(f"{prefix}.gate_proj", d, d_ff, bias),
            linear(f"{prefix}.up_proj", d, d_ff, bias),
            linear(f"{prefix}.down_proj", d_ff, d, bias)]


def ffn_parts(ffn: FFNSpec, d: int) -> list[Part]:
    if ffn.kind == "mlp":
        return [linear("ffn.up_proj", d, ffn.d_ff, ffn.bias),
                linear("ffn.down_proj", ffn.d_ff, d, ffn.bias)]
    if ffn.kind == "swiglu":
        return swiglu_parts("ffn", d, ffn.d_ff, ffn.bias)
    expert = swiglu_parts("expert", d, ffn.d_expert, ffn.bias)
    parts = [linear("ffn.router", d, ffn.n_experts),
             merged("ffn.experts", expert, copies=ffn.n_experts, active=ffn.top_k)]
    if ffn.shared_experts:
        shared = swiglu_parts("shared", d, ffn.shared_experts * ffn.d_expert, ffn.bias)
        parts.append(merged("ffn.shared_experts", shared))
    return parts


ATTENTION_PARTS = {"gqa": gqa_parts, "mla": mla_parts}


def layer_parts(spec: ModelSpec, layer: LayerPlan) -> list[Part]:
    """One decoder layer: its attention, its FFN, and its two norms."""
    d = spec.d_model
    norms = merged("norms", [norm("", d, spec.norm.has_bias)] * 2)
    return ATTENTION_PARTS[layer.attention.kind](layer.attention, d) + ffn_parts(layer.ffn, d) \
        + [norms]


def embedding_parts(spec: ModelSpec) -> list[Part]:
    positions = spec.max_seq_len if spec.position.kind == "learned" else 0
    return [Part("embedding", spec.vocab_size * spec.d_model),
            Part("positional", positions * spec.d_model)]


def head_parts(spec: ModelSpec) -> list[Part]:
    """Final norm (pre-norm only) and lm_head (its params count 0 when tied; its matmul stays)."""
    final = norm("final_norm", spec.d_model, spec.norm.has_bias)
    if spec.norm.position == "post":
        final = replace(final, params=0)
    head = linear("lm_head", spec.d_model, spec.vocab_size)
    if spec.tie_embeddings:
        head = replace(head, params=0)
    return [final, head]


def model_parts(spec: ModelSpec) -> list[Part]:
    """Every part of the model, in forward order (embeddings, each layer, head)."""
    parts = embedding_parts(spec)
    for layer in spec.plan:
        parts += layer_parts(spec, layer)
    return parts + head_parts(spec)
