"""The spec of shared transformer blocks: the model's `attention` and `ffn` as blocks whose
weights are stored once and run at several layers (Zamba 2's "shared transformer").

A frozen dataclass whose field names are the YAML keys (DESIGN.md section 2); `check` validates
it against the model, which it reads its parts from.

Each block is transformers' Zamba2AttentionDecoderLayer: over concat(hidden, embeddings), 2 *
d_model wide, an RMSNorm (input_layernorm, 2*d), the model's attention (q, k, v from 2*d_model;
o_proj back to d_model), an RMSNorm of d (pre_ff_layernorm), the model's gated FFN (gate_up_proj
d -> 2*d_ff fused, down_proj), no residual inside the block. `copies` distinct blocks are used in
turn: the k-th use (layers `at`, in order) runs copy k % copies. Each use has its own weights
beside the shared ones: `linear` d -> d (no bias), whose output is added to the input of that
layer's mixer (not to the residual stream), and, with `adapter_rank`, LoRA adapters (two
matrices, no bias) added to the FFN's gate_up projection (`ffn_adapter`) and to q, k and v
(`attention_adapter`, each 2*d -> rank -> 2*d, so n_heads * head_dim == n_kv_heads * head_dim
== 2*d_model).

Counting: the blocks' weights once (copies of them); their compute, and their attention's KV
cache, at every use.
"""

from __future__ import annotations

from dataclasses import dataclass

from archscope.spec.checks import require


@dataclass(frozen=True)
class SharedBlockSpec:
    at: tuple[int, ...]  # the layers that run a block (before their mixer), in order
    copies: int = 1  # distinct blocks, used in turn (transformers' num_mem_blocks)
    adapter_rank: int = 0  # the per-use LoRA adapters' rank (0: none)
    ffn_adapter: bool = False  # a per-use adapter on the FFN's gate_up projection
    attention_adapter: bool = False  # per-use adapters on q, k and v

    def validate(self) -> None:
        require(self.copies >= 1, "copies", f"must be 1 or more, got {self.copies}")
        require(len(self.at) >= 1, "at", "lists the layers that run a block: at least one")
        require(all(b > a for a, b in zip(self.at, self.at[1:])), "at",
                f"layer indices in increasing order, each once; got {list(self.at)}")
        require(self.adapter_rank >= 0, "adapter_rank",
                f"must be 0 or more, got {self.adapter_rank}")
        adapters = self.ffn_adapter or self.attention_adapter
        require(not adapters or self.adapter_rank > 0, "adapter_rank",
                "an adapter needs a rank above 0")

    def check(self, spec) -> None:
        """Against the model `spec` (its layers, attention and FFN)."""
        n = spec.n_layers
        require(self.at[0] >= 0 and self.at[-1] < n, "shared.at",
                f"layer indices are 0..{n - 1}, got {list(self.at)}")
        require(len(self.at) >= self.copies, "shared.copies",
                f"{self.copies} blocks but {len(self.at)} uses: a block no layer runs")
        a, f = spec.attention, spec.ffn
        require(a.kind == "gqa" and not (a.fused_qkv or a.output_gate or a.sinks or a.qk_norm
                                         or a.sub_norm or a.window or a.chunk or a.indexer
                                         or a.bias),
                "attention", "a shared block's attention is plain GQA (q, k, v, o_proj without "
                "bias, no window, norms, gates or sinks)")
        require(f.kind in ("swiglu", "geglu") and not (f.limit or f.sub_norm), "ffn",
                f"a shared block's FFN is a gated MLP (swiglu or geglu), got {f.kind}")
        require(spec.norm.kind == "rmsnorm" and spec.norm.position == "pre", "norm",
                "a shared block's norms are RMSNorms before its sublayers (norm: rmsnorm, pre)")
        width = 2 * spec.d_model
        if self.attention_adapter:
            require(a.n_heads * a.head_dim == width and a.n_kv_heads == a.n_heads,
                    "shared.attention_adapter", f"the q, k and v adapters are {width} wide "
                    f"(2 * d_model): n_heads * head_dim and n_kv_heads * head_dim must be {width}")
        for i in self.at:
            layer = spec.plan[i]
            require(layer.state is not None, "shared.at",
                    f"layer {i} runs a block into its mixer, so it needs a state mixer")

    @property
    def uses(self) -> int:
        return len(self.at)

    def copy_of(self, use: int) -> int:
        """The block the `use`-th use runs."""
        return use % self.copies
