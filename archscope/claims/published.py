"""What a preset holds that its sources never published, and figures the sources published
besides the preset's own: a claim about the first is unverifiable (never wrong), one that
states the second agrees, with a note saying whose figure it is.

Keyed by preset name and claim quantity; each entry says why, from the preset's own header.
"""

from __future__ import annotations

# (preset, quantity) -> why the value cannot be checked
UNPUBLISHED: dict[tuple[str, str], str] = {
    ("gpt3-175b", "tie_embeddings"):
        "GPT-3's tying was never published (Brown et al. 2020 say only that the architecture is "
        "GPT-2's; the preset assumes GPT-2's tied embedding, model_specs/gpt3-175b.yaml)",
}
# (preset, quantity) -> (the published value, whose figure it is)
ALSO_PUBLISHED: dict[tuple[str, str], tuple[float, str]] = {
    ("deepseek-v2", "max_seq_len"): (
        128 * 1024, "the DeepSeek-V2 paper's 128K context (its config.json allows 163,840 "
                    "positions, the preset's max_seq_len)"),
}


def unpublished(model: str, quantity: str) -> str:
    return UNPUBLISHED.get((model, quantity), "")


def published_alternative(model: str, quantity: str, stated) -> str:
    """The note for a stated number that is a published figure other than the preset's."""
    alt = ALSO_PUBLISHED.get((model, quantity))
    if alt and (stated.agrees(alt[0]) or stated.unit == "K" and
                stated.agrees(alt[0] * 1000 / 1024)):
        return alt[1]
    return ""
