"""Active parameters under the conventions model cards use (issue 32).

archscope's `params_active` counts every lookup table and the head. The vendors' cards do not:
- OpenAI's gpt-oss model card counts the unembedding but not the embedding: 3.61B active for
  gpt-oss-20b, 5.13B for gpt-oss-120b (openai.com "gpt-oss-120b & gpt-oss-20b Model Card",
  table of parameter counts);
- DeepSeek-V3's report gives 37B activated; its checkpoint-level count without embeddings is
  the 36.6B the issue quotes (the embedding table left out, the head kept);
- GLM-4.5's card states 32B active (GLM-4.5) and 12B (GLM-4.5-Air), embeddings and head out.
"""

from __future__ import annotations

import pytest

from archscope.estimate import count_params
from archscope.spec import load_spec


# (preset, convention, the card's figure, the figure's rounding: half a unit of its last digit)
@pytest.mark.parametrize("name, convention, stated, rounding", [
    ("gpt-oss-20b", "active_without_input_embedding", 3.61e9, 0.005e9),
    ("gpt-oss-120b", "active_without_input_embedding", 5.13e9, 0.005e9),
    ("deepseek-v3", "active_without_input_embedding", 36.6e9, 0.05e9),
    ("glm-4.5", "active_without_embeddings_or_head", 32e9, 0.5e9),
    ("glm-4.5-air", "active_without_embeddings_or_head", 12e9, 0.5e9),
])
def test_each_card_convention_gives_the_card_figure(name, convention, stated, rounding):
    params = count_params(load_spec(name))
    assert abs(getattr(params, convention) - stated) <= rounding
    assert params.active > stated * 1.01  # archscope's own count includes what the card leaves out


# every preset naming its card's convention: the figure the card states (its citation is in the
# preset's header), to the card's precision
CARDS = {"gpt-oss-20b": (3.61e9, 0.005e9), "gpt-oss-120b": (5.13e9, 0.005e9),
         "deepseek-v3": (37e9, 0.5e9), "glm-4.5": (32e9, 0.5e9), "glm-4.5-air": (12e9, 0.5e9),
         "mixtral-8x7b": (12.9e9, 0.05e9), "llama-4-scout": (17e9, 0.5e9),
         "kimi-k2": (32e9, 0.5e9)}


def test_every_named_convention_gives_the_card_figure_and_the_others_do_not(run_cli):
    import json

    from archscope.spec import preset_names

    named = {n for n in preset_names() if load_spec(n).active_convention}
    assert named == set(CARDS)
    for name, (stated, rounding) in CARDS.items():
        spec = load_spec(name)
        params = count_params(spec)
        conventions = ("with_embeddings", "without_input_embedding",
                       "without_embeddings_or_head")
        matches = {c for c in conventions if abs(params.active_under(c) - stated) <= rounding}
        assert matches == {spec.active_convention}, (name, matches)
        row = json.loads(run_cli("compare", name, "--format", "json")[1])[0]
        assert (row["active_convention"], row["params_active_card"]) == (
            spec.active_convention, params.active_under(spec.active_convention))


def test_the_conventions_by_hand():
    """An untied model drops its token table, then its head; a tied one keeps the shared table
    as the unembedding under OpenAI's convention and drops it once under GLM's."""
    untied = count_params(load_spec("llama-3.1-8b"))
    table = 128_256 * 4_096
    assert untied.active_without_input_embedding == untied.active - table
    assert untied.active_without_embeddings_or_head == untied.active - 2 * table
    tied = count_params(load_spec("llama-3.2-1b"))
    table = 128_256 * 2_048
    assert tied.active_without_input_embedding == tied.active
    assert tied.active_without_embeddings_or_head == tied.active - table


def test_compare_json_carries_every_convention(run_cli):
    import json

    code, out, _ = run_cli("compare", "gpt-oss-20b", "--format", "json")
    row = json.loads(out)[0]
    params = count_params(load_spec("gpt-oss-20b"))
    assert code == 0 and (row["params_active"], row["params_active_without_input_embedding"],
                          row["params_active_without_embeddings_or_head"]) == (
        params.active, params.active_without_input_embedding,
        params.active_without_embeddings_or_head)
