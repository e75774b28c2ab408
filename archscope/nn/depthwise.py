"""The causal depthwise conv of the state mixers (Mamba-2's and Gated DeltaNet's conv1d, the
RG-LRU's conv_1d).

Each channel convolves its own last `kernel` inputs. The module keeps only the weight (and
bias) under transformers' names; padding is done here, from zeros for a fresh prompt or from
the per-sequence state's last inputs, so the conv computes exactly the outputs that are used.
A one-token decode step is one batched matmul per channel ([B, kernel] window times the
channel's [kernel, 1] taps): F.conv1d on a window of `kernel` columns costs a CPU a few to tens
of times more (its grouped-conv setup, not its arithmetic; measured on this project's 2-core
machine, 3,328 channels: median 184-203 us and mean 1.8-7.4 ms against 101-115 us and
0.17-0.21 ms). The FLOPs are the same, and torch's FLOP counter counts both.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def causal_depthwise_conv(cols: torch.Tensor, conv: nn.Conv1d,
                          history: torch.Tensor | None) -> torch.Tensor:
    """conv(cols) for cols [B, C, T], without the activation, in the weight's dtype.

    `history` is the state's last inputs, [B, C, kernel] or [B, C, kernel - 1] (updated in
    place with the newest as many), or None for a fresh prompt (zeros before the first token).
    Output t reads input t and the kernel - 1 before it, so a state of `kernel` columns
    (Mamba-2's, Gated DeltaNet's) keeps one that is not read; one of kernel - 1 (the RG-LRU's)
    keeps only what is read."""
    weight, bias = conv.weight, conv.bias
    kernel = weight.shape[-1]
    if history is None:
        window = F.pad(cols, (kernel - 1, 0))
    else:
        kept = history.shape[-1]
        full = torch.cat((history.to(cols.dtype), cols), dim=-1)  # new tensor: safe to write
        if kept:
            history.copy_(full[..., full.shape[-1] - kept:])
        window = full[..., kept - (kernel - 1):]
    window = window.to(weight.dtype)
    if cols.shape[-1] == 1:  # one decode step: per channel, [B, kernel] @ [kernel, 1]
        per_channel = window.transpose(0, 1), weight.transpose(1, 2)  # [C, B, k], [C, k, 1]
        out = (torch.bmm(*per_channel) if bias is None
               else torch.baddbmm(bias[:, None, None], *per_channel))
        return out.transpose(0, 1)  # [B, C, 1]
    return F.conv1d(window, weight, bias, groups=weight.shape[0])
