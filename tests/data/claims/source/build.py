"""Build the corpus from its annotated sources: source/NAME.md.in -> NAME.md + NAME.truth.yaml.

A source is the document with each claim written as a marker in place of its number:

    [[stated ## model ## quantity ## conditions ## flags]]

stated is the text the document shows; conditions are k=v pairs joined by "," (seq_len=32768,
dtype=fp16); flags, joined by ",", are: wrong (a planted error), loose (right to a human but
not to its last digit: a truncated or the card's rounded figure), unsupported (no registry
quantity: not checked against archscope), note=... (free text, last). The marker
[[#]] marks a line that has a model and a number but no claim worth checking.

Every claim is checked against archscope itself (archscope.claims.check.check_claim, the
function `check-claims` uses for a transcription): a right claim must agree (loose ones: be
within 5%), a wrong one must be wrong by more than 10% (counts: any difference). The build
stops on any claim that breaks this, so the truth files cannot drift from archscope silently.

Run from the repository root: PYTHONPATH=$PWD python tests/data/claims/source/build.py
(--check: exit 1 if a generated file differs from what the sources build now; NAME parts:
build only the sources whose names contain them).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

from archscope.claims.check import check_claim
from archscope.claims.quantities import get_quantity
from archscope.claims.stated import parse_stated

HERE = Path(__file__).resolve().parent
OUT = HERE.parent
MARK = re.compile(r"\[\[(.*?)\]\]")
DIMENSION_UNIT = {"params": "params", "bytes": "bytes", "elements": "elements", "count": "count",
                  "ratio": "x", "percent": "%", "FLOPs": "FLOPs", "number": "number"}
COUNTS = ("count",)


def _value(text):
    text = text.strip()
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _card_active(model):
    """show's record.params_active_card: active parameters under the card's convention."""
    from archscope.estimate import model_record
    from archscope.spec import load_spec
    record = model_record(load_spec(model))
    convention = record.spec.active_convention
    assert convention, f"{model} names no card convention (spec.active_convention)"
    return record.params.active_under(convention)


def _num(x):
    return int(x) if float(x).is_integer() else x


def command(model, quantity, cond):
    """The archscope command whose JSON shows the value."""
    c = dict(cond)
    if quantity in ("kv_cache_bytes", "kv_cache_bytes_per_layer", "kv_bytes_per_token"):
        parts = [f"archscope show {model}"]
        if "seq_len" in c:
            parts.append(f"--seq-len {c['seq_len']}")
        if "batch" in c:
            parts.append(f"--batch {c['batch']}")
        parts.append(f"--kv-dtype {c.get('dtype', 'bf16')} --format json")
        key = {"kv_cache_bytes": "record.kv_cache_bytes",
               "kv_bytes_per_token": "record.kv_cache_bytes_per_token",
               "kv_cache_bytes_per_layer": "details.kv_cache.at_lengths[seq_len].per_layer[the "
                                           "layer's group].bytes"}[quantity]
        return " ".join(parts) + f"  ({key})"
    if quantity == "weights_bytes":
        return f"archscope show {model} --dtype {c['dtype']} --format json  (record.weights_bytes)"
    if quantity in ("params_total", "params_active", "params_embedding"):
        return f"archscope show {model} --format json  ({quantity})"
    fields = {"n_layers": "spec.n_layers", "vocab_size": "spec.vocab_size",
              "d_model": "spec.d_model", "max_seq_len": "spec.max_seq_len",
              "rope_theta": "spec.position.theta"}
    if quantity in fields:
        return f"archscope show {model} --format json  ({fields[quantity]})"
    return (f"archscope show {model}  (the check-claims quantity {quantity}"
            + (f" at {c}" if c else "") + ")")


def build(src: Path) -> tuple[dict, dict]:
    """src -> ({path: text} to write, counts); raises AssertionError on a claim that fails."""
    name = src.name[:-len(".md.in")]
    prefix = name.split("_")[0]
    lines_out, claims, sentences = [], [], set()
    n = 0
    for lineno, line in enumerate(src.read_text().split("\n"), 1):
        def sub(m):
            nonlocal n
            body = m.group(1)
            if body.strip() == "#":
                sentences.add(lineno)
                return ""
            fields = [f.strip() for f in body.split("##")]
            fields += [""] * (5 - len(fields))
            stated, model, quantity, conds, flags = fields[:5]
            cond = {}
            for kv in filter(None, (p.strip() for p in conds.split(","))):
                k, v = kv.split("=", 1)
                cond[k.strip()] = _value(v)
            flag, note = set(), ""
            if "note=" in flags:
                flags, note = flags.split("note=", 1)
            flag = {f.strip() for f in flags.split(",") if f.strip()}
            what_if = [f[4:].strip() for f in flag if f.startswith("set=")]
            flag -= {f for f in flag if f.startswith("set=")}
            bad = flag - {"wrong", "loose", "unsupported", "card"}
            assert not bad, (src, lineno, bad)
            for one in model.split("+"):  # "Both have ...": one claim per model
                n += 1
                claims.append(dict(lineno=lineno, stated=stated, model=one.strip(),
                                   quantity=quantity, cond=cond, flag=flag, note=note.strip(),
                                   n=n, what_if=what_if))
            sentences.add(lineno)
            return stated
        lines_out.append(MARK.sub(sub, line))
    text = "\n".join(lines_out)
    assert "[[" not in text and "##" not in text.replace("## ", ""), src
    files = {OUT / f"{name}.md": text}

    entries, counts = [], dict(right=0, wrong=0, loose=0, unsupported=0)
    for c in claims:
        e = dict(id=f"{prefix}-{c['n']:02d}", line=c["lineno"], model=c["model"],
                 quantity=c["quantity"], stated=c["stated"])
        where = f"{src.name}:{c['lineno']} {c['stated']!r} {c['model']} {c['quantity']}"
        if "unsupported" in c["flag"]:
            e["unsupported"] = True
            try:
                e["value"] = _num(parse_stated(c["stated"]).low)
            except Exception:
                pass
            if c["cond"]:
                e["conditions"] = c["cond"]
            e["truth"] = "wrong" if "wrong" in c["flag"] else "right"
            if c["note"]:
                e["note"] = c["note"]
            counts["unsupported"] += 1
            entries.append(e)
            continue
        q = get_quantity(c["quantity"])
        categorical = q.dimension in ("category", "bool")
        claim = dict(id="x", document=name, section="s", model=c["model"],
                     quantity=c["quantity"], stated=c["stated"])
        if c["cond"]:
            claim["conditions"] = c["cond"]
        if c["what_if"]:
            claim["set"] = e["set"] = c["what_if"]
        if not categorical:
            st = parse_stated(c["stated"], DIMENSION_UNIT.get(q.dimension, ""))
            unit = st.unit if st.unit and st.unit not in ("K", "M", "B", "T") else \
                DIMENSION_UNIT.get(q.dimension, "")
            claim["unit"] = unit
            e["unit"] = unit
            value = st.low
            e["value"] = int(value) if float(value).is_integer() else value
        if c["cond"]:
            e["conditions"] = c["cond"]
        r = check_claim(claim, Path("corpus.yaml"))
        computed = r.computed
        wrong = "wrong" in c["flag"]
        if categorical:
            ok = (r.verdict == "wrong") if wrong else (r.verdict == "agree")
            assert ok, (where, r.verdict, r.computed_text)
        else:
            comp = float(computed)
            rel = abs(e["value"] - comp) / max(abs(comp), 1e-300)
            if wrong:
                big = rel > 0.10 or (q.dimension in COUNTS and e["value"] != comp)
                assert r.verdict == "wrong" and big, (where, "planted error too small", rel,
                                                      r.computed_text)
            elif "card" in c["flag"]:
                card = _card_active(c["model"])
                # the card's count; check-claims may also agree with archscope's own
                assert parse_stated(c["stated"]).contains(card), (
                    where, "not the card's active count", card)
            elif "loose" in c["flag"]:
                # right to a reader: check-claims may agree (within a unit of the last digit:
                # "262M", "7.3B") or not, but the figure is never more than 5% off
                assert rel <= 0.05, (where, "loose figure too far", rel, r.computed_text)
            else:
                assert r.verdict == "agree", (where, r.verdict, r.computed_text, r.note)
        e["truth"] = "wrong" if wrong else "right"
        if not wrong:
            e["rounding"] = "loose" if "loose" in c["flag"] else "card" if "card" in c["flag"] else (
                "exact" if categorical or float(computed) == e["value"] else "rounded")
        if "card" in c["flag"]:
            e["correct"] = _card_active(c["model"])
            e["command"] = (f"archscope show {c['model']} --format json  (record.params_active_card, "
                            f"the card's convention: record.active_convention)")
        elif wrong or "loose" in c["flag"]:
            e["correct"] = computed
            e["correct_text"] = r.computed_text
            e["command"] = command(c["model"], c["quantity"], c["cond"])
        if c["note"]:
            e["note"] = c["note"]
        counts["wrong" if wrong else "loose" if {"loose", "card"} & c["flag"] else "right"] += 1
        entries.append(e)

    header = (f"# Truth for {name}.md (built by source/build.py from source/{src.name}; "
              f"do not edit by hand).\n# Format: README.md in this folder.\n")
    mm = re.search(r"<!-- model map: (.*?) -->", text)
    model_map = dict(re.findall(r'--model-map "([^"=]+)=([^"]+)"', mm.group(1))) if mm else {}
    doc = dict(document=f"{name}.md", model_map=model_map,
               models=sorted({c["model"] for c in claims}),
               sentences=sorted(sentences), claims=entries)
    files[OUT / f"{name}.truth.yaml"] = (
        header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100))
    return files, counts


def stale() -> list[str]:
    """Generated files that differ from what the sources build now (the test's check)."""
    out = []
    for src in sorted(HERE.glob("*.md.in")):
        files, _ = build(src)
        out += [p.name for p, text in files.items()
                if not p.exists() or p.read_text() != text]
    return out


def main(argv):
    check = "--check" in argv
    argv = [a for a in argv if a != "--check"]
    if check:
        bad = stale()
        print("stale: " + ", ".join(bad) if bad else "up to date")
        sys.exit(1 if bad else 0)
    srcs = sorted(HERE.glob("*.md.in"))
    if argv:
        srcs = [s for s in srcs if any(a in s.name for a in argv)]
    total = dict(right=0, wrong=0, loose=0, unsupported=0)
    for src in srcs:
        files, counts = build(src)
        for path, text in files.items():
            path.write_text(text)
        print(f"{src.name}: {counts}")
        for k in total:
            total[k] += counts[k]
    print("total", total)


if __name__ == "__main__":
    main(sys.argv[1:])
