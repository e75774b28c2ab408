"""Every report figure: its path under the report folder and the function that draws it."""

from __future__ import annotations

from typing import Callable

import matplotlib

from archscope.report.figures import (RC, flops_figure, kv_cache_figure, params_figure,
                                      png_bytes, weights_figure)
from archscope.report.figures_hybrid import cache_state_figure
from archscope.report.figures_model import model_figure, path as model_path

PATHS = {  # alt text -> path under the report folder
    "KV cache vs context length": "figures/kv_cache_vs_context.png",
    "Parameter breakdown": "figures/params_breakdown.png",
    "Decode FLOPs per token vs context length": "figures/flops_vs_context.png",
    "Weights memory by dtype": "figures/weights_by_dtype.png",
    "Hybrids: cache and state vs context": "figures/hybrid_cache_vs_context.png",
}


def all_figures(records: list[dict], progress: Callable[[str], None] | None = None
                ) -> dict[str, bytes]:
    """Path under the report folder -> PNG bytes, for every figure (one per model too);
    `progress(path)` after each figure (each takes about a second)."""
    tick = progress or (lambda _path: None)
    makers = [kv_cache_figure, params_figure, flops_figure, weights_figure, cache_state_figure]
    drawn = [(path, lambda make=make: make(records)) for path, make in zip(PATHS.values(), makers)]
    drawn += [(model_path(r["name"]), lambda r=r: model_figure(r, records)) for r in records]
    files = {}
    with matplotlib.style.context("default"), matplotlib.rc_context(RC):
        for path, draw in drawn:
            files[path] = png_bytes(draw())
            tick(path)
    return files
