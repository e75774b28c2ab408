"""Shared transformer blocks (spec.shared; spec/shared_blocks.py): transformers' Zamba 2
shared transformer, its module and tensor names.

`SharedBlock` (Zamba2AttentionDecoderLayer): over concat(hidden, embeddings), input_layernorm
(2d), `self_attn` (the model's attention, q/k/v from 2d, o_proj to d), pre_ff_layernorm (d),
`feed_forward` (gate_up_proj d -> 2*d_ff, act(gate) * up, down_proj); no residual inside. Each
block holds the LoRA adapters of its own uses at their use index (`*_adapter_list.{k}`; nn.
Identity at the other blocks' indices, as transformers lays them out). `SharedUseBlock` is a
decoder layer that runs a block: its output, through the layer's own `linear` (d -> d), is
added to the input of the layer's mixer (not to the residual). The block is registered under
every use's layer, as transformers ties its copies: a parameter's name is its first use's,
the later uses' names are aliases in the state dict (a checkpoint holds the first only).
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from archscope.nn.attention import GQAAttention
from archscope.nn.ffn import ACTIVATIONS
from archscope.nn.linear import Linear
from archscope.nn.norms import make_norm
from archscope.spec.schema import ModelSpec


def _adapters(spec: ModelSpec, block: int, d_in: int, d_out: int) -> nn.ModuleList:
    """One adapter per use: Linear(d_in, rank) then Linear(rank, d_out) at this block's uses."""
    s, r = spec.shared, spec.shared.adapter_rank
    return nn.ModuleList(nn.Sequential(Linear(d_in, r, bias=False), Linear(r, d_out, bias=False))
                         if s.copy_of(k) == block else nn.Identity() for k in range(s.uses))


class SharedAttention(GQAAttention):
    """The model's attention over 2*d_model inputs, written back to d_model, with the q, k and v
    adapters of the use it runs for (`use`, set by its block before each call)."""

    def __init__(self, spec: ModelSpec, block: int):
        d = spec.d_model
        super().__init__(dataclasses.replace(spec, d_model=2 * d), spec.attention)
        a = spec.attention
        self.o_proj = Linear(a.n_heads * a.head_dim, d, bias=False)
        self.adapted, self.use = spec.shared.attention_adapter, 0
        if self.adapted:
            for x in ("q", "k", "v"):
                setattr(self, f"linear_{x}_adapter_list", _adapters(spec, block, 2 * d, 2 * d))

    def project(self, x):
        q, k, v = super().project(x)
        if not self.adapted:
            return q, k, v
        u = self.use
        return (q + self.linear_q_adapter_list[u](x), k + self.linear_k_adapter_list[u](x),
                v + self.linear_v_adapter_list[u](x))


class SharedFFN(nn.Module):
    """down_proj(act(gate) * up), [gate; up] = gate_up_proj(x) + the use's adapter(x)."""

    def __init__(self, spec: ModelSpec, block: int):
        super().__init__()
        d, f = spec.d_model, spec.ffn
        self.gate_up_proj = Linear(d, 2 * f.d_ff, bias=f.bias)
        self.down_proj = Linear(f.d_ff, d, bias=f.bias)
        self.act = ACTIVATIONS[f.activation]
        if spec.shared.ffn_adapter:
            self.gate_up_proj_adapter_list = _adapters(spec, block, d, 2 * f.d_ff)
        self.adapted = spec.shared.ffn_adapter

    def forward(self, x, use: int):
        y = self.gate_up_proj(x)
        if self.adapted:
            y = y + self.gate_up_proj_adapter_list[use](x)
        gate, up = y.chunk(2, dim=-1)
        return self.down_proj(self.act(gate) * up)


class SharedBlock(nn.Module):
    def __init__(self, spec: ModelSpec, block: int):
        super().__init__()
        self.self_attn = SharedAttention(spec, block)
        self.feed_forward = SharedFFN(spec, block)
        self.input_layernorm = make_norm(spec.norm, 2 * spec.d_model)
        self.pre_ff_layernorm = make_norm(spec.norm, spec.d_model)

    def forward(self, hidden, embeddings, rope, start, cache, use: int):
        self.self_attn.use = use
        y = self.input_layernorm(torch.cat([hidden, embeddings], dim=-1))
        y = self.pre_ff_layernorm(self.self_attn(y, rope, start, cache))
        return self.feed_forward(y, use)


class UseCache:
    """A layer's caches when it runs a shared block: the block's KV cache and the mixer's
    state (nn/cache.KVCache counts each as its kind through `parts`)."""

    def __init__(self, kv, state):
        self.kv, self.state = kv, state
        self.parts = (kv, state)
        self.conv = getattr(state, "conv", None)

    def nbytes(self) -> int:
        return self.kv.nbytes() + self.state.nbytes()

    def reset(self) -> None:
        self.kv.reset()
        self.state.reset()


class SharedUseBlock(nn.Module):
    """A decoder layer (`layer`, an nn/model.Block with a state mixer) that runs shared block
    `block` first: block(hidden, embeddings) through `linear` is added to the mixer's input."""

    def __init__(self, spec: ModelSpec, layer: nn.Module, block: SharedBlock, use: int):
        super().__init__()
        # the mixer and its norm under `mamba_decoder` (transformers' Zamba2HybridLayer names)
        self.mamba_decoder = nn.Module()
        self.mamba_decoder.input_layernorm = layer.input_layernorm
        self.mamba_decoder.mamba = layer.mixer
        if layer.has_ffn:  # (Zamba 2's layers have none)
            self.post_attention_layernorm, self.mlp = layer.post_attention_layernorm, layer.mlp
        # registered at every use, as transformers' tied copies are: the parameters are named
        # at the first use (named_parameters), the later names are aliases (state_dict)
        self.shared_transformer = block
        self.linear = Linear(spec.d_model, spec.d_model, bias=False)
        self.use, self._layer = use, (layer,)  # the layer's norms slots and scale, unregistered
        self.mixer_name = None  # (its mixer is no attention a later layer may share)

    def forward(self, x, rope, start: int, cache, embeddings=None):
        kv, state = (cache.kv, cache.state) if cache is not None else (None, None)
        t = self.linear(self.shared_transformer(x, embeddings, rope, start, kv, self.use))
        layer = self._layer[0]
        n = layer.slot
        mixed = self.mamba_decoder.mamba(n["attn_in"](x + t), rope, start, state)
        x = n["attn_sum"](x + layer._scaled(n["attn_out"](mixed)))
        if layer.has_ffn:
            x = n["ffn_sum"](x + layer._scaled(n["ffn_out"](self.mlp(n["ffn_in"](x)))))
        return x

    def new_cache(self, batch: int, max_len: int, device, dtype):
        return UseCache(self.shared_transformer.self_attn.new_cache(batch, max_len, device, dtype),
                        self.mamba_decoder.mamba.new_cache(batch, max_len, device, dtype))


def shared_layers(spec: ModelSpec, layers: nn.ModuleList) -> tuple[int, ...]:
    """Wrap the layers that run a shared block in `layers` (DecoderLM's Blocks) in
    SharedUseBlocks over `copies` SharedBlocks; the indices replaced."""
    s = spec.shared
    if s is None:
        return ()
    blocks = [SharedBlock(spec, b) for b in range(s.copies)]
    for k, i in enumerate(s.at):
        layers[i] = SharedUseBlock(spec, layers[i], blocks[s.copy_of(k)], k)
    return s.at
