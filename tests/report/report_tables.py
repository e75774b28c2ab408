"""Read the generated markdown back: tables as rows, links, mermaid blocks."""

from __future__ import annotations

import re
from pathlib import Path

IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)#]+)\)")
MERMAID = re.compile(r"```mermaid\n(.*?)```", re.S)

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "reports"


def generated_files(root: Path) -> set[str]:
    """What `archscope report` writes (not its inputs, claims/*.yaml and profile JSON files)."""
    patterns = ("*.md", "models/*.md", "figures/*.png", "figures/models/*.png",
                "data/estimates.json")
    return {p.relative_to(root).as_posix() for pattern in patterns for p in root.glob(pattern)}


def table_rows(markdown: str, heading: str) -> list[dict]:
    """The rows of the first table under `## heading`, as {column title: cell text}."""
    lines = markdown.split(f"## {heading}\n", 1)[1].splitlines()
    rows = [line for line in lines if line.startswith("|")]
    block = []
    for line in lines[lines.index(rows[0]):]:
        if not line.startswith("|"):
            break
        block.append([cell.strip() for cell in line.strip("|").split(" | ")])
    header, body = block[0], block[2:]
    return [dict(zip(header, cells)) for cells in body]


def row_of(rows: list[dict], model: str) -> dict:
    return next(r for r in rows if r["model"] == model)


NODE = re.compile(r"^\s+(\w+)(\[\(|\(\(|\[)\"")
EDGE = re.compile(r"^\s+(\w+) (-->|-\.->)(\|\"[^\"]*\"\|)? (\w+)$")


def mermaid_problems(source: str) -> list[str]:
    """Structural checks of a generated flowchart: every edge joins declared nodes, subgraphs
    close, labels are quoted. (Not a full mermaid parser; the generator emits only these forms.)"""
    lines = source.rstrip("\n").split("\n")
    problems = [] if lines[0] == "flowchart TD" else [f"first line {lines[0]!r}"]
    nodes, depth = set(), 0
    for line in lines[1:]:
        if line.strip().startswith("subgraph "):
            depth += 1
        elif line.strip() == "end":
            depth -= 1
        elif m := NODE.match(line):
            nodes.add(m[1])
        elif m := EDGE.match(line):
            problems += [f"undeclared node {n!r} in {line.strip()!r}" for n in (m[1], m[4])
                         if n not in nodes]
        else:
            problems.append(f"unexpected line {line!r}")
    if depth:
        problems.append("unbalanced subgraph/end")
    return problems
