"""MiniMax-01 (transformers' `minimax`, MiniMaxForCausalLM) config.json <-> spec, both ways.

MiniMax = Mixtral's skeleton (GQA with RoPE over the whole head, an optional sliding window, a
softmax top-k router renormalised, experts of intermediate_size on every layer) with:
- lightning attention (`mixer` kind lightning: n_heads and head_dim the attention's, block_size,
  the activation hidden_act) on the `linear_attention` layers and softmax attention on the
  `full_attention` ones (`layer_types`, else MiniMaxConfig's rule: layer i attends when i is
  even): in the spec, `mixer: attention` overrides on those layers. The decay per head is not a
  key: it follows from the head and the depth (spec/lightning.py);
- the residual taken after each norm (norm.position normed_residual: MiniMaxDecoderLayer sets
  residual = input_layernorm(x)), and DeepNorm's scales on each add, residual * alpha +
  sublayer * beta: the *_alpha_factor keys are multipliers.skip and the *_beta_factor keys
  multipliers.residual. archscope has one of each for every sublayer, so the three alphas
  (full_attn_, linear_attn_, mlp_) must be equal, and so must the three betas (MiniMax-Text-01's
  are: 3.5566 and 1).
The published files' `rotary_dim` and `postnorm` are read by no transformers module (its MiniMax
rotates the whole head and always takes the residual after the norm): they are not read here.
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.mixtral import MIXTRAL, MOE_WEIGHTS
from archscope.spec.families.mixtral import read as read_mixtral
from archscope.spec.families.mixtral import write as write_mixtral
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _check_types, _select
from archscope.spec.hf_writers_base import HF_ACT
from archscope.spec.schema import ModelSpec

_TYPES = ("linear_attention", "full_attention")
_SUBLAYERS = ("full_attn", "linear_attn", "mlp")  # each with an _alpha_factor, a _beta_factor


def _layer_types(c: Keys, n: int) -> list[str]:
    types = c.get("layer_types", None)
    if types is None:  # MiniMaxConfig.__post_init__'s rule: layer i attends when i is even
        types = ["full_attention" if (i + 1) % 2 else "linear_attention" for i in range(n)]
    _check_types(c, types, n, _TYPES, "MiniMax's two layer types")
    return types


def _scale(c: Keys, which: str) -> float:
    """The one alpha (or beta) of every sublayer; unequal ones are refused."""
    keys = [f"{sub}_{which}_factor" for sub in _SUBLAYERS]
    values = [c.number(key) for key in keys]
    for key, value in zip(keys[1:], values[1:]):
        if value != values[0]:
            raise c.error(key, f"differs from {keys[0]} ({values[0]}): archscope scales every "
                               f"sublayer's residual add alike (one multipliers."
                               f"{'skip' if which == 'alpha' else 'residual'}), got {value}")
    return values[0]


def read(c: Keys) -> dict:
    out = read_mixtral(c)
    n, attn = out["n_layers"], out["attention"]
    out["norm"]["position"] = "normed_residual"
    skip, residual = _scale(c, "alpha"), _scale(c, "beta")
    if skip != 1 or residual != 1:
        out["multipliers"] = {"skip": skip, "residual": residual}
    attends = [i for i, t in enumerate(_layer_types(c, n)) if t == "full_attention"]
    if len(attends) == n:
        return out
    out["mixer"] = {"kind": "lightning", "n_heads": attn["n_heads"],
                    "head_dim": attn["head_dim"], "block_size": c.size("block_size"),
                    "activation": out["ffn"]["activation"]}
    if attends:
        out["layers"] = [{"select": _select(attends), "mixer": "attention"}]
    return out


def write(s: ModelSpec) -> dict:
    """MiniMaxConfig's keys for `s`; what the class cannot build is refused or comes back
    different from the read-back (the exporter names the key)."""
    for layer in s.plan:
        if layer.ffn is None or (layer.attention is None and layer.state is None):
            missing = "mixer" if layer.ffn is not None else "FFN"
            raise SpecError(f"layer {layer.index} has no {missing}: every MiniMax layer has "
                            "a mixer and an FFN", key="layers")
    a, m = s.attention, s.mixer
    if a.rotary_fraction not in (None, 1.0):
        raise SpecError("transformers' MiniMax rotates the whole head (it reads no "
                        "rotary_dim or partial_rotary_factor)", key="attention.rotary_fraction")
    out = write_mixtral(s)
    if m is not None:
        if m.kind != "lightning":
            raise SpecError(f"MiniMax's state mixer is lightning, not {m.kind!r}",
                            key="mixer.kind")
        for field, value in (("n_heads", a.n_heads), ("head_dim", a.head_dim)):
            if getattr(m, field) != value:
                raise SpecError(f"MiniMax's lightning layers take the attention's {field} "
                                f"({value}), got {getattr(m, field)}", key=f"mixer.{field}")
        if HF_ACT[m.activation] != out["hidden_act"]:
            raise SpecError("MiniMax's lightning layers take the experts' activation "
                            f"(hidden_act {out['hidden_act']})", key="mixer.activation")
        out["block_size"] = m.block_size
    mults = s.mults
    out.update({f"{sub}_alpha_factor": mults.skip for sub in _SUBLAYERS})
    out.update({f"{sub}_beta_factor": mults.residual for sub in _SUBLAYERS})
    out["layer_types"] = [_TYPES[layer.state is None] for layer in s.plan]
    return out


# Weight names: Mixtral's (q/k/v/o_proj on the full_attention layers, the router `gate` and
# fused experts) + the lightning layers' modules and decay buffers under `self_attn`
# (archscope's `mixer`: same module names, nn/lightning.py).
LIGHTNING_ROWS = (
    *[(f"model.layers.{{i}}.self_attn.{name}.weight", f"layers.{{i}}.mixer.{name}.weight")
      for name in ("norm", "qkv_proj", "out_proj", "output_gate")],
    *[(f"model.layers.{{i}}.self_attn.{name}", f"layers.{{i}}.mixer.{name}")
      for name in ("slope_rate", "query_decay", "key_decay", "diagonal_decay")],
)


def _claims(s: ModelSpec) -> bool:
    return s.mixer is not None and s.mixer.kind == "lightning"


MINIMAX = MIXTRAL.but(
    "minimax", "MiniMaxForCausalLM", read=read, write=write, exports=_claims,
    mixers=("lightning",), ffns=("moe",),
    weights=LLAMA.weights + MOE_WEIGHTS + rules(*LIGHTNING_ROWS),
    per_expert=MIXTRAL.per_expert, renamed_tensors=MIXTRAL.renamed_tensors,
    spec_keys=MIXTRAL.key_table(**{"mixer.block_size": "block_size", "layers": "layer_types",
                                   "multipliers.skip": "mlp_alpha_factor",
                                   "multipliers.residual": "mlp_beta_factor"}),
    names=("minimax",), doc="Mixtral + lightning-attention layers + DeepNorm residuals")
FAMILIES = (MINIMAX,)
