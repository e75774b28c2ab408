"""`archscope fit`: one setup's answer, or the catalog's "which GPUs, how many", as text or
markdown (the same cells: a pipe table, the notes as a list). Sizes in the byte family of
--units (archscope/units.py)."""

from __future__ import annotations

from archscope.report.fmt import commas, text_table
from archscope.tables import pipe_table
from archscope.units import size, units_note


def _gb(nbytes: float) -> str:
    return size(nbytes, "G")


def _lines(titles: list[str], rows: list[list[str]], notes: list[str], markdown: bool,
           right=frozenset(), text_titles: bool = True) -> list[str]:
    """A table and the notes under it; the text view of a key-value table has no title row."""
    if markdown:
        return ["", pipe_table([titles, *rows]), "", *(f"- {n.strip()}" for n in notes)]
    return [*text_table([titles, *rows] if text_titles else rows, right), "", *notes]


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:,.2f} ms"


def _phase(phase) -> str:
    gaps = f" + kernel gaps {_ms(phase.latency_s)}" if phase.latency_s else ""
    link = f" + collectives {_ms(phase.collective_s)}" if phase.collective_s else ""
    return (f"{_ms(phase.seconds)} ({phase.bound}-bound: max(compute {_ms(phase.compute_s)}, "
            f"memory {_ms(phase.memory_s)}){gaps}{link})")


def _setup(f, checkpoint: str | None) -> str:
    s = f.setup
    split = f"tp {s.tp}" + (f", ep {s.ep}" if s.ep > 1 else "")
    replicas = f", {f.replicas} replicas" if f.replicas > 1 else ""
    own = " (the checkpoint's)" if s.weight_format == checkpoint else ""
    return (f"{f.model} on {s.n_gpus} x {f.hardware.name} ({split}{replicas}), weights "
            f"{s.weight_format}{own}, KV cache {s.kv_dtype}, context {commas(s.context)}, "
            f"batch {s.batch}")


def _instead(f) -> list[list[str]]:
    """What would load, for a setup that cannot (FitResult.advice)."""
    a, s = f.advice, f.setup
    if a is None:
        return []
    return [["would fit on", f"{a.n_gpus} x {f.hardware.name} (tp {a.n_gpus}), "
                             f"{s.weight_format}" if a.n_gpus else
             f"no count up to 64 x {f.hardware.name} in {s.weight_format}"],
            ["or in", f"{a.weight_format} on {s.n_gpus} x {f.hardware.name}"
             if a.weight_format else "no smaller common format on these GPUs"]]


def fit_text(f, checkpoint: str | None = None, markdown: bool = False) -> str:
    """A FitResult (estimate/fit.py) for people; `checkpoint`: the model's checkpoint format,
    named when it is the one priced. A setup that cannot load shows what would, and no speed."""
    s, sp = f.setup, f.split
    state = (f" (KV {_gb(f.kv_bytes_per_sequence)} + constant state "
             f"{_gb(f.state_bytes_per_sequence)})" if f.state_bytes_per_sequence else "")
    verdict = "fits" if f.fits else ("weights do not fit" if not f.weights_fit
                                     else f"only {f.sequences_per_replica} sequences fit")
    rows = [
        ["verdict", verdict],
        ["weights per GPU", f"{_gb(sp.weights_bytes_per_gpu)} of {_gb(f.usable_bytes_per_gpu)} "
                            f"usable ({s.gpu_memory_utilization:g} x "
                            f"{_gb(f.hardware.memory_bytes)}"
                            + (f" less the {f.reserve.name} reserve"
                               if f.reserve.name != "raw" else "") + ")"],
        *([[f"{f.reserve.name} reserve", f"{_gb(f.activation_reserve_bytes)} activation peak "
             f"({f.reserve.max_batched_tokens:,} tokens) + {_gb(f.reserve.non_torch_bytes)} "
             f"outside torch, in that share"]] if f.reserve.name != "raw" else []),
        ["left for the cache", _gb(f.cache_budget_bytes_per_gpu) + " per GPU"
                               + f" ({commas(f.kv_capacity_tokens)} tokens of KV)"
                               * bool(f.kv_capacity_tokens)],
        ["cache per sequence", f"{_gb(f.cache_bytes_per_sequence)} per GPU{state}"],
        ["longest context, batch 1", f"{commas(f.max_context)} tokens"
                                     + (" (the model's max_seq_len)"
                                        if f.max_context_limit == "model" else "")],
        ["concurrent sequences", f"{commas(f.max_concurrent_sequences)} at "
                                 f"{commas(s.context)} tokens"],
    ]
    rows += [
        ["time to first token", _phase(f.prefill)],
        ["time per output token", _phase(f.decode)],
        ["decode tokens/s", f"{f.decode_tokens_per_s:,.1f} ({s.batch} x {f.replicas} "
                            f"sequences)"],
    ] if f.fits else _instead(f)
    if sp.collective_bytes_per_token:
        rows.append(["collectives per token", f"{commas(sp.allreduce_bytes_per_token)} B "
                     f"all-reduce + {commas(sp.all_to_all_bytes_per_token)} B all-to-all "
                     f"per GPU"])
    notes = [
        f"Roofline at {f.fractions.bandwidth:g} of peak bandwidth and {f.fractions.compute:g} "
        f"of dense {f.rates.dtype} peak ({f.hardware.name}).",
        f"  bandwidth fraction: {f.fractions.bandwidth_source}",
        f"  compute fraction: {f.fractions.compute_source}",
        "  plus the kernel gaps and collective latencies of achievable.yaml; not modelled: "
        "speculative decoding, MTP, prefix caching, chunked-prefill interference.",
    ] if f.fits else ["This setup cannot load: no speed is estimated for it."]
    notes += [
        "Cache paged in 16-token blocks; the reserve (1 - utilisation) holds activations and "
        f"workspace; {units_note()}.",
    ]
    if sp.replicated:
        notes.append(f"Replicated on every GPU: {', '.join(sp.replicated)}"
                     + ("; MLA's latent cache is not split by heads: every GPU holds all of it."
                        if any(h is None for h in sp.kv_heads_per_gpu) and s.tp > 1 else "."))
    return "\n".join([_setup(f, checkpoint), *_lines(["quantity", "value"], rows, notes,
                                                    markdown, text_titles=False)]) + "\n"


def catalog_text(model: str, context: int, formats: list[str], cells: dict,
                 markdown: bool = False) -> str:
    """cells[(gpu, format)] -> the fewest GPUs that hold the model, or None."""
    gpus = list(dict.fromkeys(g for g, _ in cells))
    head = ["gpu", *formats]
    rows = [[g, *(f"{cells[(g, fmt)]}x" if cells[(g, fmt)] else "-" for fmt in formats)]
                     for g in gpus]
    title = (f"{model}: GPUs needed (tensor-parallel over 1, 2, 4 or 8) for the weights and one "
             f"sequence of {commas(context)} tokens, at 0.9 of memory")
    notes = ["  \"-\": more than 8, or no split of 2, 4 or 8 divides the model."]
    return "\n".join([title, *_lines(head, rows, notes, markdown,
                                               set(range(1, len(head))))]) + "\n"
