"""One regeneration of the reports per test session (it builds every preset on meta: seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archscope.cli import main


@pytest.fixture(scope="session")
def regenerated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reports")
    main(["report", "--out", str(out)])  # the inputs default to the repository's reports/
    return out
