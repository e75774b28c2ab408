"""The `archscope` command line: parses, calls the library, renders. Nothing else lives here.

One module per family of commands: models.py (list, show, compare), runs.py (profile, generate,
make-checkpoint), documents.py (report, check-claims), hardware.py (hardware), fit.py (fit),
sweep.py (sweep), sharded.py (plan, profile --tp/--ep); options.py holds
the options they share.
Exit codes: 0 success, 2 usage or bad input (one-paragraph message, no traceback), 1 anything
unexpected.
"""

from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager

import click

from archscope.cli import (documents, fit, hardware, models, runs,  # noqa: F401
                           sharded, sweep)  # (register commands)
from archscope.cli.group import cli
from archscope.errors import InputError

EXIT_BAD_INPUT = 2


@contextmanager
def _notes():
    """Print the library's notes (a config.json key that took transformers' default) as
    `note: ...` lines on stderr; other warnings keep Python's format."""
    from archscope.spec.hf_import import DefaultedKeyWarning

    shown = warnings.showwarning

    def show(message, category, *args, **kwargs):
        if issubclass(category, DefaultedKeyWarning):
            click.echo(f"note: {message}", err=True)
        else:
            shown(message, category, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("always", DefaultedKeyWarning)
        warnings.showwarning = show
        yield


def main(argv=None) -> None:
    """Console entry point: bad input exits 2 with its message, never a traceback."""
    try:
        with _notes():
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
