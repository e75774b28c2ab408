"""The sharding plan as DTensor parallel styles, read off the analytic plan's own tables.

Which Linear is column- or row-parallel is `archscope.estimate.parallel`'s COLUMN and ROW (the
same names `archscope fit` prices), so the run and the plan cannot drift apart by a name:
- COLUMN (q/k/v, gate/up, MLA's q_proj/q_b_proj/kv_b_proj): ColwiseParallel, weight rows
  (and bias) Shard(0), the output stays local (this rank's heads / hidden units);
- ROW (o_proj, down_proj): RowwiseParallel, weight columns Shard(1), the output all-reduced:
  the one all-reduce after each mixer and FFN sublayer;
- the vocabulary: embed_tokens RowwiseParallel (rows Shard(0): a vocab-parallel embedding, one
  all-reduce), lm_head ColwiseParallel with a Replicate output (the logits all-gathered);
- routed experts: `ExpertParallel`, whole experts Shard(0) over the ranks (ep = tp); inside a
  MoE layer the routed experts' and the shared experts' outputs stay partial sums and the MoE
  module all-reduces them once (PrepareModuleOutput Partial -> Replicate), the plan's one
  all-reduce per FFN sublayer;
- everything else (norms, the router, MLA's q_a_proj and kv_a_proj_with_mqa, learned positions)
  stays a plain tensor, replicated: every rank builds it whole.
Attention modules then hold their local head counts (`localize`). The collectives come from
the styles' redistributions, never from hand-written calls.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.distributed.tensor import Partial, Replicate, Shard, distribute_module, \
    distribute_tensor
from torch.distributed.tensor.parallel import (ColwiseParallel, ParallelStyle,
                                               PrepareModuleOutput, RowwiseParallel,
                                               parallelize_module)

from archscope.estimate.parallel import COLUMN, ROW
from archscope.nn.attention import GQAAttention
from archscope.nn.mla import MLAttention
from archscope.nn.model import DecoderLM
from archscope.nn.moe import MoE, RoutedExperts


class ExpertParallel(ParallelStyle):
    """Routed experts split whole over the mesh: the fused weights' dim 0 (experts) Shard(0),
    rank r holding experts [r n/ep, (r+1) n/ep). Every rank sees every token (attention is
    tensor-parallel) and the router's choice; a slot routed to another rank's expert gets
    weight 0 and this rank's first expert (an exact zero; it costs that expert's matmul on the
    slot), and the experts' output is this rank's partial sum, reduced by the MoE module."""

    def _apply(self, module: nn.Module, mesh) -> nn.Module:
        return distribute_module(module, mesh, self._partition, self._inputs)

    @staticmethod
    def _partition(name, module, mesh):
        for pname, param in list(module.named_parameters(recurse=False)):
            module.register_parameter(pname, nn.Parameter(
                distribute_tensor(param, mesh, [Shard(0)], src_data_rank=None),
                requires_grad=False))

    @staticmethod
    def _inputs(module, inputs, mesh):
        x, weights, index = inputs
        held = module.down_proj.to_local().shape[0]
        first = mesh.get_local_rank() * held
        mine = (index >= first) & (index < first + held)
        return x, weights * mine, torch.where(mine, index - first, 0)


def _linear_style(name: str, module: nn.Module, parent: nn.Module | None):
    kind = name.rsplit(".", 1)[-1]
    if kind in COLUMN:
        return ColwiseParallel()
    if kind in ROW:  # inside a MoE (shared experts): a partial sum the MoE reduces once
        return RowwiseParallel(output_layouts=Partial()) if isinstance(parent, MoE) \
            else RowwiseParallel()
    return None  # replicated


def sharding_plan(model: DecoderLM) -> dict[str, ParallelStyle]:
    """fully-qualified module name -> parallel style, for parallelize_module."""
    plan: dict[str, ParallelStyle] = {
        "embed_tokens": RowwiseParallel(input_layouts=Replicate()),
        "lm_head": ColwiseParallel(output_layouts=Replicate()),
    }
    moe_of: dict[str, nn.Module] = {}
    for name, module in model.named_modules():
        if isinstance(module, MoE):
            plan[name] = PrepareModuleOutput(output_layouts=Partial(),
                                             desired_output_layouts=Replicate())
            for sub, _ in module.named_modules():
                moe_of[f"{name}.{sub}" if sub else name] = module
        elif isinstance(module, RoutedExperts):
            plan[name] = ExpertParallel()
        elif isinstance(module, nn.Linear) and name.startswith("layers."):
            style = _linear_style(name, module, moe_of.get(name.rsplit(".", 2)[0]))
            if style is not None:
                plan[name] = style
    return plan


def localize(model: nn.Module, tp: int) -> None:
    """Each attention module computes with this rank's heads: n_heads / tp query heads and
    n_kv_heads / tp KV heads (support.check_supported refused fewer KV heads than ranks)."""
    for module in model.modules():
        if isinstance(module, GQAAttention):
            module.n_heads //= tp
            module.n_kv_heads //= tp
        elif isinstance(module, MLAttention):
            module.n_heads //= tp


def shard_model(model: DecoderLM, mesh) -> DecoderLM:
    """Apply the plan to `model` (materialised or on meta) in place over a 1-D `mesh`: every
    rank keeps only its shards (sliced locally, no scatter), then re-ties a tied head."""
    parallelize_module(model, mesh, sharding_plan(model), src_data_rank=None)
    localize(model, mesh.size())
    model.tie_weights()  # embedding and head are both Shard(0) of the vocabulary
    return model
