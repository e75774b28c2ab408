"""Every stored weight tensor of a model with its shape and role: what weight formats price.

Block-quantised formats store each 2-D weight row by row, in blocks along the row (the input
features of nn.Linear, ggml's ne[0]), so pricing them needs each tensor's shape, not only its
parameter count. This module reads the same parts the parameter count reads (structure.py, and
through it each kind's entry in archscope/kinds) and recovers each matrix's shape:

- a projection reads the residual stream (input width d_model) unless it writes it: o_proj and
  down_proj (and any `*out_proj`) have d_model outputs, so their input width is macs / d_model;
  MLA's q_b_proj and kv_b_proj read the q / kv latents (q_lora_rank, kv_lora_rank);
- a merged expert part (routed or shared SwiGLU experts) holds gate_proj and up_proj (d -> h)
  and down_proj (h -> d), h = macs / (3 d), and `copies` of them (routed: n_experts); ungated
  experts (ffn.expert) up_proj and down_proj, h = macs / (2 d);
- a part's parameters beyond its matmul weights are its biases (one vector per projection);
- norms and other parts without matmul work are vectors (a layer's `norms` part is its two
  norms of the same width: two vectors);
- the token embedding is vocab rows of d_model (ggml's token_embd has ne[0] = d_model too).
A part none of these rules fits is kept as one row of its weights, so totals stay exact.
The tests check that the tensors add up to count_params' total and active counts on every preset.
"""

from __future__ import annotations

from dataclasses import dataclass

from archscope.estimate.shared_blocks import stored_parts_by_layer
from archscope.estimate.structure import Part, embedding_parts, head_parts, layer_parts
from archscope.spec import LayerPlan, ModelSpec

# The roles of the shipped kinds (a kind added later may bring its own, named by its parts).
ROLES = ("embedding", "positional", "attention", "ffn", "router", "experts", "shared_experts",
         "norms", "biases", "lm_head")
_WRITES_RESIDUAL = ("o_proj", "down_proj", "out_proj")
_LATENT_INPUT = {"q_b_proj": "q_lora_rank", "kv_b_proj": "kv_lora_rank"}


@dataclass(frozen=True)
class Tensor:
    """One stored weight tensor (or `copies` identical-shaped ones: a layer's routed experts)."""

    name: str  # 'attention.q_proj', 'ffn.experts.down_proj', 'norms', 'attention.q_proj.bias'
    role: str  # one of ROLES (or a later kind's own part name)
    rows: int  # output features (1 for a vector)
    cols: int  # input features: the axis blocks and groups run along (a vector's length)
    copies: int = 1  # stored copies (routed experts: n_experts)
    active: int = 1  # copies one token reads (routed experts: top_k)
    layer: int | None = None  # decoder layer index; None for embeddings, final norm and head

    @property
    def elements(self) -> int:
        return self.rows * self.cols

    @property
    def kind(self) -> str:
        """The module's own name: 'q_proj', 'down_proj', 'router', 'norms'."""
        return self.name.removesuffix(".bias").rsplit(".", 1)[-1]


def _role(name: str) -> str:
    """'ffn.experts' -> 'experts'; 'attention.q_proj' -> 'attention'; a part of a kind added
    later ('mixer.in_proj') keeps its own first name as its role."""
    first, _, rest = name.partition(".")
    sub = rest.split(".", 1)[0]
    if first == "ffn" and sub in ("router", "experts", "shared_experts"):
        return sub
    return first


def _input_width(part: Part, d: int, layer: LayerPlan | None) -> int:
    kind = part.name.rsplit(".", 1)[-1]
    if kind.endswith(_WRITES_RESIDUAL):
        return part.macs // d if part.macs % d == 0 else 0
    if kind == "fc2_latent_proj" and layer is not None:  # reads the MoE's latent
        return layer.ffn.d_latent
    if kind in _LATENT_INPUT and layer is not None:
        return getattr(layer.attention, _LATENT_INPUT[kind], None) or 0
    return d


def _vector(name: str, role: str, size: int, part: Part, layer: int | None) -> Tensor:
    return Tensor(name, role, 1, size, part.copies, part.active, layer)


def _linear(part: Part, d: int, plan: LayerPlan | None) -> list[Tensor]:
    index = plan.index if plan is not None else None
    d_in = _input_width(part, d, plan)
    role = _role(part.name)
    if not d_in or part.macs % d_in:
        matrix = Tensor(part.name, role, 1, part.macs, part.copies, part.active, index)
    else:
        matrix = Tensor(part.name, role, part.macs // d_in, d_in, part.copies, part.active, index)
    bias = part.params - part.macs
    return [matrix] + ([_vector(part.name + ".bias", "biases", bias, part, index)] if bias else [])


def _experts(part: Part, d: int, plan: LayerPlan) -> list[Tensor]:
    """A merged expert part: gate_proj (gated experts only) and up_proj h x d, down_proj d x h."""
    names = ("gate_proj", "up_proj") if plan.ffn.expert is None else ("up_proj",)
    if part.name == "ffn.experts":  # the routed experts read a latent (d_latent) if any
        d = plan.ffn.d_latent or d
    h, rest = divmod(part.macs, (len(names) + 1) * d)
    if rest:  # not d x h matrices: keep it whole rather than guess
        return _linear(part, d, plan)
    role, k = _role(part.name), (part.copies, part.active, plan.index)
    out = [*[Tensor(f"{part.name}.{name}", role, h, d, *k) for name in names],
           Tensor(f"{part.name}.down_proj", role, d, h, *k)]
    bias = part.params - part.macs
    return out + ([_vector(part.name + ".bias", "biases", bias, part, plan.index)] if bias else [])


def _split(part: Part, d: int, plan: LayerPlan | None) -> list[Tensor]:
    if part.params == 0:
        return []  # a tied lm_head or a post-norm model's absent final norm: nothing stored
    if part.name in ("embedding", "positional"):
        return [Tensor(part.name, part.name, part.params // d, d)]
    if part.macs == 0:  # no matmul: a norm's weight (and bias), stored as a vector
        index = plan.index if plan else None
        if part.name == "norms" and part.params % 2 == 0:  # a layer's two norms, merged
            return [_vector(part.name, "norms", part.params // 2, part, index)] * 2
        return [_vector(part.name, "norms", part.params, part, index)]
    if part.name in ("ffn.experts", "ffn.shared_experts") and plan is not None:
        return _experts(part, d, plan)
    return _linear(part, d, plan)


def _shaped(part: Part, layer: int) -> list[Tensor]:
    """A part's tensors from the shapes it states (a shared block's, estimate/shared_blocks.py:
    its q/k/v read 2 * d_model), at `layer`; an adapter's two matrices `.0` and `.1`."""
    out, role = [], _role(part.name)
    matrices = sum(len(w.shape) == 2 for w in part.weights)
    for w in part.weights:
        name = part.name + (f".{w.module.rsplit('.', 1)[-1]}" if matrices > 1 else "")
        if len(w.shape) == 2:
            out.append(Tensor(name, role, *w.shape, part.copies, part.active, layer))
        else:
            bias = w.name == "bias"
            out.append(Tensor(name + ".bias" if bias else name, "biases" if bias else "norms",
                              1, w.shape[0], part.copies, part.active, layer))
    return out


def weight_tensor_counts(spec: ModelSpec) -> list[tuple[Tensor, int]]:
    """weight_tensors(spec) with each distinct decoder layer's tensors once, beside how many
    layers are like it (ModelSpec.distinct_layers): the same tensors and totals for a pricing
    that does not ask which layer a tensor is in, at a fraction of the work (a record of a
    61-layer model builds 3 layers' tensors, not 61; a sweep builds a record per variant)."""
    d = spec.d_model
    out = [(t, 1) for p in embedding_parts(spec) for t in _split(p, d, None)]
    for plan, n in spec.distinct_layers:
        out += [(t, n) for p in layer_parts(spec, plan) for t in _split(p, d, plan)]
    out += [(t, 1) for p, i in stored_parts_by_layer(spec) for t in _shaped(p, i)]
    return out + [(t, 1) for p in head_parts(spec) for t in _split(p, d, None)]


def weight_tensors(spec: ModelSpec) -> list[Tensor]:
    """Every stored tensor of `spec`, in forward order (embeddings, layers, final norm, head)."""
    d = spec.d_model
    out = [t for p in embedding_parts(spec) for t in _split(p, d, None)]
    for plan in spec.plan:
        out += [t for p in layer_parts(spec, plan) for t in _split(p, d, plan)]
    out += [t for p, i in stored_parts_by_layer(spec) for t in _shaped(p, i)]  # shared blocks
    return out + [t for p in head_parts(spec) for t in _split(p, d, None)]
