"""The report's deployment section: pure (markdown + its data), one row per setup."""

from __future__ import annotations

from archscope.report.pages.deployment import SETUPS, deployment_section


def test_the_section_renders_every_setup_from_its_data():
    text, data = deployment_section()
    assert text.startswith("## Deployment") and len(data["setups"]) == len(SETUPS)
    for row in data["setups"]:
        assert row["model"] in text and isinstance(row["weights_bytes_per_gpu"], int)
    llama = data["setups"][0]  # llama-3.1-8b bf16 on one h100-sxm at 8,192: the hand case
    assert (llama["weights_bytes_per_gpu"], llama["max_concurrent_sequences"]) == \
        (16_060_522_496, 52)
    assert deployment_section() == (text, data)  # deterministic
