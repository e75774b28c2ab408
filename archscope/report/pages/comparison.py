"""reports/comparison.md: every preset side by side, in the tables the documents use."""

from __future__ import annotations

from archscope.report.families import family_groups, in_documents, ordered
from archscope.report.pages import comparison_arch as arch
from archscope.report.pages import comparison_cost as cost
from archscope.report.pages.markdown import GENERATED, image, page, section

INTRO = """\
Every number here is computed by archscope from the specs in `model_specs/` (one YAML file per
model, each citing its config.json or paper): nothing is copied from a document. The raw
numbers are in [data/estimates.json](data/estimates.json); one page per model is in
[models/](models/). Hand-written explainers often get these numbers wrong (a dropped factor of 2,
MB for MiB, a tied head counted twice): regenerate rather than copy."""


def conventions(records: list[dict]) -> str:
    body = "\n".join(f"- {key}: {text}." for key, text in records[0]["conventions"].items())
    return section("Conventions", body)


def families(records: list[dict]) -> str:
    """The families, each with its models: the documents' models first and in bold."""
    def link(r: dict) -> str:
        text = f"[{r['name']}](models/{r['name']}.md)"
        return f"**{text}**" if in_documents(r) else text
    lines = [f"- {family}: " + ", ".join(link(r) for r in members)
             for family, members in family_groups(records)]
    note = ("a family is the transformers model_type the spec exports as, read off its "
            "structure (never its name), and the models the explainers compare are in bold and "
            "lead every table.")
    return section("Models by family", "\n".join(lines), note)


def figures(records: list[dict], paths: dict[str, str]) -> str:
    body = "\n\n".join(image(alt, path) for alt, path in paths.items())
    kv, mla = records[0]["kv_cache"][0]["dtype"], records[0]["decode_flops"][0]["mla_convention"]
    note = (f"one panel per family with every other preset in grey: KV cache in {kv} at batch 1 "
            "(MLA's decompressed size dotted, a sliding window flattening the line), decode "
            f"FLOPs under the {mla} MLA convention, parameter shares of unique tensors (idle "
            "MoE experts hatched), each preset up to its own context.")
    return section("Figures", body, note)


def links(names: list[str], extra: dict[str, str]) -> str:
    models = ", ".join(f"[{n}](models/{n}.md)" for n in names)
    lines = [f"- Deep dives: {models}."] + [f"- [{title}]({path})" for title, path in extra.items()]
    return section("More", "\n".join(lines))


def comparison_page(records: list[dict], figure_paths: dict[str, str],
                    extra_links: dict[str, str]) -> str:
    """records: records.architecture_record merged with costs.cost_record, one per model; shown
    by family (families.ordered)."""
    records = ordered(records)
    head = f"# Architecture comparison\n\n{GENERATED}\n\n{INTRO}\n"
    return page(
        head, families(records), conventions(records),
        arch.summary(records), arch.embedding(records), arch.attention(records),
        cost.kv_elements(records), cost.kv_cache(records, 0), cost.kv_cache(records, 1),
        cost.projections(records), arch.ffn(records), arch.normalization(records),
        arch.positional(records), arch.tying(records), cost.compute(records),
        figures(records, figure_paths), links(sorted(r["name"] for r in records), extra_links))
