"""The MLP of Nemotron-H: down_proj(relu(up_proj(x))²), squared ReLU and no gate.

GPT-2's two matrices with the squared ReLU, which defines the kind (the spec's activation is
relu2; transformers' NemotronH: mlp_hidden_act relu2). up_proj d -> d_ff, down_proj d_ff -> d
(biases when ffn.bias; Nemotron-H has none). Its activations: d_ff per token.
"""

from __future__ import annotations

from archscope.kinds.base import FFNKind
from archscope.kinds.mlp import draw, explain, parts
from archscope.kinds.registry import register
from archscope.units import commas


def describe(f, d: int) -> str:
    bias = ", bias" if f.bias else ""
    return f"MLP {d}->{f.d_ff}->{d} (squared ReLU{bias})"


register(FFNKind(
    name="relu2", module="archscope.nn.ffn:relu2", parts=parts,
    hidden=lambda f: f.d_ff, activation_width=lambda f: f.d_ff,
    display="squared-ReLU MLP", describe=describe, label=lambda f: "MLP (squared ReLU)",
    title=lambda f: "squared-ReLU MLP", short=lambda f: f"squared-ReLU MLP {commas(f.d_ff)}",
    draw=draw, claim_names=lambda f: ["MLP", "relu2", "squared ReLU", "ReLU²"],
    explain=lambda f, d: explain(f, d, "ReLU²")))
