"""The `archscope` command line: parses, calls the library, renders. Nothing else lives here.

One module per family of commands: models.py (list, show, compare), runs.py (profile, generate,
make-checkpoint), documents.py (report, check-claims), hardware.py (hardware), fit.py (fit),
sweep.py (sweep), sharded.py (plan, profile --tp/--ep); options.py holds
the options they share.
Exit codes: 0 success, 2 usage or bad input (one-paragraph message, no traceback) or a
command that needs the `full` extra in a light install (one line), 1 anything unexpected.
"""

from __future__ import annotations

import errno
import os
import sys
import warnings
from contextlib import contextmanager, suppress

import click

from archscope.cli import (documents, fit, hardware, models, runs,  # noqa: F401
                           sharded, sweep)  # (register commands)
from archscope.cli.group import cli
from archscope.errors import InputError

EXIT_BAD_INPUT = 2
# what `pip install -e .` leaves out and the `full` extra adds (pyproject.toml), by import name:
# building, verifying, profiling, checkpoints, config.json defaults, families, reports
FULL_EXTRA = frozenset({"torch", "transformers", "accelerate", "safetensors", "tokenizers",
                        "pandas", "matplotlib", "numpy", "huggingface_hub"})


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


class OutputError(Exception):
    """Standard output could not be written (a full disk, /dev/full, a reader that left)."""


class _Guarded:
    """sys.stdout while a command runs: an OSError writing or flushing it becomes an
    OutputError, told apart from the OSErrors of the work itself."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as err:
            raise OutputError(err) from err

    def flush(self):
        try:
            return self._stream.flush()
        except OSError as err:
            raise OutputError(err) from err

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def _guarded_stdout():
    real = sys.stdout
    sys.stdout = _Guarded(real)
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout = real


def _output_failed(err: OutputError) -> None:
    """Say why the output stopped (nothing to say to a reader that left), and point the real
    stdout at /dev/null so that the interpreter's own flush at exit fails no more."""
    cause = err.__cause__
    if sys.stdout is sys.__stdout__:
        with suppress(OSError, ValueError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
    if isinstance(cause, BrokenPipeError):
        sys.exit(1)
    code = errno.errorcode.get(getattr(cause, "errno", None) or 0)
    reason = getattr(cause, "strerror", None) or str(cause)
    click.echo(f"error: cannot write the output (standard output): {reason}"
               f"{f' ({code})' if code else ''}; what was printed is incomplete", err=True)
    sys.exit(EXIT_BAD_INPUT)


def main(argv=None) -> None:
    """Console entry point: bad input exits 2 with its message, never a traceback."""
    try:
        with _notes(), _guarded_stdout():
            cli.main(args=argv, prog_name="archscope", standalone_mode=False)
    except OutputError as err:
        _output_failed(err)
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
    except ModuleNotFoundError as err:
        if (err.name or "").split(".")[0] not in FULL_EXTRA:
            raise
        command = next((a for a in (argv if argv is not None else sys.argv[1:])
                        if not a.startswith("-")), "")
        click.echo(f"error: `archscope {command}` needs {err.name.split('.')[0]}, which the light "
                   "install leaves out: pip install -e \".[full]\" (or pip install "
                   "\"archscope[full]\") adds it", err=True)
        sys.exit(EXIT_BAD_INPUT)


__all__ = ["cli", "main", "EXIT_BAD_INPUT"]
