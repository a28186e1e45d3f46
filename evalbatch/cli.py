"""The `evalbatch` command: the click group, its commands and the process's entry point.

Each command lives in a module of its own under `evalbatch.commands` (options in, a library call,
printing out; the tables it prints are in `commands.printing`). Errors meant for users are turned
into a one-line message and an exit code in one place, `evalbatch.commands.faults`, for every
command however it is invoked; `main()` adds what only a process can do (library warnings kept
off stderr, the internal-error line).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

import click

from evalbatch.commands import faults
from evalbatch.commands.explain import explain
from evalbatch.commands.export import export
from evalbatch.commands.history import history
from evalbatch.commands.ingest import ingest_command
from evalbatch.commands.regress import regress_command
from evalbatch.commands.report import report
from evalbatch.commands.run import run
from evalbatch.commands.sql import sql_command
from evalbatch.commands.suite import suite_group
from evalbatch.commands.validate import validate
from evalbatch.commands.verify import verify_command
from evalbatch.errors import EXIT_UNUSABLE


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """`--version`: the package's version and which extractor parses payloads (E-108)."""
    if not value or ctx.resilient_parsing:
        return
    from evalbatch.commands.resources import environment_extractor
    from evalbatch.extract import extractor
    from evalbatch.version import package_version

    click.echo(f"evalbatch, version {package_version()}")
    click.echo(f"extractor: {extractor.describe(environment_extractor())}")
    ctx.exit()


@click.group(cls=faults.Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and which extractor parses payloads, and exit.",
)
def cli() -> None:
    """Grade exported OpenWOP eval-run event logs as RFC 0244 defines."""


for _command in (
    run,
    validate,
    regress_command,
    verify_command,
    ingest_command,
    sql_command,
    export,
    report,
    explain,
    history,
    suite_group,
):
    cli.add_command(_command)


def _route_library_messages(debug: bool) -> None:
    """Warnings and log records of the libraries (Polars, numpy, matplotlib, DuckDB's Python
    side) are for developers, not for a user reading stderr (E-84): they go to the logging
    system, which drops them, or with EVALBATCH_DEBUG=1 prints every one of them."""
    logging.captureWarnings(True)
    if debug:
        warnings.simplefilter("default")
    root = logging.getLogger()
    if not root.handlers:  # a program that set up logging itself keeps its own handlers
        root.addHandler(logging.StreamHandler() if debug else logging.NullHandler())


#: the environment variable Polars' allocator (jemalloc) reads its settings from when it starts
POLARS_ALLOCATOR_VARIABLE = "_RJEM_MALLOC_CONF"
#: what the command sets there unless the user did (E-109): pages freed are kept 5 s, not 0.5 s
POLARS_ALLOCATOR_SETTINGS = "dirty_decay_ms:5000,muzzy_decay_ms:5000"


def _keep_freed_pages() -> None:
    """Let Polars' allocator keep the pages it frees for a few seconds (E-109): each batch of a
    pass frees about what the next one takes again, and pages given back to the system are
    faulted in and zeroed again. Only a process can choose this, before Polars loads: the
    command does, a notebook importing the library keeps its own setting."""
    if "polars" not in sys.modules:
        os.environ.setdefault(POLARS_ALLOCATOR_VARIABLE, POLARS_ALLOCATOR_SETTINGS)


def main() -> None:
    """Entry point: run the CLI; a fault `faults.named` can name is one line and its exit code,
    anything else one "internal error" line (the traceback with EVALBATCH_DEBUG=1)."""
    _keep_freed_pages()
    debug = bool(os.environ.get("EVALBATCH_DEBUG"))
    _route_library_messages(debug)
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except faults.CommandFailed as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_UNUSABLE)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except Exception as exc:
        failure = faults.named(exc)
        if failure is not None:
            failure.show()
            sys.exit(failure.exit_code)
        if debug:
            raise
        # the exception's text may quote the data (a parser's message does): its type only (§H)
        click.echo(
            f"evalbatch: internal error: {type(exc).__name__} "
            "(set EVALBATCH_DEBUG=1 for the traceback and the message)",
            err=True,
        )
        sys.exit(EXIT_UNUSABLE)
