"""Everything `archscope report` writes, as {relative path: bytes}. Nothing is written here.

The CLI writes the mapping (atomically); the tests regenerate it and compare it byte for byte
with the committed reports/. Determinism: models in name order, dicts built in a fixed order,
JSON with sorted keys, fixed float formats, PNGs without timestamps or software metadata.
"""

from __future__ import annotations

import json
from typing import Callable, Iterable

from archscope.report.pages.benchmarks import benchmark_sections
from archscope.report.pages.comparison import comparison_page
from archscope.report.costs import (DIVE_LENGTHS, below_context, cache_sum, cost_record,
                                    details_record, report_record)
from archscope.report.dive_explain import explain_record
from archscope.report.document_records import document_records
from archscope.report.pages.deep_dive import deep_dive_page
from archscope.report.pages.documents import documents_page
from archscope.report.pages.families import families_page
from archscope.report.pages.deployment import SETUPS, deployment_section
from archscope.report.pages.markdown import GENERATED, page
from archscope.report.figure_set import PATHS, all_figures
from archscope.report.figures_model import path as model_figure_path
from archscope.report.pages.profiles import profiles_page
from archscope.estimate.structure import layer_module_rows
from archscope.report.records import architecture_record, module_groups, structure_groups
from archscope.spec.schema import ModelSpec

ESTIMATES = "data/estimates.json"
DEPLOYMENT = "data/deployment.json"
DOCUMENTS = "data/documents.json"
FAMILIES = "data/families.json"
Progress = Callable[[str], None]


def model_records(specs: Iterable[ModelSpec]) -> list[dict]:
    """Architecture facts and costs of each model, in name order (the comparison's rows)."""
    ordered = sorted(specs, key=lambda s: s.name)
    return [{**architecture_record(s), **cost_record(s, report_record(s))} for s in ordered]


def dive_record(spec: ModelSpec, modules: dict) -> dict:
    """The deep dive's numbers: its record's details at the usual contexts, and its structure."""
    record = report_record(spec)
    details = details_record(spec, record, below_context(spec, DIVE_LENGTHS))
    groups = module_groups(modules)
    return {**details, "cache_sum": cache_sum(record), "structure": structure_groups(spec),
            "modules": groups,
            "explain": explain_record(spec, groups)}


def estimates_json(records: list[dict], dives: dict[str, dict]) -> str:
    models = {r["name"]: {**r, "deep_dive": dives[r["name"]]} for r in records}
    data = {"conventions": records[0]["conventions"], "models": models}
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def deployment_files(specs: list[ModelSpec]) -> tuple[str, str]:
    """deployment.md and its data: the setups whose model is among `specs` (`archscope fit`)."""
    names = {s.name for s in specs}
    section_text, data = deployment_section([s for s in SETUPS if s[0] in names])
    head = f"# Deployment on common GPUs\n\n{GENERATED}\n\nWhat `archscope fit` answers for a few common setups.\n"
    return page(head, section_text), json.dumps(data, indent=1, sort_keys=True) + "\n"


def progress_units(n_models: int) -> int:
    """How many times `build_reports` calls its progress callback: the estimates, each model's
    deep dive, the pages, then each figure (the shared ones and one per model)."""
    return 1 + n_models + 1 + len(PATHS) + n_models


def build_reports(specs: Iterable[ModelSpec], profiles: list[dict],
                  claims_page: str | None = None, progress: Progress | None = None,
                  benchmarks: dict[str, dict] | None = None,
                  families: dict | None = None) -> dict[str, bytes]:
    """The report files. `profiles`: profiles.load_profiles records; `claims_page`: the rendered
    claims check (claims.md), or None to leave it out; `benchmarks`: benchmarks.load_benchmarks;
    `families`: {"transformers": version, "rows": coverage rows} for families.md, or None."""
    tick = progress or (lambda _label: None)
    specs = sorted(specs, key=lambda s: s.name)
    records = model_records(specs)
    tick("estimates")
    dives = {}
    for spec in specs:
        dives[spec.name] = dive_record(spec, layer_module_rows(spec))
        tick(spec.name)
    extra = {"The explainers' tables, regenerated": "documents.md", "Measured profiles": "profiles.md", "Deployment on common GPUs": "deployment.md"}
    if claims_page is not None:
        extra["Claims check of the explainers"] = "claims.md"
    if families is not None:
        extra["Families archscope reads"] = "families.md"
    text = {"comparison.md": comparison_page(records, PATHS, extra),
            "profiles.md": profiles_page(profiles, benchmark_sections(benchmarks or {})),
            ESTIMATES: estimates_json(records, dives)}
    text["deployment.md"], text[DEPLOYMENT] = deployment_files(specs)
    docs = document_records({s.name: s for s in specs})
    text["documents.md"] = documents_page(records, docs)
    text[DOCUMENTS] = json.dumps(docs, indent=1, sort_keys=True) + "\n"
    for spec, record in zip(specs, records):
        text[f"models/{spec.name}.md"] = deep_dive_page(spec, record, dives[spec.name],
                                                        model_figure_path(spec.name))
    if claims_page is not None:
        text["claims.md"] = claims_page
    if families is not None:
        text["families.md"] = families_page(families["rows"], families["transformers"])
        text[FAMILIES] = json.dumps(families, indent=1, sort_keys=True) + "\n"
    files = {path: body.encode("utf-8") for path, body in text.items()}
    tick("pages")
    files.update(all_figures(records, tick))
    return dict(sorted(files.items()))
