"""The Python API: what the analytic commands compute, for notebooks and scripts.

Each function is the code its command runs (`archscope compare`, `fit`, `diff` call these), so a
number here is the number the CLI prints:

    import archscope.api as arch

    spec = arch.load("llama-3.1-8b")                         # a preset, YAML spec or config.json
    rec = arch.record("qwen3-8b", seq_len=32768)             # ModelRecord: rec.params.total ...
    rows = arch.compare_rows(["llama-3.1-8b", "qwen3-8b"])   # compare --format json, as dicts
    df = arch.compare(["llama-3.1-8b", "qwen3-8b"])          # the same rows, a pandas DataFrame
    result = arch.fit("llama-3.1-8b", "h100-sxm", context=8192)   # FitResult: .fits, .row()
    d = arch.diff("llama-3.2-1b", "llama-3.2-3b")            # SpecDiff: .differences, .total

A model is a preset name, a YAML file, a config.json (or its folder), or any of those with
what-ifs, "MODEL:KEY=VALUE[,KEY=VALUE...]"; `overrides` (a list of "KEY=VALUE", as --set takes)
apply before the model's own. Bad input raises archscope.errors.InputError with the message the
CLI prints. Only `compare` needs pandas (the `full` extra); the rest runs on the light install
(a config.json needs transformers for the keys it leaves out).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from archscope.errors import InputError, shorten
from archscope.estimate.diff import SpecDiff, spec_diff
from archscope.estimate.fit import FitResult, Setup
from archscope.estimate.record import ModelRecord
from archscope.spec import ModelSpec


def split_model_overrides(arg: str) -> tuple[str, list[str]]:
    """'MODEL:KEY=VALUE[,KEY=VALUE...]' -> (MODEL, ['KEY=VALUE', ...]).

    The split is on the last ':' before the first '=' (so a path may hold ':' earlier); an
    argument with no '=' or no such ':' is a plain MODEL. Values cannot contain ','.
    """
    head = arg.split("=", 1)[0]
    if "=" not in arg or ":" not in head:
        return arg, []
    cut = head.rindex(":")
    model, rest = arg[:cut], arg[cut + 1:]
    if not model:
        raise InputError(f"{arg}: expected MODEL:KEY=VALUE[,KEY=VALUE...]")
    return model, rest.split(",")


def model_label(name: str, overrides) -> str:
    """How a row of `compare` names a model: 'llama-3.2-1b' or 'llama-3.2-1b:n_layers=2,...'."""
    overrides = list(overrides)
    return f"{name}:{','.join(overrides)}" if overrides else name


def distinct_labels(labels: Sequence[str], args: Sequence[str],
                    applied: Sequence[Sequence[str]]) -> list[str]:
    """The labels, where models that would share one (two config.json files naming one
    `_name_or_path`, a YAML spec named as a preset) are labelled by their MODEL argument as
    given instead (its path), with their what-ifs; the same argument twice stays one label."""
    sources: dict[str, set] = {}
    for label, arg in zip(labels, args):
        sources.setdefault(label, set()).add(arg)
    return [model_label(split_model_overrides(arg)[0], what_ifs)
            if len(sources[label]) > 1 else label
            for label, arg, what_ifs in zip(labels, args, applied)]


def labelled_row(row: dict, overrides) -> dict:
    """A record's row (compare's element, show's `record`) named by its label; with what-ifs,
    also `overrides`, the key=value strings applied in order (absent for a model as shipped,
    so such a row is exactly `ModelRecord.row`)."""
    overrides = list(overrides)
    if not overrides:
        return row
    return {"model": model_label(row["model"], overrides), "overrides": overrides,
            **{k: v for k, v in row.items() if k != "model"}}


def load_labelled(model: str, overrides: Sequence[str] = ()) -> tuple[ModelSpec, list[str]]:
    """(the spec, the what-ifs applied: `overrides` then the model's own); an error names the
    model it came from."""
    from archscope.spec import load_spec

    name, own = split_model_overrides(model)
    applied = [*overrides, *own]
    try:
        return load_spec(name, applied), applied
    except InputError as err:
        if str(err).startswith(f"{name}:"):  # it names the model already
            raise
        raise InputError(f"{shorten(model, 120)}: {err}") from None


def load(model: str, overrides: Sequence[str] = ()) -> ModelSpec:
    """The checked spec of a preset, YAML spec or config.json, with any what-ifs applied."""
    return load_labelled(model, overrides)[0]


def record(model: str | ModelSpec, seq_len: int = 4096, *, batch: int = 1,
           dtype: str | None = None,
           kv_dtype: str | None = None, attention_flops: str = "causal",
           mla_flops: str = "absorbed", overrides: Sequence[str] = ()) -> ModelRecord:
    """Everything the estimators compute for one model at `seq_len` (and its conventions):
    `.params`, `.row()` (compare's JSON element), `.at(seq_len).cache`, `.decode`, ...
    `dtype`: the weight format (estimate/formats.py), None: the checkpoint's."""
    from archscope.estimate import model_record
    from archscope.spec.weight_formats import checkpoint_format

    spec = model if isinstance(model, ModelSpec) else load(model, overrides)
    return model_record(spec, (seq_len,), batch=batch,
                        weight_format=dtype or checkpoint_format(spec), cache_dtype=kv_dtype,
                        attention_flops=attention_flops, mla_flops=mla_flops)


def compare_rows(models: Iterable[str] | None = None, seq_len: int = 4096, *, batch: int = 1,
                 dtype: str | None = None, kv_dtype: str | None = None,
                 attention_flops: str = "causal", mla_flops: str = "absorbed",
                 overrides: Sequence[str] = (), gpu: str | None = None) -> list[dict]:
    """One row per model (every preset when `models` is None): `compare --format json`. With
    `gpu`, each row's `fit` on one GPU of that catalog part at the same conventions. `dtype`:
    the weight format of every row; None: each model's checkpoint format."""
    from archscope.spec import preset_names

    specs, rows = [], []
    args = preset_names() if models is None else list(models)
    for arg in args:
        spec, applied = load_labelled(arg, overrides)
        specs.append(spec)
        rows.append(labelled_row(record(spec, seq_len, batch=batch, dtype=dtype,
                                        kv_dtype=kv_dtype, attention_flops=attention_flops,
                                        mla_flops=mla_flops).row(), applied))
    labels = distinct_labels([r["model"] for r in rows], args,
                             [r.get("overrides", ()) for r in rows])
    for row, label in zip(rows, labels):
        row["model"] = label
    if gpu:  # every fit computed before anything is returned
        from archscope.hardware import get_hardware

        hw = get_hardware(gpu)
        for spec, row in zip(specs, rows):
            setup = Setup(weight_format=row["dtype"], kv_dtype=kv_dtype, context=seq_len,
                          batch=batch)
            row["fit"] = _fit(spec, hw, setup).row()
    return rows


def compare(models: Iterable[str] | None = None, seq_len: int = 4096, **options):
    """`compare_rows` as a pandas DataFrame indexed by model (pandas: the `full` extra)."""
    import pandas as pd

    return pd.DataFrame(compare_rows(models, seq_len, **options)).set_index("model")


def fit(model: str | ModelSpec, gpu: str, *, n_gpus: int | None = None, tp: int | None = None,
        ep: int = 1, weight_format: str | None = None, kv_dtype: str | None = None,
        context: int | None = None, batch: int = 1, overrides: Sequence[str] = (),
        **fractions) -> FitResult:
    """`archscope fit MODEL --gpu GPU ...`: whether it fits, the context and sequences it
    holds, and roofline speeds (none when it cannot load: `.advice` says what would).
    `weight_format` None: the checkpoint's. `fractions`: gpu_memory_utilization,
    bandwidth_fraction, compute_fraction, as Setup names them."""
    from archscope.hardware import get_hardware

    spec = model if isinstance(model, ModelSpec) else load(model, overrides)
    setup = Setup(n_gpus=n_gpus or tp or 1, tp=tp, ep=ep, weight_format=weight_format,
                  kv_dtype=kv_dtype, context=context, batch=batch, **fractions)
    return _fit(spec, get_hardware(gpu), setup)


def _fit(spec: ModelSpec, hw, setup: Setup) -> FitResult:
    from archscope.estimate.fit import fit as fit_spec

    return fit_spec(spec, hw, setup)


def diff(a: str, b: str, seq_len: int = 4096, *, overrides: Sequence[str] = ()) -> SpecDiff:
    """`archscope diff A B`: what differs in the two specs and what each difference costs;
    `archscope.estimate.diff.diff_dict(d)` is its JSON."""
    (spec_a, set_a), (spec_b, set_b) = load_labelled(a, overrides), load_labelled(b, overrides)
    labels = distinct_labels([model_label(spec_a.name, set_a), model_label(spec_b.name, set_b)],
                             [a, b], [set_a, set_b])
    return spec_diff(spec_a, spec_b, seq_len, *labels)
