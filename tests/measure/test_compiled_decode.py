"""The compiled decode step (torch.compile of the fixed-shape step, what `profile --compile`
runs and CUDA captures) gives the eager step's greedy tokens on the CPU: dense with a sliding
window, MoE (routing on its fixed-shape paths) and MLA + MoE."""

from __future__ import annotations

import pytest
import torch

from archscope.measure.fast import compiled_step
from archscope.measure.generate import generate
from archscope.nn import build_model
from parity import TINY_MLA_MOE, TINY_MOE, tiny_spec

CASES = {
    "dense-window": dict(attention=dict(window=5)),
    "moe": TINY_MOE,
    "mla-moe": TINY_MLA_MOE,
}


@pytest.mark.parametrize("changes", CASES.values(), ids=CASES.keys())
@pytest.mark.slow
def test_the_compiled_step_gives_the_eager_tokens(changes):
    spec = tiny_spec(**changes)
    model = build_model(spec, "cpu", torch.float32, seed=0)
    ids = torch.randint(0, spec.vocab_size, (2, 7), generator=torch.Generator().manual_seed(1))
    steps = 10
    eager = generate(model, ids, steps)
    cache = model.new_cache(2, ids.shape[1] + steps)
    step = compiled_step(model)
    assert torch.equal(generate(model, ids, steps, step=step, cache=cache), eager)
    cache.reset()  # the compiled step serves the next prompt through the same cache
    assert torch.equal(generate(model, ids, steps, step=step, cache=cache), eager)


@pytest.mark.slow
def test_steps_compiled_for_many_caches_in_one_process_each_compile_their_own():
    """Dynamo refuses more than recompile_limit compilations of one code object (fullgraph: an
    error). With the limit at 1, steps for three batch sizes all run: each compiles its own
    copy of the code, and once (the RoPE tables are grown before its first call, not in it)."""
    spec = tiny_spec()
    model = build_model(spec, "cpu", torch.float32, seed=0)
    with torch._dynamo.config.patch(recompile_limit=1):
        for batch in (1, 2, 3):
            ids = torch.randint(0, spec.vocab_size, (batch, 4),
                                generator=torch.Generator().manual_seed(batch))
            cache = model.new_cache(batch, 7)
            assert torch.equal(generate(model, ids, 3, step=compiled_step(model), cache=cache),
                               generate(model, ids, 3))
