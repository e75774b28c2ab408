"""reports/families.md and `archscope families`: every model_type the installed transformers
builds as a causal LM (and the wrappers archscope adds), with what archscope makes of it
(archscope/spec/coverage.py). Pure: rows in, markdown or text out."""

from __future__ import annotations

from collections import Counter

from tabulate import tabulate

from archscope.report.pages.markdown import GENERATED, page, section, table

STATUSES = ("read exactly", "read without weights", "refused", "not read")
COLUMNS = [("model_type", lambda r: f"`{r['model_type']}`", "l"),
           ("transformers class", lambda r: r["hf_class"], "l"),
           ("archscope", lambda r: r["status"], "l"),
           ("what it is, or what archscope lacks", lambda r: r["detail"], "l")]


def summary(rows: list[dict]) -> str:
    counts = Counter(r["status"] for r in rows)
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) + f" ({len(rows)} in all)"


def families_page(rows: list[dict], transformers_version: str) -> str:
    note = (f"transformers {transformers_version}: every model_type it maps to a causal-LM "
            "class, with the multimodal wrappers and aliases archscope reads. Status at "
            "transformers' own default config: read exactly (a family module reads it and its "
            "weight names load checkpoints), read without weights, refused (naming the key and "
            "the component archscope lacks), not read (no family module: `archscope show` of "
            "such a config.json counts its parameters with transformers' class on the meta "
            "device, and derives nothing else). Families are archscope/spec/families/*.py.")
    head = f"# Families archscope reads\n\n{GENERATED}\n\n{summary(rows)}.\n"
    return page(head, section("Every causal LM of transformers", table(rows, COLUMNS), note))


def families_text(rows: list[dict]) -> str:
    body = tabulate([[r["model_type"], r["status"], r["detail"][:90]] for r in rows],
                    ["model_type", "archscope", "what it is, or what archscope lacks"],
                    tablefmt="simple", disable_numparse=True)
    return f"{body}\n\n{summary(rows)}\n"
