"""The `archscope` command line: parses, calls the library, renders. Nothing else lives here.

One module per family of commands: models.py (list, show, compare), runs.py (profile, generate,
make-checkpoint), documents.py (report, check-claims); options.py holds the options they share.
Exit codes: 0 success, 2 usage or bad input (one-paragraph message, no traceback), 1 anything
unexpected.
"""

from __future__ import annotations

import sys

import click

from archscope.cli import documents, models, runs  # noqa: F401  (each registers its commands)
from archscope.cli.group import cli
from archscope.errors import InputError

EXIT_BAD_INPUT = 2


def main(argv=None) -> None:
    """Console entry point: bad input exits 2 with its message, never a traceback."""
    try:
        cli.main(args=argv, prog_name="archscope", standalone_mode=False)
    except InputError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)


__all__ = ["cli", "main", "EXIT_BAD_INPUT"]
