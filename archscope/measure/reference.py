"""The transformers reference: the same weights in transformers' own class, stepped through its
own cache.

The twin is built from the spec's exported config.json (archscope.spec.hf) with its parameters
on the meta device, then handed archscope's own weight tensors through the weight-name table
(assign=True): the two models share storage, so the comparison costs no second copy of the
weights and cannot differ in them. Attention is SDPA, as in archscope (eager for a class that
has no SDPA path, such as GptOss).

`HFStepper` runs transformers' model the way archscope's decode loop runs archscope's: one
forward of the prompt through the cache, then one forward per token, each returning the last
position's logits; the profiler times both with the same stopwatch (archscope.measure.timed),
so no whole-run difference (generate(T) - generate(1), whose prefill dominates) stands in for
the decode steps. `hf_generate` is kept for token checks against transformers' own loop.
"""

from __future__ import annotations

import inspect
import time
from contextlib import contextmanager

import torch

from archscope.errors import InputError
from archscope.measure.timing import sync
from archscope.nn.model import DecoderLM


def hf_twin(model: DecoderLM, attn_implementation: str = "sdpa"):
    """transformers' model for `model.spec`, sharing `model`'s weights, on its device/dtype."""
    import transformers
    from accelerate import init_empty_weights

    from archscope.nn.fuse import unfused_state_dict
    from archscope.spec.hf import spec_to_hf_config
    from archscope.weights import ours_to_hf, table_for

    ref = model.embed_tokens.weight
    config_dict = spec_to_hf_config(model.spec)
    config = transformers.AutoConfig.for_model(**config_dict)
    with _quiet(), init_empty_weights(include_buffers=False):
        try:
            hf = transformers.AutoModelForCausalLM.from_config(
                config, attn_implementation=attn_implementation, dtype=ref.dtype)
        except ValueError:  # a class with no SDPA path (GptOss: its sinks): eager is its own
            if attn_implementation != "sdpa":
                raise
            hf = transformers.AutoModelForCausalLM.from_config(
                config, attn_implementation="eager", dtype=ref.dtype)
    # checkpoint names: a model fused for fast decoding (archscope.nn.fuse) is split back
    tensors = ours_to_hf(table_for(config_dict["model_type"]), unfused_state_dict(model))
    result = hf.load_state_dict(tensors, strict=False, assign=True)
    if result.missing_keys or result.unexpected_keys:
        raise InputError(f"cannot load archscope's weights into transformers' "
                         f"{type(hf).__name__}: missing {result.missing_keys}, "
                         f"unexpected {result.unexpected_keys}")
    hf.tie_weights()
    hf = hf.to(ref.device).eval()  # buffers (RoPE tables) were built on the CPU
    # Generate exactly new_tokens greedy tokens: no end-of-sequence token from config defaults.
    hf.generation_config.eos_token_id = None
    hf.generation_config.pad_token_id = None
    return hf


@contextmanager
def _quiet():
    """transformers' logger off for a moment (it warns about things irrelevant here)."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(level)


class HFStepper:
    """transformers' model with its own cache ('dynamic': a DynamicCache grown per run, as
    generate makes one; 'static': one StaticCache of `context` slots, reset between runs, as
    generate's cache_implementation="static"), called as archscope's prefill and decode step."""

    def __init__(self, hf, context: int, cache_kind: str = "dynamic"):
        if cache_kind not in ("dynamic", "static"):
            raise InputError(f"transformers' cache must be 'dynamic' or 'static', got "
                             f"{cache_kind!r}")
        from transformers import StaticCache

        self.hf, self.cache_kind = hf, cache_kind
        self.cache_keyword = cache_keyword(hf)  # read once: a signature costs ~17 us a call
        self._static = (StaticCache(config=hf.config, max_cache_len=context)
                        if cache_kind == "static" else None)

    def new_cache(self):
        """An empty cache for one generation (untimed: the caller resets before the clock)."""
        if self._static is not None:
            with torch.inference_mode():  # its tensors were made under inference mode
                self._static.reset()
            self._static.archscope_seen = 0
            return self._static
        from transformers import DynamicCache

        return DynamicCache(config=self.hf.config)

    @torch.inference_mode()
    def forward(self, ids: torch.Tensor, cache) -> torch.Tensor:
        """`ids` [B, n] after what `cache` holds; the last position's logits [B, vocab]. The
        positions are passed as generate passes them (no attention mask: no padding here).
        The tokens seen are counted here: a cache without attention layers (Mamba2ForCausalLM's)
        has no get_seq_length."""
        start = getattr(cache, "archscope_seen", 0)
        positions = torch.arange(start, start + ids.shape[1], device=ids.device)
        logits = self.hf(input_ids=ids, cache_position=positions, use_cache=True,
                         logits_to_keep=1, **{self.cache_keyword: cache}).logits[:, -1]
        cache.archscope_seen = start + ids.shape[1]
        return logits


def cache_keyword(module) -> str:
    """The keyword a transformers module's forward takes its cache by: `cache` where its
    signature names it (transformers 5.2x renamed `past_key_values`, dropped in 5.40), else
    the old one."""
    return "cache" if "cache" in inspect.signature(module.forward).parameters else "past_key_values"


def cache_kwargs(module, cache) -> dict:
    """{keyword: cache} for a call of `module` (see cache_keyword)."""
    return {cache_keyword(module): cache}


def returned_cache(output):
    """The cache a transformers forward returned (`output.cache`; `past_key_values` before the
    rename)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


@torch.inference_mode()
def hf_generate(hf, prompt: torch.Tensor, new_tokens: int, cache_implementation: str = "dynamic"):
    """(tokens [B, new_tokens], seconds) of transformers' greedy generate, synchronised."""
    kwargs = {} if cache_implementation == "dynamic" else {"cache_implementation": cache_implementation}
    sync(prompt.device)
    t0 = time.perf_counter()
    with _quiet():
        out = hf.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                          max_new_tokens=new_tokens, **kwargs)
    sync(prompt.device)
    return out[:, prompt.shape[1]:], time.perf_counter() - t0


@torch.inference_mode()
def max_abs_logit_diff(model: DecoderLM, hf, prompt: torch.Tensor) -> float:
    """Largest |difference| between the two models' logits over every prompt position."""
    ours = model(prompt)
    theirs = hf(prompt).logits
    return (ours.float() - theirs.float()).abs().max().item()
