"""The spec's MoE router: how a MoE layer picks its experts and weighs them (the FFN that holds
it is in `components`).

A frozen dataclass whose field names are the YAML keys (`ffn.router`); it checks its own
consistency in `validate`. The torch side is archscope/nn/router.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.spec.checks import absent_unless, one_spelling, positive, require

# greedy: the top_k scores; group_limited_greedy (DeepSeek-V2) and noaux_tc (DeepSeek-V3):
# within the best groups; sparsemixer (Phi-3.5-MoE): see RouterSpec.jitter_eps
RouterMethod = Literal["greedy", "group_limited_greedy", "noaux_tc", "sparsemixer"]
RouterScoring = Literal["softmax", "sigmoid"]
# where a routed expert's weight applies: to its output (Mixtral, DeepSeek) or to its input
# (Llama 4: the expert runs on weight * x and its output is added as it is)
RouterWeights = Literal["output", "input"]


@dataclass(frozen=True)
class RouterSpec:
    """How a MoE layer picks experts: softmax or sigmoid scores, then top-k (optionally
    group-limited; DeepSeek-V3's noaux_tc adds a per-expert bias used for selection only;
    Phi-3.5-MoE's sparsemixer picks one expert per round from masked logits)."""

    method: RouterMethod = "greedy"
    n_group: int | None = None  # group-limited methods: experts split into n_group groups
    topk_group: int | None = None  # ... of which the best topk_group groups are eligible
    normalize: bool = True  # renormalise the chosen top-k weights to sum to 1
    scaling_factor: float = 1.0  # DeepSeek's routed_scaling_factor
    scoring: RouterScoring = "softmax"  # DeepSeek's scoring_func
    correction_bias: bool = False  # DeepSeek-V3's e_score_correction_bias (choice only; a buffer)
    # true: that correction bias is a parameter, counted with the model's (ERNIE 4.5's
    # moe_statics.e_score_correction_bias, n_experts per MoE layer). null or false: a buffer
    correction_bias_parameter: bool | None = None
    bias: bool = False  # the router Linear's own bias, added to the logits (gpt-oss)
    weights: RouterWeights = "output"  # input: scale each expert's input instead (Llama 4)
    # sparsemixer (Phi-3.5-MoE, HF router_jitter_noise; transformers' PhimoeTopKRouter in eval
    # mode): top_k rounds over the router logits s. Round r takes the best expert not chosen
    # yet (its logit m) and weighs it by its softmax over the logits still in play whose
    # relative gap (m - s) / max(|s|, m) is at most 2 * jitter_eps (earlier picks out). Those
    # weights are not renormalised (normalize false). Required by sparsemixer, else absent.
    jitter_eps: float | None = None

    def __post_init__(self) -> None:
        one_spelling(self, "correction_bias_parameter")

    def validate(self) -> None:
        positive(self, "n_group", "topk_group", "scaling_factor")
        require(self.correction_bias or not self.correction_bias_parameter,
                "correction_bias_parameter", "needs correction_bias: true")
        require(self.method != "noaux_tc" or self.correction_bias, "correction_bias",
                "noaux_tc chooses experts by the scores plus a correction bias: set "
                "correction_bias: true")
        if self.method in ("group_limited_greedy", "noaux_tc"):
            require(self.n_group is not None and self.topk_group is not None, "method",
                    f"{self.method} needs n_group and topk_group")
            require(self.topk_group <= self.n_group, "topk_group",
                    f"topk_group ({self.topk_group}) cannot exceed n_group ({self.n_group})")
        if self.method == "sparsemixer":
            require(self.jitter_eps is not None, "jitter_eps",
                    "sparsemixer masks the logits by a relative gap of 2 * jitter_eps: set it "
                    "(Phi-3.5-MoE's router_jitter_noise, 0.01)")
            require(self.jitter_eps >= 0, "jitter_eps", f"must be 0 or more, got "
                                                        f"{self.jitter_eps}")
            require(self.scoring == "softmax", "scoring", "sparsemixer weighs each pick by a "
                    "softmax over the masked logits: scoring is softmax")
            require(not self.correction_bias, "correction_bias",
                    "belongs to noaux_tc, not sparsemixer")
        else:
            absent_unless(self, "method", "sparsemixer", "jitter_eps")
