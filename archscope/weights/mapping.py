"""HF checkpoint tensor names <-> archscope module names, by the rules each family declares
(archscope/spec/families/<family>.py; the Rule type is families/base.py's).

A rule maps one HF tensor to one or more of ours. Several targets mean the HF tensor is a fusion
of ours, split along `split_dim` in the targets' sizes (GPT-2's c_attn holds q, k and v).
`conv1d` marks GPT-2's Conv1D, which stores weights as [in, out], the transpose of nn.Linear.
`alias` marks an older checkpoint name of a tensor another rule already maps: it is read, but
`ours_to_hf` writes only the current name. `part` marks one of several HF tensors that are
slices of one of ours (DBRX's w1 and v1: our experts' gate_up_proj). `layout` names a re-arrangement between HF's tensor
and ours (see LAYOUTS: gpt-oss's experts, Llama 4's transposed experts). Several rules may match
one HF name when its archscope name depends on the layout (Granite 4.0's shared_mlp: a MoE's
shared expert or the dense MLP; Nemotron-H's block `norm`: the mixer's or the MLP's): the first
whose targets the model has is used.

MoE experts: transformers 5.x holds each layer's routed experts as two fused 3-D tensors,
`experts.gate_up_proj` [E, 2*d_expert, d] and `experts.down_proj` [E, d, d_expert]; archscope's
MoE stores them the same way, so they map by name. (Checkpoints saved by older transformers or
by the model authors keep one 2-D tensor per expert, e.g. Mixtral's `experts.{j}.w1`; merging
those is the loader's job, weights/experts.py, by the family's `per_expert` names.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import torch

from archscope.errors import CheckpointError
from archscope.spec.families.base import Rule
from archscope.spec.families.registry import families, weight_family
from archscope.weights.layouts import LAYOUTS


def table_for(model_type: str) -> tuple[Rule, ...]:
    """The weight-name rules of a checkpoint of `model_type` (its family's: archscope/spec/
    families/; a type read with another's class uses that class's names)."""
    family = weight_family(model_type)
    if family is None or not family.weights:
        known = ", ".join(k for k, f in families().items() if f.weights)
        raise CheckpointError(f"no weight-name table for model_type '{model_type}'; "
                              f"available: {known}")
    return family.weights


def _fill(pattern: str, match: re.Match) -> str:
    out = pattern
    for key, value in match.groupdict().items():
        out = out.replace("{" + key + "}", value)
    return out


def _transposed(t: torch.Tensor, rule: Rule, to_hf: bool = False, shape=None) -> torch.Tensor:
    """HF's tensor as ours (`shape`: our tensor's, a part's slice of it for a `part` rule), or
    ours as HF's (`to_hf`)."""
    if rule.layout is not None:
        return LAYOUTS[rule.layout][1](t) if to_hf else LAYOUTS[rule.layout][0](t, shape)
    return t.t() if rule.conv1d and t.dim() == 2 else t


@dataclass(frozen=True)
class Part:
    """A `part` rule's HF tensor in our layout: slice `index` of `count` of our tensor along
    `dim`; `joined` puts the slices together as they come."""

    index: int
    count: int
    dim: int
    tensor: torch.Tensor


def joined(pending: dict, name: str, part: Part) -> torch.Tensor | None:
    """Keep `part` of our tensor `name` in `pending`; the whole tensor once every slice came."""
    slots = pending.setdefault(name, [None] * part.count)
    slots[part.index] = part.tensor
    if any(slot is None for slot in slots):
        return None
    del pending[name]
    return torch.cat(slots, dim=part.dim)


def _part_shape(rule: Rule, shape) -> tuple[int, ...] | None:
    if shape is None or rule.part is None:
        return shape
    out = list(shape)
    out[rule.split_dim] //= rule.part[1]
    return tuple(out)


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
    tensors; shape and presence checks are the loader's job. A tensor a `part` rule maps is
    joined with its other slices when they are among `hf_tensors`; one whose others are not
    comes back as a `Part` (the caller joins them: `joined`).
    """
    ours, unmatched, pending = {}, [], {}
    for name, tensor in hf_tensors.items():
        routed = route(table, name, our_shapes)
        if routed is None:
            unmatched.append(name)
            continue
        rule, targets = routed
        tensor = _transposed(tensor, rule, shape=_part_shape(rule, our_shapes.get(targets[0])))
        if rule.part is not None:
            part = Part(*rule.part, rule.split_dim, tensor)
            whole = joined(pending, targets[0], part)
            ours[targets[0]] = part if whole is None else whole
            continue
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
                           .replace(r"\{k\}", r"(?P<k>\d+)")
                           .replace(r"\{p\}", r"(?P<p>weight|bias)") + "$")
        for name in our_tensors:
            m = first.match(name)
            if not m:
                continue
            parts = [our_tensors[_fill(p, m)] for p in rule.ours]
            tensor = parts[0] if len(parts) == 1 else torch.cat(parts, dim=rule.split_dim)
            if rule.part is not None:  # this rule's slice of ours
                tensor = tensor.chunk(rule.part[1], dim=rule.split_dim)[rule.part[0]]
            out[_fill(rule.hf, m)] = _transposed(tensor, rule, to_hf=True).contiguous()
    return out
