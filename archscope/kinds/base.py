"""The shape of a kind's entry, and the parameter parts entries are made of.

A `Part` is one named piece of the model (a projection, a norm, a group of experts) with its
parameters and its multiply-adds per token: the weight elements of its matmuls (biases, norms,
activations and lookups do no matmul work). Parts mirror transformers' modules and HF names.
A layer's parts also carry their `Weight`s: each parameter tensor with its shape, under the
module name and class the builder registers it with, so the module tables of `show` and the
reports come from the spec alone (`show --verify` checks them against the built module).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from typing import Callable


@dataclass(frozen=True)
class Weight:
    """One parameter tensor as the built module holds it."""

    module: str  # the module's path inside its component: "q_proj"; "" is the component itself
    module_type: str  # the module's class name: "Linear", "RMSNorm", "RoutedExperts"
    name: str  # the parameter's attribute: "weight", "bias", "sinks", "gate_up_proj"
    shape: tuple[int, ...]

    def under(self, prefix: str) -> Weight:
        """The same tensor seen from the module that holds `prefix` ("self_attn", "mlp")."""
        return replace(self, module=f"{prefix}.{self.module}" if self.module else prefix)


@dataclass(frozen=True)
class Part:
    """One named piece of the model, summed over the copies it has."""

    name: str  # breakdown key: "attention.q_proj", "ffn.experts", "norms", "lm_head", ...
    params: int  # parameters of one copy
    macs: int = 0  # multiply-adds per token of one copy
    copies: int = 1  # stored copies (routed experts: n_experts)
    active: int = 1  # copies one token uses (routed experts: top_k)
    per_key: bool = False  # MLA kv_b_proj: applied per decompressed key (see estimate/flops.py)
    # its tensors, all copies, in the order its module registers them (a layer's parts; the
    # tests check they hold params * copies elements); not part of a part's identity
    weights: tuple[Weight, ...] = field(default=(), compare=False, repr=False)


def linear(name: str, d_in: int, d_out: int, bias: bool = False, module: str | None = None,
           module_type: str = "Linear") -> Part:
    """nn.Linear(d_in, d_out): d_in*d_out weights (+ d_out bias); d_in*d_out multiply-adds.
    Its module is named as the part's last name ("attention.q_proj": q_proj) unless `module`
    says otherwise; `module_type` names a class laid out as Linear (MoE's Router)."""
    module = name.rsplit(".", 1)[-1] if module is None else module
    weights = (Weight(module, module_type, "weight", (d_out, d_in)),)
    if bias:
        weights += (Weight(module, module_type, "bias", (d_out,)),)
    return Part(name, d_in * d_out + (d_out if bias else 0), d_in * d_out, weights=weights)


def norm(name: str, size: int, bias: bool = False, module: str | None = None,
         module_type: str = "RMSNorm", weight: bool = True) -> Part:
    """RMSNorm(size) has a weight; LayerNorm(size) a weight and, usually, a bias; a norm
    without a weight (norm.weight false) neither. Its module is named as `linear` names one."""
    module = name.rsplit(".", 1)[-1] if module is None else module
    names = ("weight", "bias") if bias else ("weight",) if weight else ()
    return Part(name, size * len(names),
                weights=tuple(Weight(module, module_type, n, (size,)) for n in names))


def merged(name: str, parts: list[Part], copies: int = 1, active: int = 1,
           module: str | None = None) -> Part:
    """Several parts reported as one (an expert's gate/up/down), with `copies` of it stored.
    Their tensors are kept, under `module` when the parts are its children (shared_experts)."""
    weights = tuple(w.under(module) if module else w for p in parts for w in p.weights)
    return Part(name, sum(p.params for p in parts), sum(p.macs for p in parts), copies, active,
                weights=weights)


def own_weights(prefix: str, module_type: str, sizes: dict[str, int]) -> list[Part]:
    """A component's own vectors (no submodule holds them: Mamba-2's dt_bias, A_log, D), one
    part each, named `prefix`.name."""
    return [Part(f"{prefix}.{n}", size, weights=(Weight("", module_type, n, (size,)),))
            for n, size in sizes.items()]


def gated_parts(prefix: str, d: int, d_ff: int, bias: bool, fused: bool = False,
                sub_norm: bool = False) -> list[Part]:
    """A gated MLP (SwiGLU, GeGLU): gate_proj and up_proj d -> d_ff, down_proj d_ff -> d;
    `fused` (Phi-3): gate_up_proj d -> 2*d_ff in their place, the same weights in one tensor;
    `sub_norm` (BitNet): an RMSNorm of d_ff before down_proj, ffn_sub_norm (no matmul)."""
    gate_up = ([linear(f"{prefix}.gate_up_proj", d, 2 * d_ff, bias)] if fused else
               [linear(f"{prefix}.gate_proj", d, d_ff, bias),
                linear(f"{prefix}.up_proj", d, d_ff, bias)])
    norms = [norm(f"{prefix}.ffn_sub_norm", d_ff)] if sub_norm else []
    return gate_up + [linear(f"{prefix}.down_proj", d_ff, d, bias)] + norms


def load_factory(path: str) -> Callable:
    """'archscope.nn.ffn:swiglu' -> the callable (imported only when a model is built)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


# Wording and drawing receive plain values; `Graph` is report.diagrams' mermaid builder (duck
# typed here, so the kinds do not depend on report/).
Drawer = Callable[..., tuple[list[str], str]]


@dataclass(frozen=True)
class AttentionKind:
    """An attention kind. Cache sizes are elements per token per layer."""

    name: str
    module: str  # factory (spec, attention spec) -> nn.Module, as 'package.module:attr'
    parts: Callable  # (attn, d_model) -> list[Part]
    cache_elements: Callable  # (attn) -> what the model's own cache holds per token
    decompressed_elements: Callable  # (attn) -> per token after any up-projection
    pair_dims: Callable  # (attn, mla convention) -> (q/k dim, v dim) one query-key pair costs
    mha_projections: Callable  # (attn, d_model) -> {module: params} with one K/V per query head
    cache_formula: Callable  # (attn) -> what one token caches, as a formula: '2 × 8 × 64'
    describe: Callable  # (attn) -> one line for `show` and `list`
    label: Callable  # (attn) -> a comparison cell: 'GQA + sliding window 4,096'
    heads: Callable  # (attn) -> 'query/KV heads' cell
    title: Callable  # (attn) -> the diagram's attention subgraph title
    short: Callable  # (attn) -> the model overview's line: 'GQA 32/8 heads'
    draw: Drawer  # (graph, spec, attn) -> (entry node ids, exit node id)
    explain: Callable  # (attn, d_model) -> a paragraph: what it does, its formula, its numbers
    compressed_cache: bool = False  # the cache holds less than the per-head K/V (MLA's latent)
    # (attn) -> multiply-adds per query-key pair an indexer scores (DSA: every key it may see,
    # AttentionSpec.keys_scored), beside the pairs attention reads; 0 where none does
    scoring_macs: Callable = lambda attn: 0

    def factory(self) -> Callable:
        return load_factory(self.module)


@dataclass(frozen=True)
class FFNKind:
    """A feed-forward kind."""

    name: str
    module: str  # factory (spec, ffn spec) -> nn.Module, as 'package.module:attr'
    parts: Callable  # (ffn, d_model) -> list[Part]
    hidden: Callable  # (ffn) -> the hidden width per expert (the expansion numerator)
    activation_width: Callable  # (ffn) -> widest activation per token (memory estimate)
    display: str  # the kind's name for people: 'SwiGLU'
    describe: Callable  # (ffn, d_model) -> one line for `show` and `list`
    label: Callable  # (ffn) -> a comparison cell
    title: Callable  # (ffn) -> the diagram's FFN subgraph title
    short: Callable  # (ffn) -> the model overview's fragment: 'SwiGLU 8,192'
    draw: Drawer  # (graph, spec, ffn) -> (entry node ids, exit node id)
    claim_names: Callable  # (ffn) -> names a document may use for it: ['SwiGLU', 'MoE']
    explain: Callable  # (ffn, d_model) -> a paragraph: what it does, its formula, its numbers

    def factory(self) -> Callable:
        return load_factory(self.module)


@dataclass(frozen=True)
class StateMixerKind:
    """A state mixer kind: a layer's mixer in place of attention that keeps a constant-size
    state per sequence (a conv window, an SSM or recurrent matrix) instead of a per-token cache.
    FLOPs beyond its parts' matmuls (the scan, the recurrence) come from step/scan_flops."""

    name: str
    module: str  # factory (spec, mixer spec) -> nn.Module, as 'package.module:attr'
    parts: Callable  # (mixer, d_model) -> list[Part]
    state_bytes: Callable  # (mixer, activation bytes) -> {state part: bytes per sequence}
    step_flops: Callable  # (mixer) -> {term: FLOPs} of one decode step, besides the parts
    scan_flops: Callable  # (mixer, tokens) -> {term: FLOPs} of a prefill, besides the parts
    activation_width: Callable  # (mixer) -> widest activation per token (memory estimate)
    display: str  # the kind's name for people: 'Mamba-2'
    describe: Callable  # (mixer) -> one line for `show` and `list`
    label: Callable  # (mixer) -> a comparison cell
    title: Callable  # (mixer) -> the diagram's mixer subgraph title
    short: Callable  # (mixer) -> the model overview's fragment
    draw: Drawer  # (graph, spec, mixer) -> (entry node ids, exit node id)
    explain: Callable  # (mixer, d_model) -> a paragraph: what it does, its formula, its numbers
    # its factory also takes the layer's index (lightning's decay depends on the depth)
    per_layer: bool = False

    def factory(self) -> Callable:
        return load_factory(self.module)
