"""check-claims on the corpus of tests/data/claims/: per document, the precision and recall of
its `wrong` verdicts against the hand-labelled truth, its false alarms, and the sentences with a
model and a number that yielded no claim (README.md there defines the counting).

    python benchmarks/claims_corpus.py [--json reports/data/benchmarks/claims_corpus.json]

`python benchmarks/claims_recall.py --corpus` runs this too. A found claim's line is the first
line of the document holding its text (a table cell: its row).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "data" / "claims"

from archscope.claims.documents import check_document  # noqa: E402


def _line(lines: list[str], text: str) -> int | None:
    """The 1-based line holding `text` (its first 60 characters); a table cell's claim, whose
    text is "LABEL: CELL", on the first row holding both; None when neither is found (a row
    whose model heads it and whose label is the column's: its value's first row)."""
    needle = text.strip()[:60]
    found = next((i for i, line in enumerate(lines, 1) if needle and needle in line), None)
    if found is not None or ": " not in text:
        return found
    label, cell = (part.strip() for part in text.split(": ", 1))
    rows = [i for i, line in enumerate(lines, 1) if line.lstrip().startswith("|") and
            f" {cell} " in f" {line} "]
    return next((i for i in rows if label in lines[i - 1]), rows[0] if rows else None)


def measure(doc: Path) -> dict:
    truth = yaml.safe_load(doc.with_suffix(".truth.yaml").read_text(encoding="utf-8"))
    lines = doc.read_text(encoding="utf-8").splitlines()
    found = check_document(doc, truth.get("model_map") or None)
    planted = {(c["line"], c["model"], c["quantity"]) for c in truth["claims"]
               if c.get("truth") == "wrong"}
    wrong = [(_line(lines, r.text), r.model, r.quantity, r) for r in found if r.verdict == "wrong"]
    caught = {(line, model, quantity) for line, model, quantity, _ in wrong} & planted
    alarms = [r for line, model, quantity, r in wrong if (line, model, quantity) not in planted]
    claimed = {_line(lines, r.text) for r in found}
    silent = [n for n in truth["sentences"] if n not in claimed]
    return {"document": doc.name, "claims": len(truth["claims"]), "planted": len(planted),
            "found_claims": len(found), "wrong_verdicts": len(wrong), "caught": len(caught),
            "recall": len(caught) / len(planted) if planted else 1.0,
            "precision": (len(wrong) - len(alarms)) / len(wrong) if wrong else 1.0,
            "false_alarms": [f"{r.model} {r.quantity} {r.stated!r} ({r.text[:60]})"
                             for r in alarms],
            "missed": sorted(f"line {line}: {model} {quantity}"
                             for line, model, quantity in planted - caught),
            "sentences": len(truth["sentences"]), "silent_sentences": len(silent)}


def table(corpus: Path = CORPUS) -> dict:
    rows = [measure(doc) for doc in sorted(corpus.glob("*.md")) if doc.name != "README.md"]
    planted = sum(r["planted"] for r in rows)
    caught = sum(r["caught"] for r in rows)
    sentences = sum(r["sentences"] for r in rows)
    silent = sum(r["silent_sentences"] for r in rows)
    return {"rows": rows, "summary": {
        "documents": len(rows), "planted": planted, "caught": caught,
        "recall": caught / planted if planted else 1.0,
        "false_alarms": sum(len(r["false_alarms"]) for r in rows),
        "sentences": sentences, "silent_sentences": silent,
        "silent_share": silent / sentences if sentences else 0.0}}


def show(result: dict) -> None:
    print(f"{'document':<34} {'planted':>7} {'caught':>6} {'recall':>6} {'alarms':>6} "
          f"{'silent':>11}")
    for r in result["rows"]:
        print(f"{r['document']:<34} {r['planted']:>7} {r['caught']:>6} {r['recall']:>6.0%} "
              f"{len(r['false_alarms']):>6} {r['silent_sentences']:>4} of {r['sentences']:<4}")
    s = result["summary"]
    print(f"\nrecall of wrong {s['caught']}/{s['planted']} ({s['recall']:.0%}); false 'wrong' "
          f"verdicts {s['false_alarms']}; sentences with a model and a number that yielded no "
          f"claim {s['silent_sentences']}/{s['sentences']} ({s['silent_share']:.0%})")
    for r in result["rows"]:
        for a in r["false_alarms"]:
            print(f"  false alarm  {r['document'][:2]} {a}")
        for m in r["missed"]:
            print(f"  missed       {r['document'][:2]} {m}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the table here")
    args = parser.parse_args(argv)
    result = table()
    show(result)
    if args.json:
        from common import write_json  # benchmarks/common.py, beside this script

        write_json(args.json, {"what": "check-claims on the labelled corpus", **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
