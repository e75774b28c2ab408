"""How long `archscope check-claims` takes over a 1 MB document of each hostile shape that was
quadratic before (issue 35: 65 KB of repeated model names took minutes), beside the same
command over the seed explainers (the ordinary documents), in one run on this machine: the
ratio says how far a megabyte of hostile text is from ordinary use.

    python benchmarks/claims_megabyte.py [--json PATH]
    python benchmarks/claims_megabyte.py --json reports/data/benchmarks/claims_megabyte-cpu.json
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import command_line, cpu_name, write_json  # benchmarks/common.py

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "claims")]
from test_linear_time import SHAPES  # noqa: E402 - the shapes the tests grow

MEGABYTE = 1_000_000


def seconds(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "archscope.cli", "check-claims", str(path),
                    "--format", "json"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    seeds = Path(__file__).resolve().parent.parent.parent / "shared" / "seeds"
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        doc = Path(folder) / "doc.md"
        for shape, make in SHAPES.items():
            text = make(1)
            doc.write_text((text * (MEGABYTE // len(text) + 1))[:MEGABYTE])
            rows[shape] = seconds(doc)
            print(f"{shape:<40} {rows[shape]:6.2f} s")
    explainers = sorted(seeds.glob("*.txt")) if seeds.is_dir() else []  # ../shared/seeds
    baseline = seconds(explainers[0]) if explainers else None
    if baseline:
        print(f"{'an explainer (' + explainers[0].name + ')':<40} {baseline:6.2f} s")
        print(f"slowest megabyte / explainer: {max(rows.values()) / baseline:.1f}x")
    if args.json:
        write_json(args.json, {"command": command_line(), "cpu": cpu_name(), "bytes": MEGABYTE,
                               "seconds": rows, "explainer_seconds": baseline})


if __name__ == "__main__":
    main()
