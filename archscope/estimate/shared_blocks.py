"""Shared transformer blocks (spec.shared; spec/shared_blocks.py) as parts: their weights are
counted once (`copies` blocks), their compute and their attention's KV cache at every use.

One block: input_layernorm RMSNorm(2d), the model's attention with q, k, v from 2d and o_proj
to d, pre_ff_layernorm RMSNorm(d), the model's gated FFN with gate_up_proj fused (d -> 2*d_ff)
and down_proj. Per use: `linear` d -> d, and the LoRA adapters (in -> rank -> out, no bias) on
gate_up (d -> 2*d_ff) and on q, k, v (2d -> 2d each). Part names put them in the breakdown's
attention, ffn and norms groups, as transformers' module names do (self_attn, feed_forward).
Tensors are named as the builder registers them (nn/shared_blocks.py, transformers' names):
each block under the layer of its first use (`shared_transformer`), holding the adapters of
its own uses at their use index (`*_adapter_list.{k}`); `linear` under every use's layer.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from archscope.kinds.base import Part, Weight, linear, merged, norm
from archscope.spec import ModelSpec

BLOCK = "shared_transformer"
_DECODER = {"mixer": "mamba_decoder.", "input_layernorm": "mamba_decoder."}
ADAPTED = ("q", "k", "v")


@functools.lru_cache(maxsize=256)
def _block(d: int, attn, ffn) -> tuple[Part, ...]:
    """One block's stored parts (its adapters aside), tensors under the block's modules."""
    h, kv, hd, w = attn.n_heads, attn.n_kv_heads, attn.head_dim, 2 * d
    projections = [linear("attention.q_proj", w, h * hd), linear("attention.k_proj", w, kv * hd),
                   linear("attention.v_proj", w, kv * hd), linear("attention.o_proj", h * hd, d)]
    gated = [linear("ffn.gate_up_proj", d, 2 * ffn.d_ff, ffn.bias),
             linear("ffn.down_proj", ffn.d_ff, d, ffn.bias)]
    return (*[_under(p, "self_attn") for p in projections],
            *[_under(p, "feed_forward") for p in gated],
            norm("norms", w, module="input_layernorm"),
            norm("norms", d, module="pre_ff_layernorm"))


def _under(part: Part, module: str) -> Part:
    return replace(part, weights=tuple(w.under(module) for w in part.weights))


def _adapter(name: str, d_in: int, rank: int, d_out: int, module: str) -> Part:
    """A LoRA adapter nn.Sequential(Linear(d_in, rank), Linear(rank, d_out)), at `module`."""
    return merged(name, [linear(name, d_in, rank, module="0"), linear(name, rank, d_out,
                                                                          module="1")],
                  module=module)


def _use(spec: ModelSpec, k: int) -> tuple[Part, ...]:
    """The k-th use's own parts: its adapters (tensors under its block, at index k), then its
    `linear` (under its layer)."""
    s, d = spec.shared, spec.d_model
    r, w = s.adapter_rank, 2 * d
    out = []
    if s.attention_adapter:
        out += [_adapter(f"attention.{x}_adapter", w, r, w,
                         f"{BLOCK}.self_attn.linear_{x}_adapter_list.{k}") for x in ADAPTED]
    if s.ffn_adapter:
        out.append(_adapter("ffn.gate_up_adapter", d, r, 2 * spec.ffn.d_ff,
                            f"{BLOCK}.feed_forward.gate_up_proj_adapter_list.{k}"))
    return (*out, linear("attention.linear", d, d))


def stored_parts(spec: ModelSpec) -> list[Part]:
    """Every stored parameter of the shared blocks: `copies` blocks and each use's own."""
    s = spec.shared
    if s is None:
        return []
    block = [replace(p, copies=s.copies, active=s.copies)
             for p in _block(spec.d_model, spec.attention, spec.ffn)]
    return block + [p for k in range(s.uses) for p in _use(spec, k)]


def use_parts(spec: ModelSpec) -> list[tuple[tuple[Part, ...], int]]:
    """(the parts one use runs: its block's and its own, how many uses run alike ones): the
    compute at every use. Uses differ only in which weights they read, so one row, all uses."""
    s = spec.shared
    if s is None:
        return []
    return [(_block(spec.d_model, spec.attention, spec.ffn) + _use(spec, 0), s.uses)]


def use_index(spec: ModelSpec) -> dict[int, int]:
    """Layer -> its use index, for the layers that run a shared block."""
    return {} if spec.shared is None else {i: k for k, i in enumerate(spec.shared.at)}


def layer_weights(spec: ModelSpec, index: int, own: list[Weight]) -> list[Weight]:
    """Layer `index`'s tensors as the builder registers them, given its `own` (structure.
    layer_weights): where it runs a shared block, its mixer and that mixer's norm under
    `mamba_decoder` (`mamba`, `input_layernorm`: transformers' Zamba2HybridLayer), then its
    block (with the adapters of the block's uses; registered at every use, a tied copy's names
    aliases), then its `linear`."""
    s = spec.shared
    uses = use_index(spec)
    if index not in uses:
        return own
    k = uses[index]
    out = [replace(w, module=_DECODER.get(w.module.split(".")[0], "") + w.module)
           if w.module.split(".")[0] in _DECODER else w for w in own]
    out = [replace(w, module=w.module.replace("mamba_decoder.mixer", "mamba_decoder.mamba", 1))
           for w in out]
    block = _block(spec.d_model, spec.attention, spec.ffn)
    mine = [u for u in range(s.uses) if s.copy_of(u) == s.copy_of(k)]
    adapters = [p for u in mine for p in _use(spec, u)[:-1]]
    attn = [w.under(BLOCK) for p in block[:4] for w in p.weights]
    attn += [w for p in adapters if p.name.startswith("attention.") for w in p.weights]
    ffn = [w.under(BLOCK) for p in block[4:6] for w in p.weights]
    ffn += [w for p in adapters if p.name.startswith("ffn.") for w in p.weights]
    norms = [w.under(BLOCK) for p in block[6:] for w in p.weights]
    out += attn + ffn + norms
    return out + list(_use(spec, k)[-1].weights)


def kv_uses(spec: ModelSpec) -> list[tuple[int, object]]:
    """(layer, attention spec) of each use: its attention caches keys and values there."""
    return [] if spec.shared is None else [(i, spec.attention) for i in spec.shared.at]


def add_use_macs(spec: ModelSpec, tokens: int, pairs, pair_dims, component, macs: dict,
                 uses: int | None = None) -> None:
    """Add to `macs` (estimate/flops.py's components) the shared blocks' multiply-adds at every
    use (or at `uses` of them), `tokens` new tokens each: their projections, adapters and
    linear, and their attention's `pairs(attention)` query-key pairs per head."""
    for parts, count in use_parts(spec):
        n = count if uses is None else uses
        for part in parts:
            if part.macs:
                macs[component(part.name)] += part.macs * tokens * n
        a = spec.attention
        qk, v = pair_dims(a)
        macs["attention_qk"] += pairs(a) * a.n_heads * qk * n
        macs["attention_av"] += pairs(a) * a.n_heads * v * n


def stored_parts_by_layer(spec: ModelSpec) -> list[tuple[Part, int]]:
    """`stored_parts` one copy a part, each with the layer it is registered at first: a block
    at its first use, a use's own parts at that use (estimate/tensors.py: per-layer formats)."""
    s = spec.shared
    if s is None:
        return []
    block = _block(spec.d_model, spec.attention, spec.ffn)
    return ([(p, s.at[b]) for b in range(s.copies) for p in block]
            + [(p, i) for k, i in enumerate(s.at) for p in _use(spec, k)])
