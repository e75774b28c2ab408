"""HF checkpoint tensor names <-> archscope module names, one small table per HF layout.

A rule maps one HF tensor to one or more of ours. Several targets mean the HF tensor is a fusion
of ours, split along `split_dim` in the targets' sizes (GPT-2's c_attn holds q, k and v).
`conv1d` marks GPT-2's Conv1D, which stores weights as [in, out], the transpose of nn.Linear;
`swap` marks fused expert tensors stored [E, in, out] (Llama 4), transposed in their last two
dims to archscope's [E, out, in].
`alias` marks an older checkpoint name of a tensor another rule already maps: it is read, but
`ours_to_hf` writes only the current name.
`layout` names a re-arrangement between HF's tensor and ours (see LAYOUTS: gpt-oss's experts).
Several rules may match one HF name when its archscope name depends on the layout (Granite 4.0's
shared_mlp: a MoE's shared expert or the dense MLP; Nemotron-H's block `norm`: the mixer's or
the MLP's): the first whose targets the model has is used.
Patterns use `{i}` for the layer index and `{p}` for the parameter name (weight or bias).

MoE experts: transformers 5.x holds each layer's routed experts as two fused 3-D tensors,
`experts.gate_up_proj` [E, 2*d_expert, d] and `experts.down_proj` [E, d, d_expert]; archscope's
MoE stores them the same way, so they map by name. (Checkpoints saved by older transformers or
by the model authors keep one 2-D tensor per expert, e.g. Mixtral's `experts.{j}.w1`; merging
those is the loader's job, not a rename.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import torch

from archscope.errors import CheckpointError
from archscope.weights.layouts import LAYOUTS
from archscope.weights.mapping_granitemoehybrid import bamba, granitemoehybrid
from archscope.weights.mapping_nemotron_h import NEMOTRON_H_ROWS
from archscope.weights.mapping_qwen3_next import QWEN3_NEXT_ROWS


@dataclass(frozen=True)
class Rule:
    hf: str
    ours: tuple[str, ...]
    conv1d: bool = False
    split_dim: int = 0
    alias: bool = False
    layout: str | None = None  # a key of LAYOUTS

    def regex(self) -> re.Pattern:
        pattern = re.escape(self.hf).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{p\}", r"(?P<p>weight|bias)")
        return re.compile(pattern + "$")


def _rules(*rows) -> tuple[Rule, ...]:
    return tuple(Rule(hf, (ours,) if isinstance(ours, str) else tuple(ours), **kw)
                 for hf, ours, *extra in rows for kw in [extra[0] if extra else {}])


# Llama and everything described as "Llama + something" (Mistral, Qwen2, Granite) share names.
LLAMA = _rules(
    ("model.embed_tokens.weight", "embed_tokens.weight"),
    ("model.layers.{i}.self_attn.q_proj.{p}", "layers.{i}.self_attn.q_proj.{p}"),
    ("model.layers.{i}.self_attn.k_proj.{p}", "layers.{i}.self_attn.k_proj.{p}"),
    ("model.layers.{i}.self_attn.v_proj.{p}", "layers.{i}.self_attn.v_proj.{p}"),
    ("model.layers.{i}.self_attn.o_proj.{p}", "layers.{i}.self_attn.o_proj.{p}"),
    ("model.layers.{i}.mlp.gate_proj.{p}", "layers.{i}.mlp.gate_proj.{p}"),
    ("model.layers.{i}.mlp.up_proj.{p}", "layers.{i}.mlp.up_proj.{p}"),
    ("model.layers.{i}.mlp.down_proj.{p}", "layers.{i}.mlp.down_proj.{p}"),
    ("model.layers.{i}.input_layernorm.{p}", "layers.{i}.input_layernorm.{p}"),
    ("model.layers.{i}.post_attention_layernorm.{p}", "layers.{i}.post_attention_layernorm.{p}"),
    ("model.norm.{p}", "norm.{p}"),
    ("lm_head.weight", "lm_head.weight"),
)

GPT2 = _rules(
    ("transformer.wte.weight", "embed_tokens.weight"),
    ("transformer.wpe.weight", "embed_positions.weight"),
    ("transformer.h.{i}.ln_1.{p}", "layers.{i}.input_layernorm.{p}"),
    ("transformer.h.{i}.attn.c_attn.{p}", ["layers.{i}.self_attn.q_proj.{p}",
                                          "layers.{i}.self_attn.k_proj.{p}",
                                          "layers.{i}.self_attn.v_proj.{p}"], {"conv1d": True}),
    ("transformer.h.{i}.attn.c_proj.{p}", "layers.{i}.self_attn.o_proj.{p}", {"conv1d": True}),
    ("transformer.h.{i}.ln_2.{p}", "layers.{i}.post_attention_layernorm.{p}"),
    ("transformer.h.{i}.mlp.c_fc.{p}", "layers.{i}.mlp.up_proj.{p}", {"conv1d": True}),
    ("transformer.h.{i}.mlp.c_proj.{p}", "layers.{i}.mlp.down_proj.{p}", {"conv1d": True}),
    ("transformer.ln_f.{p}", "norm.{p}"),
    ("lm_head.weight", "lm_head.weight"),
)

# Mixtral = Llama attention + a MoE FFN under `mlp` (router `gate`, fused experts).
MOE = _rules(
    ("model.layers.{i}.mlp.gate.weight", "layers.{i}.mlp.gate.weight"),
    ("model.layers.{i}.mlp.experts.gate_up_proj", "layers.{i}.mlp.experts.gate_up_proj"),
    ("model.layers.{i}.mlp.experts.down_proj", "layers.{i}.mlp.experts.down_proj"),
)
MIXTRAL = LLAMA + MOE

# GraniteMoe = Mixtral with other module names: `block_sparse_moe`, `router`; its own
# checkpoints use `input_linear`/`output_linear`/`router.layer` (same layouts, gate rows first).
_GMOE = "model.layers.{i}.block_sparse_moe"
GRANITEMOE = LLAMA + _rules(
    (f"{_GMOE}.router.weight", "layers.{i}.mlp.gate.weight"),
    (f"{_GMOE}.experts.gate_up_proj", "layers.{i}.mlp.experts.gate_up_proj"),
    (f"{_GMOE}.experts.down_proj", "layers.{i}.mlp.experts.down_proj"),
    (f"{_GMOE}.router.layer.weight", "layers.{i}.mlp.gate.weight", {"alias": True}),
    (f"{_GMOE}.input_linear.weight", "layers.{i}.mlp.experts.gate_up_proj", {"alias": True}),
    (f"{_GMOE}.output_linear.weight", "layers.{i}.mlp.experts.down_proj", {"alias": True}),
)

# DeepSeek-V2 = Llama norms/embeddings + MLA projections + (dense first layers | MoE with
# shared experts). Dense layers use the Llama mlp names, so only the new names are listed.
_ATTN = "model.layers.{i}.self_attn"
_MLA_NAMES = ("q_proj", "q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa",
              "kv_a_layernorm", "kv_b_proj", "o_proj")
DEEPSEEK_V2 = tuple(r for r in LLAMA if ".self_attn." not in r.hf) + MOE + _rules(
    *[(f"{_ATTN}.{name}.{{p}}", f"layers.{{i}}.self_attn.{name}.{{p}}") for name in _MLA_NAMES],
    *[(f"model.layers.{{i}}.mlp.shared_experts.{proj}.{{p}}",
       f"layers.{{i}}.mlp.shared_experts.{proj}.{{p}}")
      for proj in ("gate_proj", "up_proj", "down_proj")],
)

# DeepSeek-V3 = DeepSeek-V2 + the router's selection bias (a buffer, in the checkpoint too)
DEEPSEEK_V3 = DEEPSEEK_V2 + _rules(("model.layers.{i}.mlp.gate.e_score_correction_bias",
                                    "layers.{i}.mlp.gate.e_score_correction_bias"))

# Qwen3 = Llama + per-head q_norm/k_norm; OLMo 2 = Llama + full-width q_norm/k_norm, and its
# norms on each sublayer's output: post_attention_layernorm (the name Llama uses for the FFN's
# input norm) and post_feedforward_layernorm, with no input_layernorm.
_QK_NORMS = _rules(*[(f"{_ATTN}.{name}.weight", f"layers.{{i}}.self_attn.{name}.weight")
                     for name in ("q_norm", "k_norm")])
QWEN3 = LLAMA + _QK_NORMS
QWEN3_MOE = QWEN3 + MOE  # Qwen3-MoE = Qwen3 + Mixtral's MoE names (dense layers: Llama's mlp)
OLMO2 = tuple(r for r in LLAMA if ".input_layernorm." not in r.hf) + _QK_NORMS + _rules(
    ("model.layers.{i}.post_feedforward_layernorm.weight",
     "layers.{i}.post_feedforward_layernorm.weight"),
)

# Phi-3 = Llama with q/k/v in one self_attn.qkv_proj and gate/up in one mlp.gate_up_proj;
# archscope builds the fused Linears under the same names (attention.fused_qkv,
# ffn.fused_gate_up), so they map one to one, with no split or copy.
_FUSED = _rules(*[(f"model.layers.{{i}}.{name}.{{p}}", f"layers.{{i}}.{name}.{{p}}")
                  for name in ("self_attn.qkv_proj", "mlp.gate_up_proj")])
PHI3 = tuple(r for r in LLAMA if not any(f".{proj}." in r.hf for proj in
                                         ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"))
             ) + _FUSED

# GLM-4.5 = Llama's attention names + Qwen3's q_norm/k_norm + DeepSeek-V3's MoE names (router
# with its correction bias, fused experts, shared_experts); dense first layers: Llama's mlp
_SHARED = tuple(r for r in DEEPSEEK_V3 if ".mlp.shared_experts." in r.hf or ".mlp.gate." in r.hf)
GLM4_MOE = QWEN3 + MOE + tuple(r for r in _SHARED if r not in MOE)


# gpt-oss = Llama attention (biased, plus self_attn.sinks) + a MoE under `mlp` with a biased
# `router` and biased experts in GptOssExperts' layout.
_OSS = "model.layers.{i}.mlp"
GPT_OSS = LLAMA + _rules(
    (f"{_ATTN}.sinks", "layers.{i}.self_attn.sinks"),
    (f"{_OSS}.router.{{p}}", "layers.{i}.mlp.gate.{p}"),
    (f"{_OSS}.experts.gate_up_proj", "layers.{i}.mlp.experts.gate_up_proj",
     {"layout": "interleaved_gate_up"}),
    (f"{_OSS}.experts.gate_up_proj_bias", "layers.{i}.mlp.experts.gate_up_proj_bias",
     {"layout": "interleaved"}),
    (f"{_OSS}.experts.down_proj", "layers.{i}.mlp.experts.down_proj", {"layout": "transposed"}),
    (f"{_OSS}.experts.down_proj_bias", "layers.{i}.mlp.experts.down_proj_bias"),
)

# Gemma 3 = Qwen3's names + the sandwich's two FFN norms (input_layernorm and
# post_attention_layernorm around attention, pre_/post_feedforward_layernorm around the MLP).
# The multimodal wrapper (Gemma3ForConditionalGeneration) holds the same text model under
# model.language_model (transformers 5) or language_model.model (checkpoints saved by 4.x);
# its vision tower has no counterpart here: the loader skips it (validate.without_vision).
GEMMA3_TEXT = QWEN3 + _rules(*[(f"model.layers.{{i}}.{name}.weight", f"layers.{{i}}.{name}.weight")
                               for name in ("pre_feedforward_layernorm",
                                            "post_feedforward_layernorm")])
GEMMA3 = tuple(Rule(r.hf.replace("model.", f"{prefix}", 1), r.ours, alias=alias)
               for prefix, alias in (("model.language_model.", False),
                                     ("language_model.model.", True))
               for r in GEMMA3_TEXT if r.hf.startswith("model.")) + _rules(
    ("lm_head.weight", "lm_head.weight"),
    ("language_model.lm_head.weight", "lm_head.weight", {"alias": True}))

# Llama 4 = Llama attention and norms + `feed_forward` for the FFN: dense layers' gate/up/
# down_proj, or Llama4TextMoe's router, shared_expert and experts, whose gate_up_proj
# [E, d, 2*d_expert] (gate columns first) and down_proj [E, d_expert, d] are ours transposed.
# The multimodal wrapper holds the same under `language_model.` (its vision tower is not built).
_FF = "model.layers.{i}.feed_forward"
LLAMA4 = tuple(r for r in LLAMA if ".mlp." not in r.hf) + _rules(
    *[(f"{_FF}.{proj}.{{p}}", f"layers.{{i}}.mlp.{proj}.{{p}}")
      for proj in ("gate_proj", "up_proj", "down_proj")],
    (f"{_FF}.router.weight", "layers.{i}.mlp.gate.weight"),
    *[(f"{_FF}.experts.{proj}", f"layers.{{i}}.mlp.experts.{proj}", {"layout": "transposed"})
      for proj in ("gate_up_proj", "down_proj")],
    *[(f"{_FF}.shared_expert.{proj}.{{p}}", f"layers.{{i}}.mlp.shared_experts.{proj}.{{p}}")
      for proj in ("gate_proj", "up_proj", "down_proj")],
)
LLAMA4_WRAPPED = tuple(Rule("language_model." + r.hf, r.ours, r.conv1d, r.split_dim, r.alias,
                            r.layout) for r in LLAMA4)

TABLES: dict[str, tuple[Rule, ...]] = {
    "llama": LLAMA, "mistral": LLAMA, "qwen2": LLAMA, "granite": LLAMA, "gpt2": GPT2,
    "qwen3": QWEN3, "olmo2": OLMO2, "phi3": PHI3, "qwen3_moe": QWEN3_MOE,
    "smollm3": LLAMA,  # SmolLM3 = Llama's names; NoPE changes no weight
    "mixtral": MIXTRAL, "granitemoe": GRANITEMOE, "deepseek_v2": DEEPSEEK_V2,
    "deepseek_v3": DEEPSEEK_V3, "glm4_moe": GLM4_MOE, "gpt_oss": GPT_OSS,
    "gemma3_text": GEMMA3_TEXT, "gemma3": GEMMA3, "llama4_text": LLAMA4, "llama4": LLAMA4_WRAPPED,
    "nemotron_h": _rules(*NEMOTRON_H_ROWS),
    "qwen3_next": QWEN3 + MOE + _rules(*QWEN3_NEXT_ROWS),
    "granitemoehybrid": granitemoehybrid(LLAMA, GRANITEMOE, _rules), "bamba": bamba(LLAMA, _rules),
}


def table_for(model_type: str) -> tuple[Rule, ...]:
    try:
        return TABLES[model_type]
    except KeyError:
        raise CheckpointError(f"no weight-name table for model_type '{model_type}'; "
                              f"available: {', '.join(sorted(TABLES))}") from None


def _fill(pattern: str, match: re.Match) -> str:
    out = pattern
    for key, value in match.groupdict().items():
        out = out.replace("{" + key + "}", value)
    return out


def _transposed(t: torch.Tensor, rule: Rule, to_hf: bool = False) -> torch.Tensor:
    if rule.layout is not None:
        return LAYOUTS[rule.layout][int(to_hf)](t)
    return t.t() if rule.conv1d and t.dim() == 2 else t


def route(table, name: str, our_shapes: dict) -> tuple[Rule, list[str]] | None:
    """The rule that maps HF tensor `name` and our names it fills (None: no rule matches)."""
    found = [(rule, m) for rule in table if (m := _regex(rule).match(name))]
    if not found:
        return None
    # a tensor two layouts name alike (Granite 4.0's shared_mlp: a MoE's shared expert or the
    # dense MLP) has a rule each: the first whose targets the model has wins
    rule, m = next(((r, m) for r, m in found
                    if all(_fill(p, m) in our_shapes for p in r.ours)), found[0])
    return rule, [_fill(p, m) for p in rule.ours]


@lru_cache(maxsize=None)
def _regex(rule: Rule) -> re.Pattern:
    return rule.regex()


def hf_to_ours(table, hf_tensors: dict, our_shapes: dict) -> tuple[dict, list[str]]:
    """Rename (and split/transpose) HF tensors into our names.

    Returns (our tensors, HF names no rule matched). `our_shapes` sizes the splits of fused
    tensors; shape and presence checks are the loader's job.
    """
    ours, unmatched = {}, []
    for name, tensor in hf_tensors.items():
        routed = route(table, name, our_shapes)
        if routed is None:
            unmatched.append(name)
            continue
        rule, targets = routed
        tensor = _transposed(tensor, rule)
        if len(targets) == 1:
            ours[targets[0]] = tensor
            continue
        if any(t not in our_shapes for t in targets):
            unmatched.append(name)
            continue
        sizes = [our_shapes[t][rule.split_dim] for t in targets]
        for target, part in zip(targets, torch.split(tensor, sizes, dim=rule.split_dim)):
            ours[target] = part
    return ours, unmatched


def ours_to_hf(table, our_tensors: dict) -> dict:
    """The inverse mapping: our state dict -> HF names (fused tensors concatenated back)."""
    out = {}
    for rule in table:
        if rule.alias:
            continue
        first = re.compile(re.escape(rule.ours[0]).replace(r"\{i\}", r"(?P<i>\d+)")
                           .replace(r"\{p\}", r"(?P<p>weight|bias)") + "$")
        for name in our_tensors:
            m = first.match(name)
            if not m:
                continue
            parts = [our_tensors[_fill(p, m)] for p in rule.ours]
            tensor = parts[0] if len(parts) == 1 else torch.cat(parts, dim=rule.split_dim)
            out[_fill(rule.hf, m)] = _transposed(tensor, rule, to_hf=True).contiguous()
    return out
