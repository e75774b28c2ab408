"""The decoder-only LM assembled from a spec's per-layer plan.

Module names follow transformers' Llama (`embed_tokens`, `layers.N.self_attn.q_proj`,
`mlp.gate_proj`, `input_layernorm`, `norm`, `lm_head`), so checkpoint mapping is a short table.
Structure is decided in `__init__`; `forward` has no branches on model families.
"""

from __future__ import annotations

import torch
from torch import nn

from archscope.nn.cache import KVCache
from archscope.nn.dsa import link_shared_indexers
from archscope.nn.linear import Linear
from archscope.nn.norms import make_norm
from archscope.nn.registry import ffn_module, mixer_module, state_module
from archscope.nn.rope import RotaryEmbedding
from archscope.nn.shared_blocks import shared_layers
from archscope.spec.components import NORM_SLOTS, SUBLAYER_SLOTS
from archscope.spec.schema import LayerPlan, ModelSpec


class Block(nn.Module):
    """One decoder layer: a mixer sublayer (attention under `self_attn`, a state mixer under
    `mixer`) and an FFN sublayer (`mlp`), each with its norms and residual. A layer may lack
    one of the two (Nemotron-H's MLP-only and mixer-only layers): its norms go with it. A
    parallel block (norm.position parallel) feeds one normed input to both and adds both
    outputs to the residual. A hybrid layer (Falcon-H1) has attention and a state mixer, both
    fed the mixer sublayer's normed input, their outputs summed; its cache is the pair
    (KV cache, state). Falcon-H1's µP multipliers scale each mixer's input and output and the
    FFN's output (spec.multipliers; 1 builds no multiply)."""

    def __init__(self, spec: ModelSpec, layer: LayerPlan):
        super().__init__()
        slots = NORM_SLOTS[spec.norm.position]
        self.slot = {}  # a plain dict, not registered: it points at modules registered below

        def norms(*names: str) -> None:  # registered under the HF name only (one state_dict key)
            for name in names:
                if name in slots:
                    setattr(self, slots[name], make_norm(spec.norm, spec.d_model))
                self.slot[name] = getattr(self, slots[name]) if name in slots else nn.Identity()

        self.mixer_name = ("self_attn" if layer.attention is not None else
                           "mixer" if layer.state is not None else None)
        if self.mixer_name:
            norms(*SUBLAYER_SLOTS["attn"])  # registration order = the module order
            setattr(self, self.mixer_name, mixer_module(spec, layer))
        self.hybrid = layer.attention is not None and layer.state is not None
        if self.hybrid:  # the state mixer beside attention
            self.mixer = state_module(spec, layer)
        m = spec.mults
        self.scales = {"self_attn": (unless_one(m.attention_in), unless_one(m.attention_out)),
                       "mixer": (unless_one(m.mixer_in), unless_one(m.mixer_out))}
        self.ffn_scale = unless_one(m.ffn_out)
        self.has_ffn = layer.ffn is not None
        if self.has_ffn:
            norms(*SUBLAYER_SLOTS["ffn"])
            self.mlp = ffn_module(spec, layer.ffn)
        self.residual_scale = unless_one(spec.mults.residual)
        self.skip_scale = unless_one(spec.mults.skip)
        self.parallel = spec.norm.position == "parallel"  # every layer has both (the spec checks)
        # MiniMax's layout: the normed input is also what the residual carries on
        self.normed_residual = spec.norm.position == "normed_residual"

    def forward(self, x, rope, start: int, cache):
        n = self.slot
        if self.parallel:  # x + attn(n(x)) + mlp(n(x)): one norm, the FFN beside attention
            h = n["attn_in"](x)
            mixed = self._mix(h, rope, start, cache)
            return self._skip(x) + self._scaled(mixed) + self._scaled(self._ffn(h))
        if self.mixer_name:
            h = n["attn_in"](x)
            mixed = self._mix(h, rope, start, cache)
            x = n["attn_sum"](self._skip(h if self.normed_residual else x)
                              + self._scaled(n["attn_out"](mixed)))
        if self.has_ffn:
            h = n["ffn_in"](x)
            x = n["ffn_sum"](self._skip(h if self.normed_residual else x)
                             + self._scaled(n["ffn_out"](self._ffn(h))))
        return x

    def _mix(self, h, rope, start: int, cache):
        """The mixer sublayer: its one mixer, or a hybrid layer's state mixer plus attention."""
        if not self.hybrid:
            return self._run(self.mixer_name, h, rope, start, cache)
        kv, state = cache if cache is not None else (None, None)
        return (self._run("mixer", h, rope, start, state)
                + self._run("self_attn", h, rope, start, kv))

    def _run(self, name: str, h, rope, start: int, cache):
        into, out = self.scales[name]
        y = getattr(self, name)(h if into is None else h * into, rope, start, cache)
        return y if out is None else y * out

    def _ffn(self, h):
        y = self.mlp(h)
        return y if self.ffn_scale is None else y * self.ffn_scale

    def _scaled(self, y):
        return y if self.residual_scale is None else self.residual_scale * y

    def _skip(self, x):
        return x if self.skip_scale is None else x * self.skip_scale

    def new_cache(self, batch: int, max_len: int, device, dtype):
        """What this layer keeps per sequence: a KV cache, a state, or None (no mixer)."""
        if not self.mixer_name:
            return None
        held = getattr(self, self.mixer_name).new_cache(batch, max_len, device, dtype)
        return (held, self.mixer.new_cache(batch, max_len, device, dtype)) if self.hybrid \
            else held


def _embedding(n: int, d: int) -> nn.Embedding:
    """An embedding without its default init: build_model initialises every weight anyway, and
    nn.Embedding's own normal_ init costs about a second on first use (it imports torch._dynamo)."""
    return nn.Embedding(n, d, _weight=torch.empty(n, d))


def unless_one(multiplier: float) -> float | None:
    """A spec multiplier, or None when it is 1: a multiply by 1 is a kernel per use in an eager
    decode step (and a no-op in value), so the modules skip it when built."""
    return None if multiplier == 1 else multiplier


def rotary_dim(spec: ModelSpec) -> int:
    return spec.attention.rotary_dim


class DecoderLM(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        d = spec.d_model
        self.embed_tokens = _embedding(spec.vocab_size, d)
        learned = spec.position.kind == "learned"
        self.embed_positions = _embedding(spec.max_seq_len, d) if learned else None
        # one cos/sin table per distinct position spec (Gemma 3: local and global RoPE), each
        # computed once per forward; layer i uses table rope_of[i]
        distinct = list(dict.fromkeys(layer.position for layer in spec.plan))
        self.rope_of = tuple(distinct.index(layer.position) for layer in spec.plan)
        self.rotaries = nn.ModuleList(RotaryEmbedding(rotary_dim(spec), p.theta, p.scaling,
                                                      p.reversed)
                                      for p in distinct if spec.position.kind == "rope")
        # nanochat's norm of the embedding (norm.embedding), before the first layer
        self.embedding_norm = make_norm(spec.norm, d) if spec.norm.embedding else None
        self.layers = nn.ModuleList(Block(spec, layer) for layer in spec.plan)
        self.shared_at = frozenset(shared_layers(spec, self.layers))  # Zamba 2's shared blocks
        # a layer may attend to what an earlier one selected (GLM-5's shared DSA indexer)
        link_shared_indexers(getattr(b, b.mixer_name) if b.mixer_name else None
                             for b in self.layers)
        # a post-norm stack already ends on a norm; pre- and output-norm ones add a final one
        self.norm = make_norm(spec.norm, d) if spec.norm.position != "post" else nn.Identity()
        self.lm_head = Linear(d, spec.vocab_size, bias=spec.lm_head.bias)  # Phi-2's has one
        self.tie_weights()
        self.embedding_scale = unless_one(spec.mults.embedding)
        self.logits_scale = unless_one(spec.mults.logits)
        self.logits_softcap = spec.lm_head.softcap  # Gemma 2's final_logit_softcapping

    def tie_weights(self) -> None:
        if self.spec.tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, input_ids: torch.Tensor, cache: KVCache | None = None,
                last_only: bool = False) -> torch.Tensor:
        """Logits [B, T, vocab] for every position. With a cache, continue after what it holds.

        `last_only` gives [B, 1, vocab]: generation needs only the last position, and the
        lm_head over the others would be most of a prompt's wasted work. The cache's length may
        be a device tensor (KVCache.keep_length_on_device), so positions are computed on the
        device: nothing in a decode step then depends on the host (CUDA-graph capture).
        """
        start = cache.length if cache is not None else 0
        t = input_ids.shape[1]
        positions = torch.arange(t, device=input_ids.device) + start
        # a bound on the positions known on the host: a device-held start is below the cache's
        # length (the position is never read back), a host one is plain arithmetic
        covering = cache.max_len if isinstance(start, torch.Tensor) else start + t
        x = self.embed_tokens(input_ids)
        if self.embedding_scale is not None:
            x = x * self.embedding_scale
        if self.embed_positions is not None:
            x = x + self.embed_positions(positions)
        if self.embedding_norm is not None:
            x = self.embedding_norm(x)
        ropes = [rotary(positions, x.dtype, covering) for rotary in self.rotaries] or [None]
        embeddings = x  # what a shared block reads beside the hidden state
        for i, layer in enumerate(self.layers):
            more = {"embeddings": embeddings} if i in self.shared_at else {}
            x = layer(x, ropes[self.rope_of[i]], start,  # without RoPE: one entry, None
                      cache.layers[i] if cache is not None else None, **more)
        if cache is not None:
            cache.length += t  # in place when the length lives on the device
        if last_only:
            x = x[:, -1:]
        logits = self.lm_head(self.norm(x))
        if self.logits_scale is not None:
            logits = logits / self.logits_scale
        if self.logits_softcap is not None:  # cap * tanh(logits / cap), as transformers does
            logits = torch.tanh(logits / self.logits_softcap) * self.logits_softcap
        return logits

    def cover_positions(self, n: int) -> None:
        """Compute the RoPE tables for positions 0 .. n-1 now, in the dtype forward uses."""
        ref = self.embed_tokens.weight
        for rotary in self.rotaries:
            rotary.tables(n, ref.device, ref.dtype)

    def new_cache(self, batch: int, max_len: int, dtype: torch.dtype | None = None) -> KVCache:
        """A static cache for `batch` sequences of up to `max_len` tokens, on the model's device:
        per layer a KV cache (attention), a constant-size state (state mixers) or None."""
        ref = self.embed_tokens.weight
        return KVCache([layer.new_cache(batch, max_len, ref.device, dtype or ref.dtype)
                        for layer in self.layers], max_len)
