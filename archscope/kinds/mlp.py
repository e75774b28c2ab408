"""The plain two-matrix MLP of GPT-2: down_proj(act(up_proj(x))), up d -> d_ff, down d_ff -> d
(biases when ffn.bias); activation xielu (Apertus) adds act_fn's alpha_p and alpha_n. Its
activations: d_ff per token."""

from __future__ import annotations

from archscope.kinds.registry import register
from archscope.kinds.base import FFNKind, Part, Weight, linear
from archscope.kinds.wording import ACTIVATION_NAMES
from archscope.units import bias_text, commas


def parts(ffn, d: int):
    # xIELU (Apertus): act_fn's learned alpha_p and alpha_n, one each (elementwise: no matmul)
    act = [Part("ffn.act_fn", 2, weights=tuple(Weight("act_fn", "XIELU", n, (1,))
                                               for n in ("alpha_p", "alpha_n")))
           ] if ffn.activation == "xielu" else []
    return [linear("ffn.up_proj", d, ffn.d_ff, ffn.bias),
            linear("ffn.down_proj", ffn.d_ff, d, ffn.bias), *act]


def draw(g, spec, f, act_name: str | None = None):
    d = commas(spec.d_model)
    up = g.node("up", f"up_proj{bias_text(f.bias)}<br/>{d} → {commas(f.d_ff)}")
    act = g.node("act", act_name or ACTIVATION_NAMES[f.activation])
    down = g.node("down", f"down_proj{bias_text(f.bias)}<br/>{commas(f.d_ff)} → {d}")
    g.edge(up, act)
    g.edge(act, down)
    return [up], down


def describe(f, d: int) -> str:
    bias = ", bias" if f.bias else ""
    return f"MLP {d}->{f.d_ff}->{d} ({f.activation}{bias})"


def explain(f, d: int, act: str | None = None) -> str:
    act = act or ACTIVATION_NAMES[f.activation]
    return (f"out = W_down·{act}(W_up·x), {commas(d)} → {commas(f.d_ff)} → {commas(d)}: an "
            f"expansion of {commas(f.d_ff)} / {commas(d)} = {f.d_ff / d:.2f}×, two matrices of "
            f"{commas(d * f.d_ff)} weights each ({commas(2 * d * f.d_ff)} in all). Nothing gates "
            f"it: the activation alone decides what passes; a gated unit (SwiGLU) of the same "
            f"width would need a third matrix, {commas(3 * d * f.d_ff)} weights.")


register(FFNKind(
    name="mlp", module="archscope.nn.ffn:mlp", parts=parts,
    hidden=lambda f: f.d_ff, activation_width=lambda f: f.d_ff,
    display="MLP", describe=describe, label=lambda f: f"MLP ({f.activation})",
    title=lambda f: "MLP", short=lambda f: f"MLP {commas(f.d_ff)}", draw=draw,
    claim_names=lambda f: ["MLP", f.activation], explain=explain))
