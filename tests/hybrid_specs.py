"""Tiny hybrid specs shared by the family tests (tests/nn and tests/spec)."""

from __future__ import annotations

from parity import tiny_spec

ATTENDS = [1, 4]  # the other three of five layers are Mamba-2


def tiny_granite(**changes):
    """A Granite 4.0-H-like MoE hybrid: five layers, Mamba-2 but for NoPE attention on layers
    1 and 4, a MoE with a wider shared expert, Granite's multipliers."""
    base = dict(n_layers=5, d_model=32, tie_embeddings=True, position=dict(kind="none"),
                attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=8),
                mixer=dict(kind="mamba2", n_heads=8, head_dim=8, d_state=8, n_groups=2,
                           conv_kernel=4, chunk_size=4),
                ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=16, n_shared_experts=1,
                         d_shared=24, router=dict(normalize=True)),
                multipliers=dict(embedding=12.0, attention=0.125, residual=0.22, logits=6.0),
                layers=[dict(select=ATTENDS, mixer="attention")])
    return tiny_spec(**{**base, **changes})
