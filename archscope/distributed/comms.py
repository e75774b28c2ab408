"""The collectives a sharded forward issues, recorded with DTensor's own CommDebugMode and
priced with the analytic plan's functions (archscope.estimate.parallel.sent_bytes), so the
measured and the planned figures use one arithmetic.

CommDebugMode counts collectives by op; `CollectiveLog` also keeps each one's payload (an
all-reduce's tensor, an all-gather's gathered output), as the plan's `Collective` states it.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.debug import CommDebugMode

from archscope.estimate.parallel import Collective

_F = torch.ops._c10d_functional
_OPS = {_F.all_reduce: "all_reduce", _F.all_gather_into_tensor: "all_gather"}


def _bytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


class _WholeModel:
    """Stands in for CommDebugMode's per-module tracker, which loses its place when a module
    runs twice in one forward (an attention's q and k go through the same norm slot): every
    collective is attributed to "Global", which is all the plan compares."""

    name, is_bw, activation_checkpointing = "Global", False, False
    module_parents_dict = {"Global": set()}

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return None


class CollectiveLog(CommDebugMode):
    """CommDebugMode that also records (op, payload bytes) of every collective it counts."""

    def __init__(self):
        super().__init__()
        self.advanced_module_tracker = _WholeModel()
        self.seen: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if out is NotImplemented or any(t is DTensor for t in types):
            return out  # DTensor desugars into plain collectives, recorded when they come
        packet = getattr(func, "_overloadpacket", None)
        if packet in _OPS:
            size = _bytes(args[0]) * (args[1] if _OPS[packet] == "all_gather" else 1)
            self.seen.append((_OPS[packet], size))
        elif packet in self.comm_registry:  # a collective the plan never issues: shown as is
            self.seen.append((str(packet).rsplit(".", 1)[-1], _bytes(args[0])))
        return out

    def collectives(self) -> tuple[Collective, ...]:
        """What was recorded, as the plan lists a step's collectives (grouped by op, payload)."""
        return tuple(Collective(op, size, n) for (op, size), n in Counter(self.seen).items())


def as_rows(collectives) -> list[dict]:
    """JSON rows (op, payload_bytes, count), sorted so a plan and a run compare as lists."""
    return sorted(({"op": c.op, "payload_bytes": c.payload_bytes, "count": c.count}
                   for c in collectives), key=lambda r: (r["op"], r["payload_bytes"]))
