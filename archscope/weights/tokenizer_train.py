"""A small byte-level BPE tokenizer, trained here with the `tokenizers` library on a built-in
text, for checkpoints made without downloading anything (`archscope make-checkpoint`, tests).

Byte-level: every string encodes (256 byte tokens), so the vocabulary needs at least 256 ids
plus the special tokens; merges learnt from the text fill the rest, up to `vocab_size`, so every
id fits the model's embedding. It carries a begin-of-text token added to every encoding, an
end-of-text token, and a plain chat template (role tokens, a turn ends with <|eot|>); both end
tokens are end-of-sequence ids for generation.
"""

from __future__ import annotations

BOS, EOS, EOT = "<|begin|>", "<|end|>", "<|eot|>"
SPECIAL = [BOS, EOS, "<|system|>", "<|user|>", "<|assistant|>", EOT]
MIN_VOCAB = 256 + len(SPECIAL)
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>"
    "{{ message['content'] }}<|eot|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}")

TEXT = """\
A language model reads a sequence of tokens and predicts the next one. Each token becomes a
vector; a stack of decoder layers mixes the vectors with attention and transforms each with a
feed-forward network; a final projection turns the last vector into a score for every token in
the vocabulary. Generation repeats this: pick a token, append it, and predict again.
Attention compares the query of the newest token with the keys of all earlier tokens and takes
a weighted sum of their values. The keys and values of earlier tokens do not change, so they
are kept in a cache, and each new token costs one pass through the layers.
Hello! How are you today? I am fine, thank you. The weather is mild and the sky is clear.
We walked along the river, counted the boats, and talked about numbers, memory and speed.
Small models are quick to test; large models need careful measurement of bytes and time.
One, two, three, four, five, six, seven, eight, nine, ten. 1 2 3 4 5 6 7 8 9 0 + - * / = %.
The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.
Questions and answers: what is a layer? What is a head? Why does the cache grow with length?
A user asks a question, and the assistant answers it clearly, briefly and correctly.
"""


def train_tokenizer(vocab_size: int, text: str = TEXT):
    """A transformers fast tokenizer with at most `vocab_size` ids (ValueError if too small)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if vocab_size < MIN_VOCAB:
        raise ValueError(f"a byte-level tokenizer needs vocab_size >= {MIN_VOCAB} (256 bytes and "
                         f"{len(SPECIAL)} special tokens), got {vocab_size}")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(text.splitlines(), trainer)
    bos = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS,
                                   chat_template=CHAT_TEMPLATE, model_max_length=1 << 30)


def end_ids(tokenizer) -> list[int]:
    """The ids that end generation: end of text and end of turn."""
    return [tokenizer.convert_tokens_to_ids(t) for t in (EOS, EOT)]
