"""How much of the transcribed claims check `check-claims DOC.md` finds by itself.

    python benchmarks/claims_recall.py [SEEDS_DIR] [CLAIMS_DIR]
    python benchmarks/claims_recall.py --corpus [--json FILE]   # benchmarks/claims_corpus.py

Runs the transcriptions (reports/claims/*.yaml) and the extraction on the documents alone
(SEEDS_DIR, default ../shared/seeds), and prints: the transcriptions' wrong claims, how many
of them the extraction also finds wrong (same document, model and quantity, the same number),
and the extraction's "wrong" verdicts that no transcribed wrong claim matches, each listed for
review (a real mistake the transcriptions missed, or a false "wrong").
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archscope.claims import check_claim_files  # noqa: E402
from archscope.claims.documents import _key, check_paths  # noqa: E402

SAME = {"attention_variant": "attention_type", "norm": "norm_position",
        "kv_elements_per_token_mha": "kv_elements_per_token_per_layer"}


def _match(r):
    model, quantity, *stated = _key(r)
    quantity = SAME.get(quantity, quantity)
    categorical = isinstance(r.computed, str)
    return r.document, model, quantity, () if categorical else tuple(stated)


def measure(seeds: Path, claims: Path) -> dict:
    transcribed = check_claim_files([claims])
    found = check_paths(sorted(seeds.glob("*.txt")))
    wrong_t = [r for r in transcribed if r.verdict == "wrong"]
    wrong_f = [r for r in found if r.verdict == "wrong"]
    # One to one: each statement found wrong stands for one transcribed wrong claim.
    pool = Counter(_match(r) for r in wrong_f)
    hit, missed = [], []
    for r in wrong_t:
        (hit if pool[_match(r)] > 0 else missed).append(r)
        pool[_match(r)] -= 1
    t_keys = {_match(r) for r in wrong_t}
    agree_keys = {_match(r) for r in transcribed if r.verdict == "agree"}
    return {"transcribed_wrong": wrong_t, "found": hit, "missed": missed,
            "extra_wrong": [r for r in wrong_f if _match(r) not in t_keys],
            "against_agree": [r for r in wrong_f if _match(r) in agree_keys],
            "found_claims": found}


def main(argv) -> None:
    if argv[:1] == ["--corpus"]:  # the labelled corpus of tests/data/claims/ instead
        import claims_corpus  # benchmarks/claims_corpus.py, beside this script

        claims_corpus.main(argv[1:])
        return
    seeds = Path(argv[0]) if argv else ROOT.parent / "shared" / "seeds"
    claims = Path(argv[1]) if len(argv) > 1 else ROOT / "reports" / "claims"
    m = measure(seeds, claims)
    n, k = len(m["transcribed_wrong"]), len(m["found"])
    verdicts = {v: sum(r.verdict == v for r in m["found_claims"])
                for v in ("agree", "wrong", "unverifiable")}
    print(f"extraction alone: {len(m['found_claims'])} claims {verdicts}")
    print(f"transcribed wrong claims: {n}; found wrong by extraction: {k} ({k / n:.0%})")
    print(f"extraction's wrong verdicts matching no transcribed wrong claim: "
          f"{len(m['extra_wrong'])} (of which on a transcribed agree: {len(m['against_agree'])})")
    for title, rows in (("missed", m["missed"]), ("extra wrong", m["extra_wrong"])):
        for r in rows:
            print(f"  {title}: {r.document[:3]} {r.model} {r.quantity} {r.stated!r} "
                  f"-> {r.computed_text} | {r.text[:70]}")


if __name__ == "__main__":
    main(sys.argv[1:])
