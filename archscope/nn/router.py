"""The MoE router: which top_k experts each token uses, and their weights (fp32).

- the gate `gate` (d_model -> n_experts; a bias when routing.bias, gpt-oss), computed in fp32;
  scores = softmax(logits) (or sigmoid: routing.scoring);
- greedy: the top_k scores; group_limited_greedy (DeepSeek-V2): experts form n_group groups,
  a group's score is its best expert's, only the topk_group best groups are eligible;
- routing.normalize: divide the chosen weights by their sum (Mixtral, GraniteMoe). That is
  exactly softmax over the chosen logits, which is how GraniteMoe writes it (top-k first,
  softmax after): the softmax is monotonic, so both pick the same experts and weights
  (gpt-oss's router is that too: top-k of the biased logits, softmax over them);
- noaux_tc (DeepSeek-V3, scoring sigmoid): experts are chosen by score + e_score_correction_bias
  (a buffer, not a parameter; a parameter with routing.correction_bias_parameter, ERNIE 4.5's
  softmax router), groups scored by the sum of their best two; the weights are the chosen
  experts' unbiased scores;
- sparsemixer (Phi-3.5-MoE's SparseMixer at inference, transformers' `sparsemixer` in eval
  mode): top_k rounds over the logits s; round r takes the best expert not chosen yet (logit
  m), masks every logit whose relative gap (m - s) / max(|s|, m) exceeds 2 * jitter_eps, and
  weighs the expert by its softmax over the logits left (earlier picks excluded). Every shape
  comes from top_k: no host synchronisation, so every expert path (reference, sorted, and the
  fixed-shape ones a compiled step runs) takes its output as it takes the others';
- routing.scaling_factor multiplies the weights (DeepSeek's routed_scaling_factor), after any
  normalisation.
The router's only matmul is the gate's (d_model x n_experts per token): the methods differ in
elementwise work, which the FLOP counts leave out.
"""

from __future__ import annotations

import torch
from torch import nn

from archscope.nn.linear import linear
from archscope.spec.schema import RouterSpec


class Router(nn.Module):
    """Picks top_k experts per token and their weights; the gate's weight is `gate.weight`."""

    def __init__(self, d_model: int, n_experts: int, top_k: int, routing: RouterSpec):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_experts, d_model))
        self.top_k, self.routing = top_k, routing
        self.bias = nn.Parameter(torch.empty(n_experts)) if routing.bias else None
        if routing.correction_bias_parameter:  # a parameter, as transformers' Ernie 4.5 holds it
            self.e_score_correction_bias = nn.Parameter(torch.zeros(n_experts),
                                                        requires_grad=False)
        elif routing.correction_bias:  # a buffer, as transformers' DeepseekV3TopkRouter holds it
            self.register_buffer("e_score_correction_bias", torch.zeros(n_experts))
        self.weight_fp32: tuple | None = None  # (weight, bias) in fp32: see keep_fp32_copy

    def keep_fp32_copy(self) -> None:
        """Cast the gate's weight (and bias) to fp32 once, for every later call, instead of once
        per call. For a model whose weights are final (loaded; the fast decode path calls it): a
        later change to `weight` is not seen. Nothing to keep when they are fp32 already."""
        if self.weight.dtype != torch.float32:
            self.weight_fp32 = (self.weight.detach().float(),
                                None if self.bias is None else self.bias.detach().float())

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [N, d] -> (weights [N, top_k] in fp32, expert indices [N, top_k])."""
        weight, bias = self.weight_fp32 or (
            self.weight.float(), None if self.bias is None else self.bias.float())
        logits = linear(x.float(), weight, bias)
        r = self.routing
        if r.method == "sparsemixer":  # its softmaxes are over masked logits, one per pick
            weights, index = _sparsemixer(logits, self.top_k, r.jitter_eps)
        else:
            scores = logits.sigmoid() if r.scoring == "sigmoid" else logits.softmax(dim=-1)
            if r.method == "noaux_tc":
                return self._noaux_tc(scores)
            if r.method == "group_limited_greedy":
                scores = _keep_best_groups(scores, r.n_group, r.topk_group)
            weights, index = scores.topk(self.top_k, dim=-1)
        if r.normalize:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        return _scaled(weights, r.scaling_factor), index

    def _noaux_tc(self, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """DeepSeek-V3: choose by scores + bias (a group's score: the sum of its best two),
        weigh by the unbiased scores of the chosen experts."""
        r, (n, e) = self.routing, scores.shape
        choice = (scores + self.e_score_correction_bias).view(n, r.n_group, e // r.n_group)
        best = choice.topk(2, dim=-1).values.sum(dim=-1).topk(r.topk_group, dim=-1).indices
        keep = torch.zeros(n, r.n_group, dtype=torch.bool, device=scores.device)
        keep.scatter_(1, best, True)
        choice = choice.masked_fill(~keep[..., None], float("-inf")).view(n, e)
        index = choice.topk(self.top_k, dim=-1).indices
        weights = scores.gather(1, index)
        if r.normalize:  # transformers' 1e-20 guards a sum of sigmoids that underflowed
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        return _scaled(weights, r.scaling_factor), index


def _scaled(weights: torch.Tensor, factor: float) -> torch.Tensor:
    """weights * routed_scaling_factor; most routers have 1, and a multiply by 1 is not run."""
    return weights if factor == 1 else weights * factor


def _keep_best_groups(scores: torch.Tensor, n_group: int, topk_group: int) -> torch.Tensor:
    """Zero the scores outside each token's topk_group best groups (a group's score: its max)."""
    n, e = scores.shape
    grouped = scores.view(n, n_group, e // n_group)
    best = grouped.amax(dim=-1).topk(topk_group, dim=-1).indices
    keep = torch.zeros(n, n_group, dtype=torch.bool, device=scores.device).scatter_(1, best, True)
    # 0 (not -inf) as transformers does: every softmax score is > 0, so a kept expert always wins.
    return grouped.masked_fill(~keep[..., None], 0.0).view(n, e)


def _sparsemixer(logits: torch.Tensor, top_k: int, eps: float
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Phi-3.5-MoE's SparseMixer at inference (see the module doc): top_k rounds, each the best
    expert left and its softmax over the logits within a relative gap of 2 * eps of it."""
    weights, index, left = [], [], logits
    for _ in range(top_k):
        best, pick = left.max(dim=-1, keepdim=True)
        # the gap is taken against every logit, the picks included; they are out of `left`
        far = (best - logits) / logits.abs().clamp(min=best) > 2 * eps
        weights.append(left.masked_fill(far, float("-inf")).softmax(dim=-1).gather(-1, pick))
        index.append(pick)
        left = left.scatter(-1, pick, float("-inf"))
    return torch.cat(weights, dim=-1), torch.cat(index, dim=-1)
