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
matmuls: biases, norms, activations and lookups do no matmul work), and a layer's parts their
tensors (`Weight`), from which `layer_module_rows` makes the per-layer module tables.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

from archscope.estimate import shared_blocks
from archscope.kinds import attention_kind, ffn_kind, mixer_kind
from archscope.kinds.base import Part, Weight, linear, norm, merged
from archscope.spec import LayerPlan, ModelSpec
from archscope.spec.components import NORM_SLOTS, SUBLAYER_SLOTS, NormSpec

__all__ = ["Part", "linear", "norm", "merged", "layer_parts", "embedding_parts", "head_parts",
           "model_parts", "distinct_layers", "attention_parts", "mixer_parts", "ffn_parts", "mtp_parts",
           "layer_module_rows"]

# The builder's names (nn/model.py's Block): the attribute each sublayer is registered under,
# and the class of each norm kind (nn/norms.py). `show --verify` checks them on the built model.
SUBLAYER_MODULES = {"attention": "self_attn", "state": "mixer", "ffn": "mlp"}
NORM_MODULES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}


def norm_module(norm_spec: NormSpec) -> str:
    """The class the builder makes a layer's norm of (Nemotron's (1 + weight) LayerNorm is
    LayerNorm1P)."""
    if norm_spec.kind == "layernorm" and norm_spec.unit_offset:
        return "LayerNorm1P"
    return NORM_MODULES[norm_spec.kind]


def attention_parts(attn, d: int) -> list[Part]:
    """A layer's attention projections and norms, from its kind's entry (archscope.kinds)."""
    return attention_kind(attn.kind).parts(attn, d)


def ffn_parts(ffn, d: int) -> list[Part]:
    """A layer's FFN (or experts and router), from its kind's entry."""
    return ffn_kind(ffn.kind).parts(ffn, d)


def mixer_parts(layer: LayerPlan, d: int) -> list[Part]:
    """A layer's mixer: its attention, its state mixer (named `mixer.*`), both (a hybrid
    layer), or nothing."""
    return _mixer_parts(layer.attention, layer.state, d)


def _mixer_parts(attention, state, d: int) -> list[Part]:
    return ((attention_parts(attention, d) if attention is not None else [])
            + (mixer_kind(state.kind).parts(state, d) if state is not None else []))


def layer_parts(spec: ModelSpec, layer: LayerPlan) -> list[Part]:
    """One decoder layer: its mixer, its FFN, and its norms (two, or four for a sandwich; half
    of them in a layer with one sublayer, Nemotron-H's)."""
    return list(parts_of_layer(layer_key(spec, layer)))


def layer_key(spec: ModelSpec, layer: LayerPlan) -> tuple:
    """What a layer's parts depend on: the model's width and norms, the layer's mixer and FFN
    (not its index). Most layers of a model, and of every variant of a sweep, repeat a few,
    so the per-layer sums of the estimators are cached on this key."""
    return (spec.d_model, spec.norm, layer.attention, layer.state, layer.ffn)


def parts_of_layer(key: tuple) -> tuple[Part, ...]:
    """The parts of a layer given its `layer_key` (shared: never modify them)."""
    return _layer_parts(*key)


@functools.lru_cache(maxsize=4096)
def _layer_parts(d: int, norm_spec: NormSpec, attention, state, ffn) -> tuple[Part, ...]:
    has_mixer = attention is not None or state is not None
    norms = merged("norms", (_sublayer_norms(d, norm_spec, "attn") if has_mixer else [])
                   + (_sublayer_norms(d, norm_spec, "ffn") if ffn is not None else []))
    return tuple(_mixer_parts(attention, state, d) + (ffn_parts(ffn, d) if ffn is not None else []) + [norms])


def _sublayer_norms(d: int, norm_spec: NormSpec, sublayer: str) -> list[Part]:
    """The norms the block registers with a sublayer ('attn' or 'ffn'), in its order, each
    named as its slot's module (input_layernorm, ...)."""
    slots = NORM_SLOTS[norm_spec.position]
    return [norm("norms", d, norm_spec.has_bias, module=slots[slot],
                 module_type=norm_module(norm_spec), weight=norm_spec.has_weight)
            for slot in SUBLAYER_SLOTS[sublayer] if slot in slots]


def layer_weights(spec: ModelSpec, layer: LayerPlan) -> list[Weight]:
    """One decoder layer's tensors under their module paths in the layer, in the order the
    block registers them: each sublayer's norms, then the sublayer (the builder's order)."""
    d, out = spec.d_model, []
    if layer.attention is not None or layer.state is not None:
        out += [w for p in _sublayer_norms(d, spec.norm, "attn") for w in p.weights]
        for mixer, parts in (("attention", _mixer_parts(layer.attention, None, d)),
                             ("state", _mixer_parts(None, layer.state, d))):  # the block's order
            out += [w.under(SUBLAYER_MODULES[mixer]) for p in parts for w in p.weights]
    if layer.ffn is not None:
        out += [w for p in _sublayer_norms(d, spec.norm, "ffn") for w in p.weights]
        out += [w.under(SUBLAYER_MODULES["ffn"]) for p in ffn_parts(layer.ffn, d)
                for w in p.weights]
    return out


def module_rows(weights: list[Weight]) -> list[dict]:
    """One row per module that owns tensors (module, type, shapes, weights, params), in the
    order torch's named_modules walks the built layer: a module before its children, siblings
    in the order they were registered (first met in `weights`)."""
    first_seen: dict[str, int] = {}
    by_module: dict[str, list[Weight]] = {}
    for w in weights:
        parts = w.module.split(".")
        for i in range(1, len(parts) + 1):
            first_seen.setdefault(".".join(parts[:i]), len(first_seen))
        by_module.setdefault(w.module, []).append(w)

    def walk_order(module: str) -> tuple[int, ...]:
        parts = module.split(".")
        return tuple(first_seen[".".join(parts[:i])] for i in range(1, len(parts) + 1))

    rows = []
    for module in sorted(by_module, key=walk_order):
        own = by_module[module]
        rows.append({"module": module, "type": own[0].module_type,
                     "shapes": ", ".join(f"{w.name}{list(w.shape)}" for w in own),
                     "weights": {w.name: list(w.shape) for w in own},
                     "params": sum(math.prod(w.shape) for w in own)})
    return rows


def layer_module_rows(spec: ModelSpec) -> dict[tuple[int, ...], list[dict]]:
    """Module rows of each distinct layer structure, keyed by the layer indices that share it
    (layers whose tables are equal share one, whatever else differs: a window, a RoPE base)."""
    rows_of_parts: dict[tuple, list[dict]] = {}
    groups: dict[tuple, list[int]] = {}
    rows_of: dict[tuple, list[dict]] = {}
    uses = shared_blocks.use_index(spec)
    for i, layer in enumerate(spec.plan):
        # a layer that runs a shared block registers it (which of them: its adapters differ)
        role = None if i not in uses else spec.shared.copy_of(uses[i])
        key = (layer.attention, layer.state, layer.ffn, role)
        if key not in rows_of_parts:
            rows_of_parts[key] = module_rows(shared_blocks.layer_weights(
                spec, i, layer_weights(spec, layer)))
        rows = rows_of_parts[key]
        table = tuple((r["module"], r["type"], r["shapes"]) for r in rows)
        groups.setdefault(table, []).append(i)
        rows_of[table] = rows
    return {tuple(idx): rows_of[table] for table, idx in groups.items()}


def distinct_layers(spec: ModelSpec) -> list[tuple[LayerPlan, int]]:
    """The plan's layers that differ in their parts (mixer and FFN), each with how many layers
    are like it (ModelSpec.distinct_layers, computed once per spec)."""
    return list(spec.distinct_layers)


def embedding_parts(spec: ModelSpec) -> list[Part]:
    """The token embedding, learned positions (0 without) and the embedding's own norm
    (norm.embedding: nanochat's, weightless; counted with the norms)."""
    positions = spec.max_seq_len if spec.position.kind == "learned" else 0
    out = [Part("embedding", spec.vocab_size * spec.d_model),
           Part("positional", positions * spec.d_model)]
    if spec.norm.embedding:
        n = spec.norm
        out.append(norm("embedding_norm", spec.d_model, n.has_bias, module_type=norm_module(n),
                        weight=n.has_weight))
    return out


def head_parts(spec: ModelSpec) -> list[Part]:
    """Final norm (not after a post-norm stack) and lm_head (its weight counts 0 when tied, its
    bias, Phi-2's, never; its matmul stays)."""
    return list(_head_parts(spec.d_model, spec.vocab_size, spec.norm, spec.tie_embeddings,
                            spec.lm_head.bias))


@functools.lru_cache(maxsize=1024)  # as _layer_parts: every estimator asks, variants repeat
def _head_parts(d: int, vocab: int, norm_spec: NormSpec, tied: bool,
                bias: bool) -> tuple[Part, ...]:
    final = norm("final_norm", d, norm_spec.has_bias, weight=norm_spec.has_weight)
    if norm_spec.position == "post":
        final = replace(final, params=0)
    head = linear("lm_head", d, vocab, bias=bias)
    return (final, replace(head, params=vocab if bias else 0) if tied else head)


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
