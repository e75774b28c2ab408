"""Two gloo ranks on CPU (one launch for all four models, to fit the 2-core CI machine): the
sharded model's logits equal the whole model's, each rank holds the parameters the analytic
plan says, and one decode step's measured collectives are the plan's, op by op and in bytes."""

from __future__ import annotations

import pytest
import torch

from archscope.distributed.launch import RankFailed, launch
from archscope.distributed.parity import check_ranks
from archscope.distributed.worker import Job, run_rank

from sharded_tiny import DENSE, LATENT, MLA, MOE, spec

CASES = [(DENSE, 2, 1), (MOE, 2, 2), (MLA, 2, 2), (LATENT, 2, 2)]


@pytest.fixture(scope="module")
def records():
    ranks = launch(check_ranks, 2, [(spec(raw), tp, ep) for raw, tp, ep in CASES])
    return {(r["model"], r["rank"]): r for rank in ranks for r in rank}


@pytest.mark.parametrize("raw", [c[0] for c in CASES], ids=lambda r: r["name"])
@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.slow
def test_two_ranks_agree_with_the_whole_model_and_the_plan(records, raw, rank):
    r = records[(raw["name"], rank)]
    assert r["max_abs_logit_diff"] < 1e-5
    assert r["params"] == r["params_planned"]
    assert r["collectives"] == r["collectives_planned"]
    assert r["collective_bytes_per_step"] == r["collective_bytes_per_step_planned"] > 0


def test_the_ranks_split_the_model():
    """Half of every split tensor per rank: less than the whole, more than half (the norms,
    the router and MLA's latent projections are replicated)."""
    from archscope.estimate.parallel import split

    for raw, tp, ep in CASES:
        whole, mine = split(spec(raw)).params_per_gpu, split(spec(raw), tp, ep).params_per_gpu
        assert whole / 2 < mine < whole


def _children() -> list:
    psutil = pytest.importorskip("psutil")
    return [p for p in psutil.Process().children(recursive=True) if p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE  # spawn's resource tracker serves this
            and "resource_tracker" not in " ".join(p.cmdline())]  # process, not a rank


@pytest.mark.slow
def test_a_dying_rank_is_named_and_nothing_is_left_running():
    job = Job(spec(DENSE), 2, 1, "cpu", torch.float32, prompt_len=4, new_tokens=2,
              die_on_rank=1)
    with pytest.raises(RankFailed, match=r"rank 1 failed \(exit code 3\)"):
        launch(run_rank, 2, job)
    assert _children() == []
