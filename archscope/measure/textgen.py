"""Token-by-token generation for people: stop on an end-of-sequence id, yield each token at once.

The profiler's `decode` keeps tokens on the device and never waits for the host; a reader wants
the opposite: every token on the host as soon as it exists, to print it, and a stop as soon as
an end-of-sequence id appears (instruct models have several: Llama 3.2 Instruct ends a turn
with 128009 and a text with 128001). The steps are the same (`prefill`, `eager_step`).
"""

from __future__ import annotations

import time
from typing import Iterable, Iterator

import torch

from archscope.errors import InputError
from archscope.measure.generate import NextToken, eager_step, greedy, prefill
from archscope.measure.timing import sync


class TokenStream:
    """Iterate to get the new token ids one at a time; afterwards `stop_reason` ("eos",
    "max_new_tokens" or "context"), `first_token_s` (prefill) and `decode_s` are set."""

    def __init__(self, model, prompt: torch.Tensor, max_new_tokens: int,
                 next_token: NextToken = greedy, eos_ids: Iterable[int] = (), cache=None):
        if prompt.dim() != 2 or prompt.shape[0] != 1 or prompt.shape[1] == 0:
            raise InputError("generation takes one non-empty prompt")
        context = model.spec.max_seq_len
        if prompt.shape[1] >= context:
            raise InputError(f"the prompt has {prompt.shape[1]} tokens; {model.spec.name} "
                             f"holds at most {context}")
        if max_new_tokens < 1:
            raise InputError(f"max_new_tokens must be >= 1, got {max_new_tokens!r}")
        self.model, self.prompt, self.next_token = model, prompt, next_token
        self.limit = min(max_new_tokens, context - prompt.shape[1])
        self.context_bound = self.limit < max_new_tokens
        self.eos = set(eos_ids)
        self.cache = cache if cache is not None else \
            model.new_cache(1, prompt.shape[1] + self.limit)
        self.tokens: list[int] = []
        self.stop_reason = ""
        self.first_token_s = self.decode_s = 0.0

    def __iter__(self) -> Iterator[int]:
        return self._run()

    @torch.inference_mode()
    def _run(self) -> Iterator[int]:
        step, device = eager_step(self.model), self.prompt.device
        t0 = time.perf_counter()
        token = self.next_token(prefill(self.model, self.prompt, self.cache))
        for i in range(self.limit):
            value = int(token.item())  # waits for the device: this token is printed now
            if i == 0:
                self.first_token_s = time.perf_counter() - t0
                t0 = time.perf_counter()
            self.tokens.append(value)
            yield value
            if value in self.eos:
                self.stop_reason = "eos"
                break
            if i + 1 < self.limit:
                token = self.next_token(step(token.view(1, 1), self.cache))
        else:
            self.stop_reason = "context" if self.context_bound else "max_new_tokens"
        sync(device)
        self.decode_s = time.perf_counter() - t0

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Tokens after the first per second (None with fewer than two tokens)."""
        n = len(self.tokens) - 1
        return n / self.decode_s if n > 0 and self.decode_s > 0 else None


def open_generation(folder, prompt: str, *, spec=None, device: str = "cpu",
                    dtype: torch.dtype = torch.float32, device_map=None, chat: bool = False,
                    system: str | None = None, max_new_tokens: int = 128,
                    next_token: NextToken = greedy, allow_pickle: bool = False,
                    weight_format: str | None = None):
    """Load the checkpoint and its tokenizer, encode the prompt: (TokenStream, IncrementalText,
    info) where info holds the spec, the load time, the prompt length and the eos ids.
    `weight_format` (int8, int4) quantizes the loaded model's linears (archscope.measure.quantize)."""
    from archscope.weights.loader import check_folder, input_device, load_checkpoint
    from archscope.weights.placement import check_device_map, new_cache
    from archscope.weights.spec_check import folder_spec
    from archscope.weights.tokenizer import IncrementalText, eos_ids, load_tokenizer, prompt_ids

    check_device_map(device_map)
    if weight_format is not None:
        _check_weight_format(weight_format, dtype, device_map)
    check_folder(folder)  # a mistyped path is "does not exist", not "no tokenizer"
    eos_ids(folder)  # the files' end-of-sequence ids checked before transformers reads them
    tokenizer = load_tokenizer(folder)  # next: a folder without one fails before the weights
    ids = prompt_ids(tokenizer, prompt, chat, system)
    known = spec or folder_spec(folder)  # what is checked before any weight is read:
    eos = eos_ids(folder, tokenizer)
    if max(ids, default=0) >= known.vocab_size:  # a tokenizer from another model
        raise InputError(f"{folder}: the tokenizer gives id {max(ids)} but the model's "
                         f"vocabulary has {known.vocab_size} ids: tokenizer and weights differ")
    if len(ids) >= known.max_seq_len:
        raise InputError(f"the prompt has {len(ids):,} tokens; {known.name} holds at most "
                         f"{known.max_seq_len:,} (max_seq_len), and one must be left to generate")
    t0 = time.perf_counter()
    model, spec = load_checkpoint(folder, spec, device, dtype, device_map=device_map,
                                  allow_pickle=allow_pickle)
    if weight_format is not None:
        from archscope.measure.quantize import quantize_linears

        quantize_linears(model, weight_format)  # refuses, changing nothing, what has no kernel
    device_in = input_device(model)
    sync(device_in)
    load_s = time.perf_counter() - t0
    prompt_t = torch.tensor([ids], dtype=torch.long, device=device_in)
    capacity = min(len(ids) + max_new_tokens, spec.max_seq_len)
    cache = new_cache(model, getattr(model, "placement", None), 1, capacity) \
        if len(ids) < spec.max_seq_len else None
    stream = TokenStream(model, prompt_t, max_new_tokens, next_token, eos, cache)
    info = {"spec": spec, "load_s": load_s, "prompt_tokens": len(ids), "eos_ids": eos,
            "device": str(device_in), "dtype": str(dtype).removeprefix("torch."),
            "weight_format": weight_format and quantized_name(weight_format)}
    return stream, IncrementalText(tokenizer), info


def _check_weight_format(weight_format: str, dtype: torch.dtype, device_map) -> None:
    from archscope.measure.quantized import DTYPE
    from archscope.measure.timing import to_torch_dtype

    quantized_name(weight_format)
    if dtype != to_torch_dtype(DTYPE):
        raise InputError(f"--weight-format runs in {DTYPE}; got --dtype "
                         f"{str(dtype).removeprefix('torch.')}")
    if device_map is not None:
        raise InputError("--weight-format does not go with --device-map")


def quantized_name(weight_format: str) -> str:
    """The format's name if it runs here, else InputError naming the option and those that do."""
    from archscope.measure.quantize import runnable_format

    try:
        return runnable_format(weight_format).name
    except InputError as e:
        raise InputError(f"--weight-format {weight_format}: {e}") from None
