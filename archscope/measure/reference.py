"""The transformers reference: the same weights in transformers' own class, and its generate.

The twin is built from the spec's exported config.json (archscope.spec.hf) with its parameters
on the meta device, then handed archscope's own weight tensors through the weight-name table
(assign=True): the two models share storage, so the comparison costs no second copy of the
weights and cannot differ in them. Attention is SDPA, as in archscope (eager for a class that
has no SDPA path, such as GptOss).
"""

from __future__ import annotations

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
    tensors = ours_to_hf(table_for(config_dict["model_type"]), model.state_dict())
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
