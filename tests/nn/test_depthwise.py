"""The state mixers' causal depthwise conv: the one-token path equals the grouped conv."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from archscope.nn.depthwise import causal_depthwise_conv


@pytest.mark.parametrize("bias", [True, False])
def test_a_decode_step_equals_the_grouped_conv_and_keeps_the_last_inputs(bias):
    torch.manual_seed(0)
    channels, kernel = 6, 4
    conv = nn.Conv1d(channels, channels, kernel, groups=channels, bias=bias)
    prompt, step = torch.randn(2, channels, 5), torch.randn(2, channels, 1)
    history = torch.zeros(2, channels, kernel)
    causal_depthwise_conv(prompt, conv, history)
    assert torch.equal(history, prompt[..., -kernel:])
    window = torch.cat((history[..., 1:], step), dim=-1)  # what the step reads
    out = causal_depthwise_conv(step, conv, history)
    expected = F.conv1d(window, conv.weight, conv.bias, groups=channels)
    assert out.shape == (2, channels, 1)
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)
    assert torch.equal(history[..., -1:], step)


def test_a_fresh_prompt_is_padded_with_zeros():
    torch.manual_seed(1)
    conv = nn.Conv1d(3, 3, 4, groups=3)
    x = torch.randn(1, 3, 7)
    expected = F.conv1d(F.pad(x, (3, 0)), conv.weight, conv.bias, groups=3)
    torch.testing.assert_close(causal_depthwise_conv(x, conv, None), expected)
