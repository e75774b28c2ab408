"""A state mixer's one-token decode step on the CPU: its time against its matmuls' time.

For every state mixer kind in the kinds registry, the first preset (by name) whose `mixer` is
of that kind gives the shape: one mixer module at that full width, fp32 weights, batch 1. A
prompt of --prompt tokens fills its state; then --steps one-token steps run under the profiler
that `archscope profile --breakdown` uses (archscope.measure.breakdown), and the step's operator
time is set beside the time of its matrix products (mm, addmm, bmm, baddbmm, the einsums they
come from). The bar (issue 30): a step may cost at most twice its matmuls. Also printed: the
fastest wall time of a step outside the profiler.

    python benchmarks/state_mixer_decode.py [--threads 2] [--steps 50] [--json FILE]
"""

from __future__ import annotations

import argparse

import torch

from archscope.kinds import MIXER
from archscope.measure.breakdown import breakdown
from archscope.spec import load_spec
from archscope.spec.loader import preset_names

from common import cpu_name, fastest, write_json  # benchmarks/common.py, beside this script

# the operators whose kernels are matrix products (a Linear is addmm or mm; an einsum or a
# batched per-channel product is bmm); their self time is the matmuls' time
MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::mv",
              "aten::addmv", "aten::dot", "aten::_mkldnn_linear", "aten::mkldnn_linear"}
BAR = 2.0


def first_preset_per_kind() -> dict[str, str]:
    """{mixer kind: the first preset by name whose model's state mixer is of that kind}."""
    found: dict[str, str] = {}
    for name in sorted(preset_names()):
        spec = load_spec(name)
        if spec.mixer is not None:
            found.setdefault(spec.mixer.kind, name)
    return found


def measure(preset: str, prompt: int, steps: int, calls: int) -> dict:
    spec = load_spec(preset)
    kind = MIXER[spec.mixer.kind]
    torch.manual_seed(0)
    with torch.device("cpu"):
        layer = next(p.index for p in spec.plan if p.state is not None)
        # a kind whose module depends on its depth (lightning's decay) takes the layer index
        module = kind.factory()(spec, spec.mixer, *((layer,) if kind.per_layer else ()))
        module = module.float().eval()
        with torch.no_grad():  # small random weights: the step's cost does not depend on them
            for p in module.parameters():
                p.normal_(0, 0.02)
    state = module.new_cache(1, prompt + steps + calls + 8, torch.device("cpu"), torch.float32)
    token = torch.randn(1, 1, spec.d_model)
    with torch.no_grad():
        module(torch.randn(1, prompt, spec.d_model), cache=state)

        def step():
            return module(token, cache=state)

        def run():
            for _ in range(steps):
                step()

        wall = fastest(step, calls, warmup=3)
        rows = breakdown(module, run, steps, torch.device("cpu"), top=10_000)
    matmul = sum(r["ms_per_step"] for r in rows["ops"] if r["name"] in MATMUL_OPS)
    step_ms = rows["step_ms"]
    return {"kind": kind.name, "preset": preset, "d_model": spec.d_model,
            "step_ms": step_ms, "matmul_ms": round(matmul, 4),
            "ratio": round(step_ms / matmul, 2) if matmul else None,
            "wall_ms": round(wall * 1e3, 4),
            "top_ops": [{k: r[k] for k in ("name", "ms_per_step")} for r in rows["ops"][:6]]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prompt", type=int, default=16)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    print(f"{cpu_name()}, {a.threads} threads, torch {torch.__version__}; fp32, batch 1, "
          f"{a.steps} profiled steps after a {a.prompt}-token prompt")
    presets = first_preset_per_kind()
    missing = sorted(set(MIXER) - set(presets))
    results = [measure(presets[k], a.prompt, a.steps, a.calls) for k in sorted(presets)]
    print(f"{'kind':16} {'preset':24} {'step ms':>8} {'matmul ms':>9} {'ratio':>6} "
          f"{'wall ms':>8}  within {BAR:g}x")
    for r in results:
        ok = r["ratio"] is not None and r["ratio"] <= BAR
        print(f"{r['kind']:16} {r['preset']:24} {r['step_ms']:8.3f} {r['matmul_ms']:9.3f} "
              f"{r['ratio'] or float('nan'):6.2f} {r['wall_ms']:8.3f}  {'yes' if ok else 'NO'}")
    for kind in missing:
        print(f"{kind:16} (no preset has this mixer kind: not measured)")
    if a.json:
        write_json(a.json, {"what": "state mixer one-token decode step vs its matmuls, CPU",
                            "cpu": cpu_name(), "threads": a.threads, "torch": torch.__version__,
                            "bar": BAR, "results": results, "not_measured": missing})


if __name__ == "__main__":
    main()
