"""`archscope fit --format json`: one FitResult as a flat, JSON-ready object.

Byte counts and sequence / token counts are integers; times are milliseconds (floats). The
keys README names are fits, weights_bytes_per_gpu, cache_bytes_per_sequence, max_context,
max_concurrent_sequences, ttft_ms, tpot_ms, decode_tokens_per_s and bound (the three speeds
null when the setup cannot load: `advice` then names the fewest GPUs and a format that would,
estimate/fit_advice.py); the rest say how they were reached (the parts of the cache, the collectives, the fractions and their sources).
"""

from __future__ import annotations


def _ms(seconds: float) -> float:
    return round(1e3 * seconds, 4)


def _phase(phase) -> dict:
    return {"ms": _ms(phase.seconds), "bound": phase.bound, "flops_per_gpu": round(phase.flops),
            "bytes_per_gpu": round(phase.bytes),
            "collective_bytes_per_gpu": round(phase.collective_bytes),
            "compute_ms": _ms(phase.compute_s), "memory_ms": _ms(phase.memory_s),
            "interconnect_ms": _ms(phase.interconnect_s),
            # the terms a roofline leaves out (fit_roofline.py): kernel gaps, collective waits
            "latency_ms": _ms(phase.latency_s),
            "collective_latency_ms": _ms(phase.collective_latency_s)}


def fit_row(f) -> dict:
    """The JSON object of FitResult `f` (estimate/fit.py)."""
    s, sp, hw, r = f.setup, f.split, f.hardware, f.rates
    return {
        "model": f.model, "gpu": hw.name, "n_gpus": s.n_gpus, "tp": s.tp, "ep": s.ep,
        "replicas": f.replicas, "weight_format": s.weight_format, "kv_dtype": s.kv_dtype,
        "context": s.context, "batch": s.batch,
        "gpu_memory_utilization": s.gpu_memory_utilization,
        "fits": f.fits, "weights_fit": f.weights_fit,
        "memory_bytes_per_gpu": hw.memory_bytes, "usable_bytes_per_gpu": f.usable_bytes_per_gpu,
        "engine": s.engine,
        "engine_reserve": {"activation_peak_bytes": f.activation_reserve_bytes,
                           "max_batched_tokens": f.reserve.max_batched_tokens,
                           "non_torch_bytes": f.reserve.non_torch_bytes},
        "weights_bytes_per_gpu": sp.weights_bytes_per_gpu,
        "cache_budget_bytes_per_gpu": f.cache_budget_bytes_per_gpu,
        "cache_bytes_per_sequence": f.cache_bytes_per_sequence,
        "kv_bytes_per_sequence": f.kv_bytes_per_sequence,
        "state_bytes_per_sequence": f.state_bytes_per_sequence,
        "model_cache_bytes_per_sequence": f.model_cache_bytes_per_sequence,
        "cache_block_tokens": 16,
        "max_context": f.max_context, "max_context_limit": f.max_context_limit,
        "max_concurrent_sequences": f.max_concurrent_sequences,
        "kv_capacity_tokens": f.kv_capacity_tokens,
        "max_concurrent_sequences_per_replica": f.sequences_per_replica,
        # a setup that cannot load runs at no speed: null, and `advice` says what would load
        "ttft_ms": _ms(f.prefill.seconds) if f.fits else None,
        "tpot_ms": _ms(f.decode.seconds) if f.fits else None,
        "decode_tokens_per_s": round(f.decode_tokens_per_s, 3) if f.fits else None,
        "bound": {"ttft": f.prefill.bound, "tpot": f.decode.bound},
        "advice": f.advice.row() if f.advice else None,
        "prefill": _phase(f.prefill), "decode": _phase(f.decode),
        "collective_bytes_per_token": {"all_reduce": sp.allreduce_bytes_per_token,
                                       "all_to_all": sp.all_to_all_bytes_per_token,
                                       "logits_gather": sp.logits_gather_bytes_per_token},
        "replicated_tensors": list(sp.replicated),
        "compute_dtype": r.dtype,
        "achieved_flops_per_s": r.flops_per_s, "achieved_bandwidth_bytes_per_s": r.bytes_per_s,
        "achieved_weights_bandwidth_bytes_per_s": r.weights_bytes_per_s or r.bytes_per_s,
        "latency": None if r.latency is None else {
            "kernels_per_layer": r.latency.kernels_per_layer, "kernel_s": r.latency.kernel_s,
            "step_s": r.latency.step_s, "collective_s": r.latency.collective(r.link),
            "moe_dispatch_combine_s": r.latency.moe_dispatch_combine_s,
            "collectives_per_step": sp.collectives_per_step,
            "dispatched_layers": sp.dispatched_layers,
            "source": "archscope/hardware/achievable.yaml (latency, format_bandwidth, "
                      "prefill_compute)"},
        "interconnect_one_way_bytes_per_s": r.link_bytes_per_s,
        "fractions": {"bandwidth": f.fractions.bandwidth, "compute": f.fractions.compute,
                      "bandwidth_source": f.fractions.bandwidth_source,
                      "compute_source": f.fractions.compute_source},
        "hardware_source": hw.source_url or hw.source_title,
    }
