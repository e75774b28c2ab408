"""What a sharded run accepts: the analytic plan's divisibility, then what DTensor sharding here
does not (yet) express. Both raise InputError before any process starts (exit 2)."""

from __future__ import annotations

from archscope.errors import InputError
from archscope.estimate.parallel import check_divisible
from archscope.spec import ModelSpec
from archscope.spec.limits import PLAN_LAYERS_MAX


def check_supported(spec: ModelSpec, tp: int, ep: int) -> None:
    """InputError naming every dimension that does not divide (the plan's check), then every
    feature of `spec` this sharded run cannot split as the plan states."""
    check_divisible(spec, tp, ep)
    refused: dict[str, list[int]] = {}

    def refuse(why: str, layer: int) -> None:
        refused.setdefault(why, []).append(layer)

    for p in spec.plan:
        a, f = p.attention, p.ffn
        if p.state is not None:
            refuse(f"{p.state.kind} state mixers (not sharded here; the plan splits them by "
                   "heads, the run does not yet)", p.index)
        if a is not None and a.kind != "mla":
            if a.n_kv_heads < tp:
                refuse(f"{a.n_kv_heads} KV heads over {tp} ranks (the plan replicates a KV "
                       "head; the run only splits them)", p.index)
            if a.fused_qkv:
                refuse("a fused qkv_proj (q, k, v rows would not split per head)", p.index)
            if a.qk_norm == "full":
                refuse("a full-width QK-norm (it normalises across all heads)", p.index)
            if a.qk_norm == "per_head":
                refuse("a QK-norm with a weight row per head (not sharded here)", p.index)
            if a.sub_norm:
                refuse("an attention sub-norm (it normalises across all heads)", p.index)
            if a.sinks:
                refuse("attention sinks", p.index)
        if f is not None and f.fused_gate_up:
            refuse("a fused gate_up_proj (gate and up rows would not split together)", p.index)
        if f is not None and f.sub_norm:
            refuse("an FFN sub-norm (it normalises across the d_ff the split divides)", p.index)
        if f is not None and f.kind == "moe":
            if ep != tp:
                refuse(f"routed experts with --ep {ep} != --tp {tp} (experts are split whole, "
                       "one group per rank)", p.index)
            if f.routing.weights == "input" and f.bias:
                refuse("router weights on the experts' input with expert biases", p.index)
    if refused:
        lines = "; ".join(f"{why} in layer(s) {_ranges(layers)}" for why, layers in
                          refused.items())
        raise InputError(f"{spec.name}: the sharded run (--tp {tp}"
                         + (f" --ep {ep}" if ep > 1 else "") + f") does not support {lines}. "
                         "archscope fit --tp/--ep still gives the plan's figures.")


def check_plan_size(spec: ModelSpec, tp: int) -> None:
    """`archscope plan` builds every rank's layers in turn (~30 ms each on meta): refuse, in
    seconds rather than hours, more than PLAN_LAYERS_MAX of them."""
    if tp * spec.n_layers > PLAN_LAYERS_MAX:
        raise InputError(f"{spec.name}: --tp {tp} x {spec.n_layers} layers = "
                         f"{tp * spec.n_layers:,} layer shards to build, beyond the limit "
                         f"{PLAN_LAYERS_MAX:,} (archscope/spec/limits.py); `archscope fit "
                         f"MODEL --tp {tp}` prices the split without building it")


def _ranges(layers: list[int]) -> str:
    out, start = [], layers[0]
    for prev, cur in zip(layers, layers[1:] + [None]):
        if cur != prev + 1 if cur is not None else True:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = cur
    return ", ".join(out)
