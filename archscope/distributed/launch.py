"""Start one process per rank with torch's own launcher (the elastic launch API behind
torchrun): a rendezvous on this machine, `nproc` workers spawned, each returning its record.

A rank that dies (an exception, a crash, a kill) makes the elastic agent stop the whole worker
group: no process is left behind, and `RankFailed` names the rank, its exit code and, for an
exception, its message (the entrypoint is decorated with torch.distributed.elastic's
`record`)."""

from __future__ import annotations

import logging
import tempfile
import uuid

from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.launcher.api import LaunchConfig, elastic_launch



class RankFailed(RuntimeError):
    """A rank of a launched run ended without its record; the run was stopped."""


def launch(entrypoint, nproc: int, *args, log_dir: str | None = None) -> list:
    """`entrypoint(*args)` on `nproc` local ranks; their return values in rank order.
    `entrypoint` is a module-level function (the spawned ranks import it) decorated with
    torch.distributed.elastic's `record`, so an exception reaches the error message."""
    # the agent logs a dead rank's traceback at ERROR; RankFailed says it in one paragraph
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    with tempfile.TemporaryDirectory(prefix="archscope-ranks-") as logs:
        config = LaunchConfig(
            min_nodes=1, max_nodes=1, nproc_per_node=nproc, run_id=f"archscope-{uuid.uuid4()}",
            rdzv_backend="c10d", rdzv_endpoint="localhost:0",  # a free port, as torchrun
            max_restarts=0, monitor_interval=0.1, start_method="spawn",
            # the ranks' stdout/stderr go to files (stdout stays the command's JSON); errors
            # are read back from them and from each rank's error file
            logs_specs=DefaultLogsSpecs(log_dir=log_dir or logs, redirects=Std.ALL))
        try:
            results = elastic_launch(config, entrypoint)(*args)
        except ChildFailedError as failed:
            raise RankFailed(_describe(failed)) from None
    return [results[rank] for rank in sorted(results)]


def _describe(failed: ChildFailedError) -> str:
    lines = []
    for rank, failure in sorted(failed.failures.items()):
        how = (f"killed by {failure.signal_name()}" if failure.exitcode < 0
               else f"exit code {failure.exitcode}")
        message = failure.message if isinstance(failure.message, str) else \
            failure.message.get("message", "") if isinstance(failure.message, dict) else ""
        if not message.strip() or message.startswith("To enable traceback"):
            message = "it died without raising (no error recorded)"
        message = message.strip().splitlines()[-1]
        lines.append(f"rank {rank} failed ({how}): {message}")
    return ("the sharded run stopped: " + "; ".join(lines)
            + ". The other ranks were stopped; no process is left running.")
