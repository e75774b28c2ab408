"""reports/comparison.md: every preset side by side, in the tables the documents use."""

from __future__ import annotations

from archscope.report import comparison_arch as arch
from archscope.report import comparison_cost as cost
from archscope.report.costs import CONVENTIONS
from archscope.report.markdown import GENERATED, image, page, section

INTRO = """\
Every number here is computed by archscope from the specs in `model_specs/` (one YAML file per
model, each citing its config.json or paper): nothing is copied from a document. The raw
numbers are in [data/estimates.json](data/estimates.json); one page per model is in
[models/](models/). Hand-written explainers often get these numbers wrong (a dropped factor of 2,
MB for MiB, a tied head counted twice): regenerate rather than copy."""


def conventions() -> str:
    body = "\n".join(f"- {key}: {text}." for key, text in CONVENTIONS.items())
    return section("Conventions", body)


def figures(paths: dict[str, str]) -> str:
    body = "\n\n".join(image(alt, path) for alt, path in paths.items())
    note = ("KV cache in fp16, batch 1, each preset up to its own context; a sliding window caps "
            "the cache (flat line), MLA's cached latent is drawn beside its decompressed size "
            "(dotted). FLOPs: decode step, naive MLA convention. Parameter shares of unique "
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
        head, conventions(),
        arch.summary(records), arch.embedding(records), arch.attention(records),
        cost.kv_elements(records), cost.kv_cache(records, 0), cost.kv_cache(records, 1),
        cost.projections(records), arch.ffn(records), arch.normalization(records),
        arch.positional(records), arch.tying(records), cost.compute(records),
        figures(figure_paths), links([r["name"] for r in records], extra_links))
