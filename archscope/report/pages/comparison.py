"""reports/comparison.md: every preset side by side, in the tables the documents use."""

from __future__ import annotations

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


def figures(records: list[dict], paths: dict[str, str]) -> str:
    body = "\n\n".join(image(alt, path) for alt, path in paths.items())
    kv, mla = records[0]["kv_cache"][0]["dtype"], records[0]["decode_flops"][0]["mla_convention"]
    note = (f"KV cache in {kv}, batch 1, each preset up to its own context; a sliding window caps "
            "the cache (flat line), MLA's cached latent is drawn beside its decompressed size "
            f"(dotted). FLOPs: decode step, {mla} MLA convention. Parameter shares of unique "
            "tensors, MoE experts that a token does not use hatched.")
    return section("Figures", body, note)


def links(names: list[str], extra: dict[str, str]) -> str:
    models = ", ".join(f"[{n}](models/{n}.md)" for n in names)
    lines = [f"- Deep dives: {models}."] + [f"- [{title}]({path})" for title, path in extra.items()]
    return section("More", "\n".join(lines))


def comparison_page(records: list[dict], figure_paths: dict[str, str],
                    extra_links: dict[str, str]) -> str:
    """records: records.architecture_record merged with costs.cost_record, one per model."""
    head = f"# Architecture comparison\n\n{GENERATED}\n\n{INTRO}\n"
    return page(
        head, conventions(records),
        arch.summary(records), arch.embedding(records), arch.attention(records),
        cost.kv_elements(records), cost.kv_cache(records, 0), cost.kv_cache(records, 1),
        cost.projections(records), arch.ffn(records), arch.normalization(records),
        arch.positional(records), arch.tying(records), cost.compute(records),
        figures(records, figure_paths), links([r["name"] for r in records], extra_links))
