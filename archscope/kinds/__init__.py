"""One home per component kind: everything archscope knows about a kind, found from one entry.

A layer's attention (or state mixer) and FFN are picked by the spec's `kind`. For each kind, its module here
registers one entry holding: the torch module that builds it (named by import path, so that the
analytic side never imports torch), its parameter parts and multiply-adds (params and FLOPs read
them), its cache layout (attention), the widths its activations need (memory), its wording (one
line for `show`, a table cell, a diagram title, a short overview line) and its diagram node.

Adding a kind means adding its torch module, its entry module here (listed in `_ENTRY_MODULES`)
and its spec fields; nothing under `report/` or `estimate/` changes.
"""

from __future__ import annotations

import importlib

from archscope.kinds.base import AttentionKind, FFNKind, StateMixerKind
from archscope.kinds.registry import (ATTENTION, FFN, MIXER, attention_kind, ffn_kind, mixer_kind,
                                      register)

_ENTRY_MODULES = ("gqa", "mla", "mlp", "swiglu", "geglu", "relu2", "moe", "mamba2",
                  "gated_deltanet", "rglru", "lightning", "kimi_delta", "short_conv",
                  "mamba1")

for _name in _ENTRY_MODULES:
    importlib.import_module(f"archscope.kinds.{_name}")

__all__ = ["ATTENTION", "FFN", "MIXER", "AttentionKind", "FFNKind", "StateMixerKind",
           "attention_kind", "ffn_kind", "mixer_kind", "register"]
