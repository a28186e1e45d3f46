"""`--threads`, `--memory-limit`, `--temp-dir`, `--extractor` (and, on the grading commands,
`--batch-events`): what DuckDB may use and how payloads are parsed (E-108), honoured by every
command that reads data (E-64). The options are gathered
into one `Resources` that the command hands to the library, which applies it to every DuckDB
connection the call makes; nothing outlives the command."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from evalbatch.commands.types import MemoryLimit, bounded
from evalbatch.options import (
    BATCH_EVENTS,
    DEFAULT_BATCH_EVENTS,
    EXTRACTORS,
    THREADS,
    Extractor,
    Resources,
)

F = TypeVar("F", bound=Callable[..., Any])

#: the environment variable that names the extractor when --extractor is not given (E-108); read
#: here, where a command starts, never by the library (E-130)
EXTRACTOR_ENVIRONMENT = "EVALBATCH_EXTRACTOR"


def environment_extractor() -> Extractor:
    """The extractor a command takes when --extractor is not given: EVALBATCH_EXTRACTOR if it
    names one, else "auto". `Resources()` itself is always "auto" (E-130)."""
    value = os.environ.get(EXTRACTOR_ENVIRONMENT, "auto")
    for name in EXTRACTORS:
        if value == name:
            return name
    return "auto"


_THREADS = click.option(
    "--threads",
    type=bounded(THREADS),
    default=None,
    help="DuckDB threads (default: all cores).",
)
_BATCH_EVENTS = click.option(
    "--batch-events",
    type=bounded(BATCH_EVENTS),
    default=DEFAULT_BATCH_EVENTS,
    show_default=True,
    help="Grade whole runs in batches of about this many events (bounds memory).",
)
_MEMORY_LIMIT = click.option(
    "--memory-limit",
    type=MemoryLimit(),
    default=None,
    help="DuckDB memory limit: 4GB, 500MiB, 1.5GB, or 80% of the machine's memory (default: "
    "DuckDB's, 80%).",
)
_SPILL_DIR = click.option(
    "--temp-dir",
    "spill_dir",
    type=click.Path(),
    default=None,
    help="Directory where DuckDB may spill past the memory limit (default: DuckDB's, .tmp in "
    "the current directory).",
)

_EXTRACTOR = click.option(
    "--extractor",
    type=click.Choice(EXTRACTORS),
    default=None,
    help="How payloads are parsed: native (simdjson, built by `make run`), duckdb (the "
    "reference query), or auto (native where built; the default, or EVALBATCH_EXTRACTOR). "
    "Same results either way.",
)


def resource_options(*, batch_events: bool = False) -> Callable[[F], F]:
    """Add the resource options to a command, which then takes one `resources: Resources`
    argument instead of them; `batch_events` adds `--batch-events` (commands that grade)."""
    options = [_THREADS, _BATCH_EVENTS, _MEMORY_LIMIT, _SPILL_DIR, _EXTRACTOR]
    if not batch_events:
        options.remove(_BATCH_EVENTS)

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def with_resources(
            *args: Any,
            threads: int | None,
            memory_limit: str | None,
            spill_dir: str | None,
            extractor: Any,
            **kwargs: Any,
        ) -> Any:
            events = kwargs.pop("batch_events", DEFAULT_BATCH_EVENTS)
            chosen = extractor or environment_extractor()
            resources = Resources(threads, memory_limit, spill_dir, events, chosen)
            return command(*args, resources=resources, **kwargs)

        decorated: Callable[..., Any] = with_resources
        for option in reversed(options):
            decorated = option(decorated)
        return cast(F, decorated)

    return decorate
