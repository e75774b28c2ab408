"""Where a decode step's time goes, from torch.profiler: per module and per operator.

Every module's forward is wrapped in a `record_function` range named after the module, with
layer indices folded ("layers.*.self_attn.q_proj"), so the profiler sums a kind of module over
all layers. Module times are inclusive (self_attn contains q_proj); operator times are self
times (an op's own kernels, not its children). On CUDA the device (kernel) time is reported,
on CPU the host time. The hooks add overhead, so this runs apart from the timed repeats.

torch.profiler's own chatter (kineto's "USDT:... profiler_start", "STAGE:" lines, its warnings)
is written straight to file descriptor 2 from C++; `quiet_profiler` captures that descriptor
while the profiler runs and passes on anything else that was written there.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import warnings
from contextlib import contextmanager
from typing import Callable

import torch
from torch import nn
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

PREFIX = "module::"
_INDEX = re.compile(r"\.\d+(?=\.|$)")


def folded_name(name: str) -> str:
    """'layers.11.mlp.up_proj' -> 'layers.*.mlp.up_proj'."""
    return _INDEX.sub(".*", name)


@contextmanager
def module_ranges(model: nn.Module):
    """Wrap each submodule's forward in a profiler range for as long as the context lasts."""
    handles, stack = [], []
    for name, module in model.named_modules():
        if not name:
            continue
        label = PREFIX + folded_name(name)

        def enter(_module, _args, label=label):
            rf = record_function(label)
            rf.__enter__()
            stack.append(rf)

        def leave(_module, _args, _out):
            stack.pop().__exit__(None, None, None)

        handles += [module.register_forward_pre_hook(enter), module.register_forward_hook(leave)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


# What torch.profiler / kineto print on their own (the patterns of several torch versions).
_NOISE = re.compile(r"^(USDT:|STAGE:)|ActivityProfiler|[Kk]ineto|CUPTI|libkineto"
                    r"|torch[./]profiler|profiler_(start|stop)")


@contextmanager
def quiet_profiler():
    """Capture file descriptor 2 (and Python warnings from torch.profiler) for the duration;
    afterwards write back to stderr every captured line that is not profiler chatter."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"torch\.(autograd\.)?profiler")
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):  # no usable descriptor 2: nothing to capture
            yield
            return
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            try:
                yield
            finally:
                try:
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass
                os.dup2(saved, 2)
                os.close(saved)
                captured.seek(0)
                kept = [line for line in captured.read().decode(errors="replace")
                        .splitlines(keepends=True) if line.strip() and not _NOISE.search(line)]
                if kept:
                    sys.stderr.write("".join(kept))
                    sys.stderr.flush()


def breakdown(model: nn.Module, run: Callable[[], object], steps: int, device: torch.device,
              top: int = 12) -> dict:
    """Profile `run()` (which performs `steps` decode steps); rows per module and per op.

    Returns {"time": "cuda"|"cpu", "step_ms": ..., "modules": [...], "ops": [...]}; each row
    has name, calls per step, ms per step and percent of the step.
    """
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with quiet_profiler():
        with module_ranges(model), profile(activities=activities) as prof:
            run()
            if cuda:
                torch.cuda.synchronize(device)
        events = prof.key_averages()

    def total(e):
        return (e.device_time_total if cuda else e.cpu_time_total) / 1e3  # ms

    def own(e):
        return (e.self_device_time_total if cuda else e.self_cpu_time_total) / 1e3

    # Host-side operators only: on CUDA their self device time is the kernels they launched,
    # and the kernel events themselves would count that time twice.
    ops = [e for e in events if not e.key.startswith(PREFIX) and e.device_type == DeviceType.CPU]
    step_ms = sum(own(e) for e in ops) / steps  # time inside operators (not Python) per step

    def row(name, e, ms):
        per_step = ms / steps
        return {"name": name, "calls_per_step": round(e.count / steps, 2),
                "ms_per_step": round(per_step, 4),
                "percent": round(100 * per_step / step_ms, 1) if step_ms else None}

    modules = sorted((row(e.key[len(PREFIX):], e, total(e))
                      for e in events if e.key.startswith(PREFIX)),
                     key=lambda r: -r["ms_per_step"])
    ops_rows = sorted((row(e.key, e, own(e)) for e in ops), key=lambda r: -r["ms_per_step"])
    return {"time": "cuda" if cuda else "cpu", "step_ms": round(step_ms, 4),
            "modules": modules[:top], "ops": [r for r in ops_rows if r["ms_per_step"] > 0][:top]}
