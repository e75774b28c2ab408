"""The checkpoint folder's tokenizer: load it (local files only), build the prompt (with the chat
template for instruct checkpoints), find every end-of-sequence id, and turn ids back into text
as they come.
"""

from __future__ import annotations

import json
from pathlib import Path

from archscope.errors import InputError


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
    except (OSError, ValueError, KeyError) as err:
        raise InputError(f"{folder}: cannot load the tokenizer ({type(err).__name__}: "
                         f"{str(err).splitlines()[0] if str(err) else ''})") from None


def eos_ids(folder: str | Path, tokenizer=None) -> list[int]:
    """Every end-of-sequence id the checkpoint declares: generation_config.json first, then
    config.json, then the tokenizer's eos token (each may be one id or a list)."""
    ids: list[int] = []
    for name in ("generation_config.json", "config.json"):
        path = Path(folder) / name
        if path.is_file():
            try:
                value = json.loads(path.read_text(encoding="utf-8")).get("eos_token_id")
            except (OSError, ValueError, AttributeError):
                continue
            ids += _ints(value)
    if tokenizer is not None:
        ids += _ints(tokenizer.eos_token_id)
    return list(dict.fromkeys(ids))


def _ints(value) -> list[int]:
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def prompt_ids(tokenizer, prompt: str, chat: bool = False, system: str | None = None
               ) -> list[int]:
    """The prompt's ids: with `chat`, one user turn (and a system turn) through the tokenizer's
    chat template, ending where the assistant's answer starts; else the plain text with the
    tokenizer's own special tokens (Llama's begin-of-text)."""
    if not chat:
        return list(tokenizer(prompt)["input_ids"])
    if not getattr(tokenizer, "chat_template", None):
        raise InputError("chat=True: this tokenizer has no chat template (base checkpoints "
                         "have none; use an -Instruct checkpoint, or chat=False)")
    messages = ([{"role": "system", "content": system}] if system else []) + \
        [{"role": "user", "content": prompt}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    # the template already wrote the special tokens (begin-of-text): do not add them twice
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


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
