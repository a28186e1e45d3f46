"""`--threads`, `--memory-limit`, `--temp-dir`: DuckDB's resources, honoured by every command
that reads data (E-64). Commands whose library calls take them as arguments pass them on; for the
others the options set the defaults every DuckDB connection of the process starts with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from evalbatch.commands.types import MAX_THREADS, MemoryLimit
from evalbatch.extract import trial_tables

F = TypeVar("F", bound=Callable[..., Any])


def _set(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            trial_tables.set_resources(**{name: value})
            ctx.call_on_close(trial_tables.reset_resources)  # for this command only
        return value

    return callback


def resource_options(command: F) -> F:
    """Add the three resource options to a command that does not take them itself."""
    options = [
        click.option(
            "--threads",
            type=click.IntRange(1, MAX_THREADS),
            default=None,
            expose_value=False,
            callback=_set("threads"),
            help="DuckDB threads (default: all cores).",
        ),
        click.option(
            "--memory-limit",
            type=MemoryLimit(),
            default=None,
            expose_value=False,
            callback=_set("memory_limit"),
            help="DuckDB memory limit: 4GB, 500MiB, 1.5GB, or 80% of the machine's memory.",
        ),
        click.option(
            "--temp-dir",
            "--spill-dir",
            type=click.Path(),
            default=None,
            expose_value=False,
            callback=_set("spill_dir"),
            help="Where DuckDB may spill past the memory limit.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command
