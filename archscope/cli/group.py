"""The click group every command registers on."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="archscope")
def cli():
    """Analyse and compare decoder-only LLM architectures.

    MODEL is a preset name (see `archscope list`), a YAML spec file, or an HF config.json
    (or the folder holding it).

    \b
    Examples:
      archscope list
      archscope show llama-3.2-1b --verify
      archscope show path/to/config.json --format json
    """
    from archscope.units import DECIMAL, set_byte_units

    # every command starts in GB: a command's --units (parsed after this) changes it, and one
    # process running several commands (tests, notebooks) carries none over
    set_byte_units(DECIMAL)
