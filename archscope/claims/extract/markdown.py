"""Markdown -> the pieces claims are found in: tables and lines, each with its section.

Any text is read as markdown (the documents are `.txt`). A heading starts a section; a table
is a run of `|` lines with a separator row; every other non-empty line is a line, inside a
fenced block or not. Mermaid node labels (`A["RoPE<br/>(Llama, Mistral)"]`) are read as lines
of their own, since explainers put claims in diagrams. Emphasis, code spans and `$` are
stripped from cells and lines; the raw text is kept for the report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
# What is copied into every item after it (a heading into its section's lines and tables, a
# label or the line before into the next line's context) and a table cell are cut to this many
# characters: text longer than that is no heading, label or cell, and copying it whole made a
# megabyte heading cost a megabyte per line (the explainers': at most 82 in a cell, 72 in a
# heading).
PIECE_MAX = 300
_SEPARATOR = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-*:?\s*)*\|?\s*$")
_MERMAID_LABEL = re.compile(r"\[\s*\"([^\"]+)\"\s*\]|\{\s*\"([^\"]+)\"\s*\}")


def _piece(text: str) -> str:
    return text if len(text) <= PIECE_MAX else text[:PIECE_MAX - 1] + "…"


def clean(text: str) -> str:
    """Markdown emphasis, code spans, math dollars and HTML breaks out; spaces squeezed."""
    text = re.sub(r"<br\s*/?>", " ", text)
    text = text.replace("**", "").replace("`", "").replace("$", "").replace("\\,", "")
    text = re.sub(r"(?<!\w)_(\S[^_]*\S)_(?!\w)", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


@dataclass
class Table:
    section: str
    line: int  # 1-based line of the header row
    header: list[str]
    rows: list[list[str]]
    caption: str  # the heading and the lines between it and the table, for conditions


@dataclass
class Line:
    section: str
    line: int
    text: str  # cleaned
    raw: str
    context: str  # the section heading, the label line above (bold, or ending in ':'), the
    # line before
    fenced: bool = False


@dataclass
class Document:
    title: str
    tables: list[Table] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)


def _cells(row: str) -> list[str]:
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [_piece(clean(c)) for c in re.split(r"(?<!\\)\|", row)]


def parse(text: str) -> Document:
    doc = Document(title="")
    section, label, fence, previous = "", "", None, ""
    since_heading: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        raw = lines[i]
        stripped = raw.strip()
        if stripped.startswith(("```", "~~~")):
            fence = None if fence else stripped[3:].strip().lower() or "code"
            i += 1
            continue
        heading = None if fence else _HEADING.match(stripped)
        if heading:
            section = _piece(clean(heading[2]))
            doc.title = doc.title or (section if len(heading[1]) == 1 else "")
            label, since_heading, previous = "", [], ""
            i += 1
            continue
        if not fence and stripped.startswith("|") and i + 1 < len(lines) and \
                _SEPARATOR.match(lines[i + 1].strip()):
            header, rows, start = _cells(stripped), [], i + 1
            i += 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            doc.tables.append(Table(section, start, header, rows,
                                    " ".join([section, *since_heading[-3:]])))
            since_heading = []
            continue
        if stripped:
            texts = [stripped]
            if fence == "mermaid":
                texts = [a or b for a, b in _MERMAID_LABEL.findall(stripped)]
            for t in texts:
                cleaned = clean(t)
                if cleaned:
                    doc.lines.append(Line(section, i + 1, cleaned, t,
                                          f"{section} {label} {previous}", fenced=bool(fence)))
                    previous = _piece(cleaned)
            if not fence:
                since_heading.append(_piece(clean(stripped)))
                if re.match(r"^\*\*[^*]+\*\*:?\s*$", stripped) or stripped.endswith(":"):
                    label = _piece(clean(stripped))
        i += 1
    return doc
