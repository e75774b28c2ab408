"""Claim results -> markdown (archscope.tables) or a plain text table. Pure: strings out, nothing
written."""

from __future__ import annotations

import inspect
import re
from collections import Counter

from archscope.claims.quantities import QUANTITIES
from archscope.claims.result import ClaimResult
from archscope.units import text_table

VERDICTS = ("agree", "wrong", "unverifiable")
MARK = {"agree": "agree", "wrong": "**wrong**", "unverifiable": "unverifiable"}

INTRO = """\
Every numeric and categorical claim transcribed from the documents (`reports/claims/*.yaml`),
recomputed from the model specs by `archscope check-claims`. A number agrees when the computed
value rounds to it as written: "~1.24B" within 0.005B, "8.39 MB" within 0.005 MB (1 MB = 10^6
bytes, 1 MiB = 2^20), a plain integer such as "262,668,288" exactly; a categorical claim
agrees when every part of it holds ("RoPE" agrees with Llama 3's RoPE+llama3 scaling,
"RoPE+YaRN" does not). For a wrong claim, the likely cause is the slip (a dropped factor 2, MiB
printed as MB, a tied head counted twice, a sliding window that caps nothing, ...) that turns
the computed value into the stated one, when one does. A claim archscope cannot compute (no
preset, a detail no source published) is unverifiable, never wrong. Quantities and conditions
are defined in `archscope/claims/quantities/`.
"""


def _by_document(results: list[ClaimResult]) -> dict[str, list[ClaimResult]]:
    groups: dict[str, list[ClaimResult]] = {}
    for r in sorted(results, key=lambda r: r.document):  # stable: file order within a document
        groups.setdefault(r.document, []).append(r)
    return groups


def summary_rows(results: list[ClaimResult]) -> list[dict]:
    rows = []
    for doc, claims in _by_document(results).items():
        n = Counter(r.verdict for r in claims)
        rows.append({"document": doc, "claims": len(claims), **{v: n[v] for v in VERDICTS}})
    n = Counter(r.verdict for r in results)
    rows.append({"document": "all", "claims": len(results), **{v: n[v] for v in VERDICTS}})
    return rows


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def claim_rows(claims: list[ClaimResult]) -> list[dict]:
    return [{"id": r.id, "section": r.section, "model": r.model,
             "quantity": r.quantity + (f" ({r.setting})" if r.setting else ""),
             "stated": r.stated, "computed": r.computed_text, "verdict": MARK[r.verdict],
             "likely cause": r.cause, "note": r.note} for r in claims]


def _markdown(rows: list[dict]) -> str:
    """A pipe table, with tabulate's column padding squeezed out: hundreds of rows padded to
    the longest note would make the report several times larger for no reader's benefit."""
    from archscope.tables import markdown_table

    table = markdown_table([{k: _cell(v) for k, v in row.items()} for row in rows])
    return "\n".join(re.sub(r"\|:?-+:?(?=\|)", "|---", re.sub(r" {2,}\|", " |", line))
                     for line in table.splitlines())


def claims_markdown(results: list[ClaimResult]) -> str:
    """The claims report: a summary per document, then every claim with its verdict."""
    out = ["# Claims check", "", INTRO, "## Summary", "", _markdown(summary_rows(results)), ""]
    differ = [r for r in results if r.verdict == "wrong"]
    if differ:
        out += ["## Wrong claims", "",
                "The same claims appear again, in context, in each document's table below.", "",
                _markdown([{"document": r.document, **row}
                           for r, row in zip(differ, claim_rows(differ))]), ""]
    for doc, claims in _by_document(results).items():
        n = Counter(r.verdict for r in claims)
        out += [f"## {doc}", "",
                f"{len(claims)} claims: {n['agree']} agree, {n['wrong']} wrong, "
                f"{n['unverifiable']} unverifiable.", "", _markdown(claim_rows(claims)), ""]
    return "\n".join(out)


def claims_text(results: list[ClaimResult]) -> str:
    """The terminal table: the summary, then one line per claim (no pandas import)."""
    head = ["document", "claims", *VERDICTS]
    summary = [head] + [[str(r[k]) for k in head] for r in summary_rows(results)]
    lines = text_table(summary, right={1, 2, 3, 4}, indent="")
    cols = ["id", "model", "quantity", "stated", "computed", "verdict", "likely cause"]
    rows = [cols] + [[r.id, r.model, r.quantity + (f" ({r.setting})" if r.setting else ""),
                      r.stated, r.computed_text, r.verdict, r.cause] for r in results]
    return "\n".join(lines + [""] + text_table(rows, indent="")) + "\n"


def quantities_text() -> str:
    """`check-claims --quantities`: each quantity, its unit and conditions, one line of doc."""
    rows = [["quantity", "unit", "conditions (default)", "meaning"]]
    for q in sorted(QUANTITIES.values(), key=lambda q: q.name):
        conds = ", ".join(n if d is inspect.Parameter.empty else f"{n}={d}"
                          for n, d in q.conditions.items())
        rows.append([q.name, q.dimension, conds, q.doc.split("\n")[0]])
    return "\n".join(text_table(rows, indent="")) + "\n"
