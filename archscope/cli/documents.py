"""`archscope report` and `check-claims`: the commands that write or check documents."""

from __future__ import annotations

import sys

import click

from archscope.cli.group import cli
from archscope.cli.options import TABLE_FORMATS, _echo_json, _echo_records, format_option


@cli.command("check-claims")
@click.argument("files", nargs=-1, type=click.Path(), metavar="DOC...")
@click.option("--model-map", "model_map", multiple=True, metavar="NAME=MODEL",
              help="Read the model name NAME in a document as MODEL (a preset, a YAML spec or "
                   "a config.json); repeatable.")
@format_option(*TABLE_FORMATS, default="table")
@click.option("--strict", is_flag=True, help="Exit 1 when any claim is wrong.")
@click.option("--quantities", "list_quantities", is_flag=True,
              help="List the quantities a claim can name, with their conditions, and exit.")
def check_claims(files, model_map, fmt, strict, list_quantities):
    """Find a document's numeric and categorical claims, recompute each from the model specs,
    and mark it agree, wrong (with the computed value and the likely cause) or unverifiable.

    A DOC is any markdown text, whatever its extension: its tables (a model per row or
    column) and sentences (a model, a quantity and a number with a unit) are read by
    themselves. YAML transcriptions (archscope/claims/files.py; a folder stands for its *.yaml
    files) are checked as written and override what is found in the document they name.

    \b
    Examples:
      archscope check-claims explainer.md
      archscope check-claims notes.txt --model-map "Granite 3B=granite-3.0-2b" --format json
      archscope check-claims doc.txt reports/claims/   # with transcriptions as overrides
      archscope check-claims --quantities
      archscope check-claims explainer.md --format csv   # one row per claim, the json keys
    """
    if list_quantities:
        from archscope.claims import quantities_text

        click.echo(quantities_text(), nl=False)
        return
    if not files:
        raise click.UsageError("give at least one document or claims file (or folder)")
    from archscope.claims.documents import check_paths
    from archscope.claims.extract.names import model_map_entries

    results = check_paths(files, model_map_entries(model_map))
    if fmt in ("json", "csv"):
        _echo_records([r.row() for r in results], fmt)
    elif fmt == "markdown":
        from archscope.claims import claims_markdown

        click.echo(claims_markdown(results), nl=False)
    else:
        from archscope.claims import claims_text

        click.echo(claims_text(results), nl=False)
    if strict and any(r.verdict == "wrong" for r in results):
        sys.exit(1)


@cli.command()
@click.option("--out", type=click.Path(file_okay=False), default="reports", show_default=True,
              help="Folder to write comparison.md, models/, figures/, profiles.md, data/.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False), default=None,
              help="Profile JSON files to tabulate [default: the repository's reports/data].")
@click.option("--claims", "claims_dir", type=click.Path(file_okay=False), default=None,
              help="Claims YAML files to check into claims.md [default: the repository's "
                   "reports/claims].")
def report(out, data_dir, claims_dir):
    """Regenerate the whole reports/ tree: markdown pages, figures, estimates.json, claims.md
    and profiles.md, with their inputs (claims transcriptions, profile runs) copied alongside.

    The output is deterministic (no timestamps): the same specs and inputs give the same bytes,
    in any folder. --out is checked before anything is built; files are built in memory,
    written into a temporary folder and only then renamed into place, so a failure (a full
    disk), Ctrl-C or SIGTERM leaves --out as it was.

    \b
    Examples:
      archscope report
      archscope report --out /tmp/reports
      archscope report --out /tmp/reports --data my-runs/ --claims my-claims/
    """
    from pathlib import Path

    from archscope.writes import check_destination, write_tree_atomic

    out = check_destination(out, "--out folder")  # before any work
    from archscope.report import inputs
    from archscope.report.pages.benchmarks import load_benchmarks
    from archscope.report.pages.profiles import load_profiles
    from archscope.spec import load_spec, preset_names

    data_dir = Path(data_dir) if data_dir else inputs.default_data_dir()
    claims_dir = Path(claims_dir) if claims_dir else inputs.default_claims_dir()
    for folder, what in ((data_dir, "profiles.md has no runs"), (claims_dir, "no claims.md")):
        if not folder.is_dir():
            click.echo(f"warning: {folder} does not exist: {what}", err=True)
    # the inputs are read and checked first: a bad one is refused before the build
    profiles, benchmarks = load_profiles(data_dir), load_benchmarks(data_dir)
    copied = inputs.input_files(claims_dir, data_dir)
    claims = _claims_page(claims_dir)
    if claims is not None and "claims_corpus.json" in benchmarks:
        from archscope.report.pages.claims_corpus import corpus_section

        claims += "\n" + corpus_section(benchmarks["claims_corpus.json"])
    specs = [load_spec(name) for name in preset_names()]
    from archscope.progress import progress_bar
    from archscope.report.pages.build import build_reports, progress_units

    with progress_bar("report", 1 + progress_units(len(specs))) as tick:
        families = coverage_record()  # imports transformers: seconds
        tick("families")
        files = build_reports(specs, profiles, claims, progress=tick, benchmarks=benchmarks,
                              families=families)
    files.update(copied)
    write_tree_atomic(out, files, what="--out folder")  # all files, or none of them
    click.echo(f"wrote {len(files)} files under {out}", err=True)


def coverage_record() -> dict:
    """{"transformers": its version, "rows": one dict per model_type} (spec/coverage.py)."""
    from dataclasses import asdict

    import transformers

    from archscope.spec.coverage import coverage

    return {"transformers": transformers.__version__, "rows": [asdict(r) for r in coverage()]}


@cli.command()
@format_option(*TABLE_FORMATS)
def families(fmt):
    """Every model_type the installed transformers builds as a causal LM, and what archscope
    makes of it: read exactly, read without weights, refused (naming the key and the component
    it lacks), or not read. (Imports transformers' model mapping: a few seconds.)

    \b
    Examples:
      archscope families
      archscope families --format json
      archscope families --format csv      # one row per model_type
    """
    from archscope.report.pages.families import families_page, families_text

    record = coverage_record()
    if fmt == "json":
        _echo_json(record)
    elif fmt == "csv":
        _echo_records(record["rows"], fmt)
    elif fmt == "markdown":
        click.echo(families_page(record["rows"], record["transformers"]), nl=False)
    else:
        click.echo(families_text(record["rows"]), nl=False)


def _claims_page(folder) -> str | None:
    """claims.md from the claims files in `folder` (None when there are none)."""
    if not folder.is_dir() or not any(folder.glob("*.yaml")):
        return None
    from archscope.claims import check_claim_files, claims_markdown

    return claims_markdown(check_claim_files([folder]))
