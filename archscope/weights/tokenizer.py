"""The checkpoint folder's tokenizer: load it (local files only), build the prompt (with the chat
template for instruct checkpoints), find every end-of-sequence id, and turn ids back into text
as they come.
"""

from __future__ import annotations

import re
from pathlib import Path

from archscope.errors import InputError, quote, shorten
from archscope.interrupts import TimeLimitExceeded, time_limit
from archscope.reads import read_json
from archscope.spec.limits import (CHAT_TEMPLATE_SECONDS, CHECKPOINT_JSON_BYTES_MAX,
                                   JSON_DEPTH_MAX, PROMPT_CHARS_MAX)


def load_tokenizer(folder: str | Path):
    """transformers.AutoTokenizer from `folder`; nothing is fetched from a hub."""
    from transformers import AutoTokenizer

    folder = Path(folder)
    if not any((folder / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json",
                                                      "tokenizer.model")):
        raise InputError(f"{folder}: no tokenizer (tokenizer.json or tokenizer_config.json) "
                         f"beside the weights; generate needs the checkpoint's own tokenizer")
    try:
        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except ImportError:
        raise
    except Exception as err:  # noqa: BLE001 - the folder's files, read by transformers, which
        # raises what its parsers and validators raise (OSError, ValueError, huggingface_hub's
        # StrictDataclassError...): each is a file of this folder that cannot be used
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise InputError(f"{folder}: cannot load the tokenizer ({type(err).__name__}: "
                         f"{shorten(first, 160)})") from None


def eos_ids(folder: str | Path, tokenizer=None) -> list[int]:
    """Every end-of-sequence id the checkpoint declares: generation_config.json first, then
    config.json, then the tokenizer's eos token (each may be one id or a list). A file that is
    no JSON object, or whose eos_token_id is not null, an id or a list of ids, is refused
    naming it: generation would otherwise not stop where the model ends. (An id past the
    vocabulary is kept: transformers' own default configs carry one; it is never generated.)"""
    ids: list[int] = []
    for name in ("generation_config.json", "config.json"):
        path = Path(folder) / name
        if path.exists():
            data = read_json(path, CHECKPOINT_JSON_BYTES_MAX, JSON_DEPTH_MAX, name)
            if not isinstance(data, dict):
                raise InputError(f"{path}: expected a JSON object, got {quote(data)}")
            ids += _checked_ids(data.get("eos_token_id"), path)
    if tokenizer is not None:
        ids += _ints(tokenizer.eos_token_id)
    return list(dict.fromkeys(ids))


def _checked_ids(value, path: Path) -> list[int]:
    ids = _ints(value)
    values = value if isinstance(value, list) else [] if value is None else [value]
    if len(ids) != len(values) or any(i < 0 for i in ids):
        raise InputError(f"{path}: eos_token_id: expected a token id or a list of them, got "
                         f"{quote(value)}")
    return ids


def _ints(value) -> list[int]:
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def prompt_ids(tokenizer, prompt: str, chat: bool = False, system: str | None = None
               ) -> list[int]:
    """The prompt's ids: with `chat`, one user turn (and a system turn) through the tokenizer's
    chat template, ending where the assistant's answer starts; else the plain text with the
    tokenizer's own special tokens (Llama's begin-of-text). InputError for a prompt that is no
    text, or gives no token, and for a chat template that fails or runs too long."""
    _check_text(prompt, "the prompt")
    if system is not None:
        _check_text(system, "the system message")
    if not chat:
        return _nonempty(_encode(tokenizer, prompt), "the prompt")
    if not getattr(tokenizer, "chat_template", None):
        raise InputError("chat=True: this tokenizer has no chat template (base checkpoints "
                         "have none; use an -Instruct checkpoint, or chat=False)")
    messages = ([{"role": "system", "content": system}] if system else []) + \
        [{"role": "user", "content": prompt}]
    text = _render_chat(tokenizer, messages)
    # the template already wrote the special tokens (begin-of-text): do not add them twice
    return _nonempty(_encode(tokenizer, text, add_special_tokens=False),
                     "the chat template's prompt")


def _encode(tokenizer, text: str, **options) -> list[int]:
    """The ids of `text`. Encoding runs on the folder's tokenizer files (tokenizer_config.json's
    model_max_length, its special tokens...): transformers raises whatever its checks raise on
    a value of the wrong type (a TypeError for a model_max_length that is a list), and each is
    a file of the folder that cannot be used."""
    try:
        return list(tokenizer(text, **options)["input_ids"])
    except Exception as err:  # noqa: BLE001 - see above
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise InputError(f"the checkpoint's tokenizer (tokenizer.json, tokenizer_config.json) "
                         f"fails on the prompt: {type(err).__name__}: {shorten(first, 160)}"
                         ) from None


_NOT_TEXT = re.compile("[\0\ud800-\udfff]")


def _check_text(text: str, what: str) -> None:
    """Text a tokenizer can take: no NUL, no undecodable bytes (which Python keeps as lone
    surrogates from a command line that is not UTF-8), within PROMPT_CHARS_MAX characters."""
    if len(text) > PROMPT_CHARS_MAX:
        raise InputError(f"{what} has {len(text):,} characters, beyond the limit "
                         f"{PROMPT_CHARS_MAX:,} (archscope/spec/limits.py)")
    bad = _NOT_TEXT.search(text)
    if bad:
        kind = "a NUL byte" if bad[0] == "\0" else "bytes that are not UTF-8"
        raise InputError(f"{what} holds {kind} at character {bad.start()}: give UTF-8 text")


def _nonempty(ids: list[int], what: str) -> list[int]:
    if not ids:
        raise InputError(f"{what} gives no token: generation needs at least one")
    return ids


def _render_chat(tokenizer, messages: list[dict]) -> str:
    """The chat template's text. The template is a program from the checkpoint folder: an
    error in it, or one running past CHAT_TEMPLATE_SECONDS, is bad input naming it."""
    try:
        with time_limit(CHAT_TEMPLATE_SECONDS):
            text = tokenizer.apply_chat_template(messages, tokenize=False,
                                                 add_generation_prompt=True)
    except TimeLimitExceeded:
        raise InputError(f"the tokenizer's chat template ran past {CHAT_TEMPLATE_SECONDS:g} s "
                         f"(a loop without end?); fix the template or use chat=False") from None
    except Exception as err:  # noqa: BLE001 - jinja2's errors, or Python's from inside it
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise InputError(f"the tokenizer's chat template fails: {type(err).__name__}: "
                         f"{shorten(first, 160)}; fix the template or use chat=False") from None
    if not isinstance(text, str):
        raise InputError(f"the tokenizer's chat template gave {quote(text)}, not text")
    _check_text(text, "the chat template's prompt")
    return text


class IncrementalText:
    """Text for a growing list of ids, returned piece by piece.

    Decoding one id at a time breaks characters spread over several byte-level tokens, and
    spaces some tokenizers add between tokens. So the ids since the last complete line are
    decoded together and only the new suffix is returned; a suffix ending in an unfinished
    character (U+FFFD) waits for the next token. An id past the tokenizer's vocabulary is
    shown as `[id]`.
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.size = len(tokenizer)
        self.ids: list[int] = []
        self.shown = 0

    def push(self, token: int) -> str:
        if token >= self.size:  # an id the tokenizer has no text for (a model's padded
            # vocabulary, a random checkpoint): shown as [id] rather than silently dropped
            out = self.flush()
            self.ids, self.shown = [], 0
            return out + f"[{token}]"
        self.ids.append(token)
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            return ""
        return self._emit(text)

    def flush(self) -> str:
        return self._emit(self.tokenizer.decode(self.ids, skip_special_tokens=True))

    def _emit(self, text: str) -> str:
        piece = text[self.shown:]
        if text.endswith("\n"):  # a finished line: start over, so decoding stays short
            self.ids, self.shown = [], 0
        else:
            self.shown = len(text)
        return piece
