"""Mistral 4 (transformers' `mistral4`, Mistral4ForCausalLM; the text model of Mistral Small
4): DeepSeek-V3's layers (MLA on interleaved RoPE pairs, dense SwiGLU MLPs for the first
first_k_dense_replace layers, then MoE with shared experts, Mistral's keys), except:
- the router (Mistral4TopkRouter): softmax scores and no correction bias; experts are chosen
  among the topk_group groups whose two best scores sum highest, weighted by their softmax
  scores (renormalised by norm_topk_prob) times routed_scaling_factor. With every group
  eligible (n_group 1, the class default, or topk_group == n_group) that is greedy top-k, read
  so; a real group limit is refused naming n_group (archscope's group-limited routers are
  DeepSeek-V2's, by a group's best score, and V3's noaux_tc, with a correction bias);
- the rotary embedding is Llama's over head_dim = qk_nope + qk_rope times rope_parameters'
  partial_rotary_factor, which the class sets to qk_rope_head_dim's share (another refused);
- Llama 4's query scale by position on every layer, q * (1 + beta * log(1 + floor(position /
  n))) after RoPE, beta and n being rope_parameters' llama_4_scaling_beta and
  original_max_position_embeddings: the attention's temperature tuning counted from the
  position (temperature_scale beta, temperature_floor n, temperature_offset 0; none at beta 0).
Written for the specs no other class writes as they are: MLA with a softmax top-k router that
renormalises its weights (transformers' DeepseekV2 ignores norm_topk_prob)."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.deepseek_v2 import DEEPSEEK_V2, mla
from archscope.spec.families.deepseek_v2 import read as read_v2
from archscope.spec.families.deepseek_v2 import write as write_v2
from archscope.spec.families.deepseek_v3 import _without_normalize
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import PARTIAL, _moe
from archscope.spec.schema import ModelSpec

_BETA = "llama_4_scaling_beta"
_ORIGINAL = "original_max_position_embeddings"


def _section(c: Keys) -> tuple[str, dict]:
    """(name, mapping) of the file's RoPE section (rope_parameters, else rope_scaling)."""
    for name in ("rope_parameters", "rope_scaling"):
        if c.mapping(name):
            return name, c.mapping(name)
    return "rope_parameters", {}


def _rope_checked(c: Keys) -> tuple[Keys, dict]:
    """The file with its RoPE section checked (the rotary share qk_rope_head_dim's) and
    stripped of the keys only Mistral 4 reads, for DeepSeek's reader; and the query scale by
    position, q * (1 + beta * log(1 + floor(position / original))), as the attention's
    temperature tuning counted from the position ({} at beta 0)."""
    name, params = _section(c)
    if not params:  # Mistral4Config would build its default section: YaRN with beta 0.1
        raise c.error(f"rope_parameters.{_BETA}", "absent with rope_parameters: Mistral4Config "
                                                  "then builds its default YaRN section (beta "
                                                  "0.1), which a config.json should state")
    beta = params.get(_BETA)
    if beta is None or params.get(_ORIGINAL) is None:
        missing = _BETA if beta is None else _ORIGINAL
        raise c.error(f"{name}.{missing}", f"required: transformers' Mistral4 scales q by 1 + "
                                           f"{_BETA} * log(1 + floor(position / {_ORIGINAL})) "
                                           "and fails without it")
    beta = c.number(f"{name}.{_BETA}", value=beta, positive=False)
    if beta < 0:
        raise c.error(f"{name}.{_BETA}", f"{what(beta)}: the query scale is at least 1 only "
                                         "for beta >= 0")
    original = c.size(f"{name}.{_ORIGINAL}", value=params[_ORIGINAL])
    scale = {"temperature_floor": original, "temperature_scale": beta,
             "temperature_offset": 0} if beta else {}
    nope, rope = c.size("qk_nope_head_dim"), c.size("qk_rope_head_dim")
    if params.get(PARTIAL) is not None:
        share = c.number(f"{name}.{PARTIAL}", value=params[PARTIAL])
        if int((nope + rope) * share) != rope:
            raise c.error(f"{name}.{PARTIAL}", f"Mistral4 rotates (qk_nope_head_dim + "
                                               f"qk_rope_head_dim) * this = {int((nope + rope) * share)} "
                                               f"dims of each head, but its RoPE part has "
                                               f"qk_rope_head_dim {rope}: only {rope}/{nope + rope} is built")
    rest = {k: v for k, v in params.items()
            if k not in (_BETA, PARTIAL, "max_position_embeddings")}
    sub = Keys({**c.raw, name: rest}, c.model_type, c.where, c.fields, c.family)
    sub.defaulted = c.defaulted
    return sub, scale


def _router(c: Keys) -> dict:
    """Routed experts + shared ones; the softmax router read as greedy where every group is
    eligible (see the module doc)."""
    n_group, topk_group = c.size("n_group"), c.size("topk_group")
    experts = c.size("n_routed_experts")
    if experts % n_group or experts // n_group < 2:
        raise c.error("n_group", f"n_routed_experts ({experts}) must split into n_group "
                                 f"({n_group}) groups of at least 2 (the router sums each "
                                 "group's two best scores)")
    if topk_group > n_group:
        raise c.error("topk_group", f"cannot exceed n_group ({n_group}), got {topk_group}")
    if topk_group < n_group:
        raise c.error("n_group", f"Mistral4's router keeps the {topk_group} of {n_group} groups "
                                 "whose two best softmax scores sum highest, a group-limited "
                                 "routing without a correction bias that archscope does not "
                                 "build (its group-limited routers are DeepSeek-V2's, by a "
                                 "group's best score, and V3's noaux_tc, with a correction "
                                 "bias); only topk_group == n_group (no limit) is read")
    router = {"method": "greedy", "normalize": bool(c.flag("norm_topk_prob", null=True)),
              "scaling_factor": c.number("routed_scaling_factor")}
    return {**_moe(c, experts="n_routed_experts"), "d_expert": c.size("moe_intermediate_size"),
            "n_shared_experts": c.size("n_shared_experts", least=0), "router": router}


def _dense(c: Keys, n: int) -> list[int]:  # Mistral4 reads no moe_layer_freq
    return list(range(min(c.size("first_k_dense_replace", least=0), n)))


def read(c: Keys) -> dict:
    c, scale = _rope_checked(c)
    if c.flag("rope_interleave", null=True) is not True:
        raise c.error("rope_interleave", "archscope's MLA rotates interleaved pairs only")
    out = read_v2(c, moe=_router, mlp_bias=False, refused_by=None, dense_layers=_dense)
    out["attention"].update(scale)  # every layer's: the attention is model-wide
    return out


def write(s: ModelSpec) -> dict:
    """DeepSeek-V2's keys with Mistral 4's router (greedy: one group) and its RoPE section
    (beta 0; original_max_position_embeddings, which the query scale reads, the spec's own
    where YaRN gives none)."""
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    if moe is not None and moe.routing.method != "greedy":
        raise SpecError("Mistral4's router is read as greedy top-k only (one group)",
                        key="ffn.router.method")
    out = {k: v for k, v in write_v2(_without_normalize(s), divisible=False).items()
           if k not in ("mlp_bias", "topk_method")}
    a, rope = s.attention, out["rope_parameters"]
    beta = 0.0
    if a.temperature_floor is not None:  # the query scale: one original context for it and YaRN
        if a.temperature_offset != 0 or rope.get(_ORIGINAL, a.temperature_floor) != \
                a.temperature_floor:
            raise SpecError("Mistral 4 scales q from the position (temperature_offset 0) by "
                            f"floor {_ORIGINAL}, the one YaRN reads too",
                            key="attention.temperature_offset")
        rope[_ORIGINAL], beta = a.temperature_floor, a.temperature_scale
    rope.setdefault(_ORIGINAL, s.max_seq_len)
    rope.update({_BETA: beta, PARTIAL: a.qk_rope_head_dim / a.qk_head_dim})
    out.update(rope_interleave=True)
    if moe is not None:
        out.update(norm_topk_prob=moe.routing.normalize, n_group=1, topk_group=1)
    return out


def renormalised_softmax(s: ModelSpec) -> bool:
    """MLA + MoE layers whose softmax router renormalises its greedy top-k: what transformers'
    DeepseekV2 (which ignores norm_topk_prob) cannot write."""
    return mla(s) and any(layer.is_moe and layer.ffn.routing.method == "greedy"
                          and layer.ffn.routing.scoring == "softmax"
                          and not layer.ffn.routing.correction_bias
                          and layer.ffn.routing.normalize for layer in s.plan)


MISTRAL4 = DEEPSEEK_V2.but(
    "mistral4", "Mistral4ForCausalLM", read=read, write=write, exports=renormalised_softmax,
    attentions=("mla",), ffns=("moe", "swiglu"), per_expert=DEEPSEEK_V2.per_expert,
    spec_keys=DEEPSEEK_V2.key_table(**{"ffn.router.method": "n_group",
                                       "ffn.router.normalize": "norm_topk_prob"}),
    names=("mistral",),
    doc="DeepSeek-V3's MLA + MoE with a softmax router, a query scale by position")
FAMILIES = (MISTRAL4,)
