"""The built model's module structure as plain numbers: the one source for params and FLOPs.

It mirrors transformers' classes (and so archscope's builder), with HF module names:

- token embedding vocab x d; learned positions max_seq_len x d (position.kind learned);
- per layer two norms of d (input_layernorm and post_attention_layernorm, or OLMo 2's
  output-norm post_attention_layernorm and post_feedforward_layernorm), four for Gemma's
  sandwich (both; norm.per_layer); a LayerNorm with bias has weight + bias;
- per layer its mixer (attention or a state mixer; none in an MLP-only layer) and its FFN
  (none in a mixer-only layer), whose parts (modules, parameters, multiply-adds) each
  kind's entry in archscope/kinds states (gqa, mla; mlp, swiglu, moe, ...);
- final norm of d (pre- and output-norm: a post-norm model ends on its last layer's norm);
- lm_head d -> vocab, whose weight is the embedding's when tie_embeddings.

Each `Part` carries its parameters and its multiply-adds per token (the weight elements of its
matmuls: biases, norms, activations and lookups do no matmul work).
"""

from __future__ import annotations

import functools
from dataclasses import replace

from archscope.kinds import attention_kind, ffn_kind, mixer_kind
from archscope.kinds.base import Part, linear, norm, merged
from archscope.spec import LayerPlan, ModelSpec

__all__ = ["Part", "linear", "norm", "merged", "layer_parts", "embedding_parts", "head_parts",
           "model_parts", "distinct_layers", "attention_parts", "mixer_parts", "ffn_parts", "mtp_parts"]


def attention_parts(attn, d: int) -> list[Part]:
    """A layer's attention projections and norms, from its kind's entry (archscope.kinds)."""
    return attention_kind(attn.kind).parts(attn, d)


def ffn_parts(ffn, d: int) -> list[Part]:
    """A layer's FFN (or experts and router), from its kind's entry."""
    return ffn_kind(ffn.kind).parts(ffn, d)


def mixer_parts(layer: LayerPlan, d: int) -> list[Part]:
    """A layer's mixer: its attention, its state mixer (named `mixer.*`), or nothing."""
    return _mixer_parts(layer.attention, layer.state, d)


def _mixer_parts(attention, state, d: int) -> list[Part]:
    if attention is not None:
        return attention_parts(attention, d)
    return mixer_kind(state.kind).parts(state, d) if state is not None else []


def layer_parts(spec: ModelSpec, layer: LayerPlan) -> list[Part]:
    """One decoder layer: its mixer, its FFN, and its norms (two, or four for a sandwich; half
    of them in a layer with one sublayer, Nemotron-H's)."""
    return list(_layer_parts(spec.d_model, spec.norm.per_layer // 2, spec.norm.has_bias,
                             layer.attention, layer.state, layer.ffn))


# Parts depend on the layer's components, not its index: most layers of a model (and of every
# variant of a sweep) repeat a few, and the estimators ask for each layer several times.
@functools.lru_cache(maxsize=4096)
def _layer_parts(d: int, per_sublayer: int, norm_bias: bool, attention, state,
                 ffn) -> tuple[Part, ...]:
    sublayers = (attention is not None or state is not None) + (ffn is not None)
    norms = merged("norms", [norm("", d, norm_bias)] * (per_sublayer * sublayers))
    return tuple(_mixer_parts(attention, state, d) + (ffn_parts(ffn, d) if ffn is not None else []) + [norms])


def distinct_layers(spec: ModelSpec) -> list[tuple[LayerPlan, int]]:
    """The plan's layers that differ in their parts (mixer and FFN), each with how many layers
    are like it: sums over layers become sums over these, a few instead of n_layers."""
    counts: dict = {}
    for layer in spec.plan:
        key = (layer.attention, layer.state, layer.ffn)
        if key in counts:
            counts[key][1] += 1
        else:
            counts[key] = [layer, 1]
    return [(layer, n) for layer, n in counts.values()]


def embedding_parts(spec: ModelSpec) -> list[Part]:
    positions = spec.max_seq_len if spec.position.kind == "learned" else 0
    return [Part("embedding", spec.vocab_size * spec.d_model),
            Part("positional", positions * spec.d_model)]


def head_parts(spec: ModelSpec) -> list[Part]:
    """Final norm (not after a post-norm stack) and lm_head (its params count 0 when tied; its matmul stays)."""
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


def mtp_parts(spec: ModelSpec) -> list[Part]:
    """One multi-token-prediction module (spec.mtp_layers of them ship; none is in the model):
    a decoder layer like the model's last (transformers' MtpModel builds its block from
    layers[-1], MoE in DeepSeek-V3 and GLM-4.5), eh_proj 2d -> d (no bias) over the normed
    embedding and hidden state, their norms enorm and hnorm, and the shared head's own norm
    (shared_head.norm); the embedding and lm_head are the main model's (DeepSeek-V3's
    README_WEIGHTS), so they add nothing."""
    d, bias = spec.d_model, spec.norm.has_bias
    extra = [linear("mtp.eh_proj", 2 * d, d)] + [norm(f"mtp.{n}", d, bias)
                                                   for n in ("enorm", "hnorm", "head_norm")]
    return layer_parts(spec, spec.plan[-1]) + extra
