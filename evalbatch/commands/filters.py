"""`--run-id`, `--suite-id`, `--since`, `--until`: the run filters `run`, `verify`, `regress` and
`sql` share (E-63). They narrow the runs every scan of the event files reads."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from evalbatch.inputs.event_files import RunFilter

F = TypeVar("F", bound=Callable[..., Any])


class Instant(click.ParamType):
    """An ISO 8601 date or time; one without a zone is UTC."""

    name = "TIME"

    def convert(self, value: Any, param: Any, ctx: Any) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            self.fail(f"{value!r} is not an ISO 8601 date or time (2026-12-01T02:00Z)", param, ctx)
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def run_filter_options(command: F) -> F:
    """Add the four filter options to a command (as the keyword `run_filter`)."""
    options = [
        click.option(
            "--run-id",
            "run_ids",
            multiple=True,
            help="Only runs whose runId matches this glob (repeatable: any of them), "
            "e.g. 'acme/run-2026-12-*'.",
        ),
        click.option(
            "--suite-id",
            "filter_suites",
            multiple=True,
            help="Only eval runs whose eval.started names this suiteId (repeatable: any of "
            "them). Not a suite file: those are --suites.",
        ),
        click.option(
            "--since",
            type=Instant(),
            default=None,
            help="Only eval runs whose eval.started is at or after this time (ISO 8601; UTC "
            "without a zone; default: no lower bound).",
        ),
        click.option(
            "--until",
            type=Instant(),
            default=None,
            help="Only eval runs whose eval.started is before this time (ISO 8601; UTC without "
            "a zone; default: no upper bound).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def build_run_filter(
    run_ids: tuple[str, ...],
    filter_suites: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
) -> RunFilter | None:
    """The filter the options give, or None when none was given."""
    from evalbatch.inputs.event_files import RunFilter  # DuckDB and Arrow load only when used

    chosen = RunFilter(tuple(run_ids), tuple(filter_suites), since, until)
    return None if chosen.empty else chosen
