"""Sampling rules for `generate`, and text streamed piece by piece equal to the whole decode."""

from __future__ import annotations

import pytest
import torch

from archscope.errors import InputError
from archscope.measure.generate import greedy
from archscope.measure.sampling import filtered_probs, make_sampler
from archscope.weights.tokenizer import IncrementalText, eos_ids, prompt_ids
from archscope.weights.tokenizer_train import train_tokenizer


def _logits(seed=0, rows=3, vocab=50):
    return torch.randn(rows, vocab, generator=torch.Generator().manual_seed(seed)) * 3


def test_temperature_zero_is_greedy():
    assert make_sampler(0.0) is greedy


@pytest.mark.parametrize("kwargs", [dict(top_k=1), dict(top_p=1e-6)])
def test_a_single_candidate_samples_the_argmax(kwargs):
    logits = _logits()
    assert torch.equal(make_sampler(1.0, seed=0, **kwargs)(logits), logits.argmax(-1))


def test_the_same_seed_gives_the_same_draws():
    logits = _logits()
    a, b = make_sampler(1.0, seed=7), make_sampler(1.0, seed=7)
    assert all(torch.equal(a(logits), b(logits)) for _ in range(5))


def test_top_k_and_top_p_keep_only_their_candidates():
    logits = torch.tensor([[4.0, 3.0, 2.0, 1.0, 0.0]])
    assert (filtered_probs(logits, 1.0, 2, None)[0, 2:] == 0).all()
    probs = logits.softmax(-1)[0]  # ~0.64, 0.24, 0.09, ...: p=0.8 keeps the first two
    kept = filtered_probs(logits, 1.0, None, 0.8)[0]
    assert (kept[:2] > 0).all() and (kept[2:] == 0).all() and probs[0] < 0.8
    assert torch.allclose(kept.sum(), torch.tensor(1.0))


@pytest.mark.parametrize("kwargs, message", [
    (dict(temperature=-1.0), "temperature must be >= 0, got -1.0"),
    (dict(temperature=1.0, top_k=0), "top_k must be >= 1, got 0"),
    (dict(temperature=1.0, top_p=1.5), "top_p must be in (0, 1], got 1.5"),
])
def test_bad_sampling_values_are_input_errors(kwargs, message):
    with pytest.raises(InputError) as err:
        make_sampler(**kwargs)
    assert str(err.value) == message


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(400)


def test_streamed_text_equals_the_whole_decode(tokenizer):
    text = "Hello wörld! Ünïcode ✓ and\nnew lines\n\ntoo — 数字 123."
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    stream = IncrementalText(tokenizer)
    pieces = [stream.push(i) for i in ids] + [stream.flush()]
    assert "".join(pieces) == text
    assert all("\ufffd" not in p for p in pieces)


def test_the_chat_prompt_ends_where_the_answer_starts(tokenizer):
    ids = prompt_ids(tokenizer, "Hi", chat=True, system="Be brief.")
    text = tokenizer.decode(ids)
    assert text.startswith("<|begin|><|system|>Be brief.<|eot|><|user|>Hi<|eot|>")
    assert text.endswith("<|assistant|>") and text.count("<|begin|>") == 1
    assert prompt_ids(tokenizer, "Hi")[0] == tokenizer.bos_token_id


def test_eos_ids_come_from_every_place_a_checkpoint_declares_them(tmp_path, tokenizer):
    (tmp_path / "generation_config.json").write_text('{"eos_token_id": [128001, 128008, 128009]}')
    (tmp_path / "config.json").write_text('{"eos_token_id": 128001}')
    assert eos_ids(tmp_path, tokenizer) == [128001, 128008, 128009, tokenizer.eos_token_id]


def test_ids_past_the_tokenizer_vocabulary_are_shown_not_dropped(tokenizer):
    ids = tokenizer("Hi there", add_special_tokens=False)["input_ids"]
    stream = IncrementalText(tokenizer)
    pieces = [stream.push(i) for i in [ids[0], 5000, *ids[1:]]] + [stream.flush()]
    assert "".join(pieces) == tokenizer.decode(ids[:1]) + "[5000]" + tokenizer.decode(ids[1:])
