"""claims.md's table of check-claims on the labelled corpus (tests/data/claims/): the file
benchmarks/claims_corpus.py --json writes (reports/data/benchmarks/claims_corpus.json), one row
per document: planted errors found, precision of `wrong`, false alarms, silent sentences."""

from __future__ import annotations

from archscope.report.pages.markdown import section, table

CLAIMS_CORPUS = "claims_corpus.json"
COLUMNS = [
    ("document", lambda r: r["document"], "l"),
    ("planted wrong", lambda r: str(r["planted"]), "r"),
    ("found wrong", lambda r: str(r["caught"]), "r"),
    ("recall", lambda r: f"{r['recall']:.0%}", "r"),
    ("precision", lambda r: f"{r['precision']:.0%}" if r["wrong_verdicts"] else "—", "r"),
    ("false alarms", lambda r: str(len(r["false_alarms"])), "r"),
    ("silent sentences", lambda r: f"{r['silent_sentences']} of {r['sentences']}", "r")]


def corpus_section(data: dict) -> str:
    s = data["summary"]
    note = (f"check-claims alone on {s['documents']} explainers it was not built against, each "
            f"claim labelled by hand (tests/data/claims/README.md): {s['caught']} of "
            f"{s['planted']} planted errors found wrong, {s['false_alarms']} false 'wrong' "
            f"verdicts, {s['silent_sentences']} of {s['sentences']} sentences with a model and "
            f"a number yielding no claim. `{data.get('command', '')}`.")
    return section("check-claims on a labelled corpus", table(data["rows"], COLUMNS), note)
