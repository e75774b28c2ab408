"""The state mixers a layer may have in place of attention, and the word for each layer's
choice (DESIGN.md section 2): attention, a state mixer (`mamba2`, `gated_deltanet`, `rglru`,
`lightning`, `kimi_delta`, `short_conv`, `mamba1`), both side by side (`hybrid`), or none.

A state mixer keeps a constant-size state per sequence (a conv window and an SSM or recurrent
matrix) instead of a per-token cache. A model names one state mixer, `mixer`, which is every
layer's mixer unless its `layers` overrides say `mixer: attention` or `mixer: none`.
`mixer: hybrid` (transformers' layer type of Falcon-H1) runs attention and the state mixer on the
same normed input and sums their outputs: the layer holds a KV cache and a state.
"""

from __future__ import annotations

from archscope.spec.gated_deltanet import GatedDeltaNetSpec
from archscope.spec.kimi_delta import KimiDeltaSpec
from archscope.spec.lightning import LightningSpec
from archscope.spec.mamba1 import MambaSpec
from archscope.spec.mamba2 import Mamba2Spec
from archscope.spec.rglru import RglruSpec
from archscope.spec.short_conv import ShortConvSpec

StateMixerSpec = (Mamba2Spec | GatedDeltaNetSpec | RglruSpec | LightningSpec | KimiDeltaSpec
                  | ShortConvSpec | MambaSpec)
STATE_KINDS = ("mamba2", "gated_deltanet", "rglru", "lightning", "kimi_delta", "short_conv",
               "mamba1")
# a layer override's `mixer:` values besides the model's state kind
ATTENTION, NONE = "attention", "none"
HYBRID = "hybrid"  # attention and the model's state mixer side by side (Falcon-H1)
