"""Options several commands share, defined once so they read and behave the same everywhere.

One name per concept on every command (E-93): `--out/-o` for where files go,
`--suites` for suite files, `--suite-id` for the suiteId filter, `--run-id` (and
`--base-run-id`/`--cand-run-id`) for choosing runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from evalbatch.commands.types import bounded
from evalbatch.options import ON_MISS_DEFAULTS, PASS_SCORE

if TYPE_CHECKING:
    from evalbatch.inputs.capabilities import EvalSuiteFacets

__all__ = [
    "capabilities_option",
    "default_pass_score_option",
    "on_miss_default_option",
    "one_capabilities",
    "out_option",
    "suites_option",
]

F = TypeVar("F", bound=Callable[..., Any])


def out_option(dest: str, *, help: str, **attrs: Any) -> Callable[[F], F]:
    """`--out/-o`: where a command writes its files, spelled alike on every command."""
    return click.option("--out", "-o", dest, help=help, **attrs)


def quiet_option(help: str) -> Callable[[F], F]:
    """`-q/--quiet`, spelled alike on every command; `help` says what is still printed (errors
    and warnings on stderr always are)."""
    return click.option("-q", "--quiet", is_flag=True, help=help)


suites_option = click.option(
    "--suites",
    "suite_paths",
    multiple=True,
    type=click.Path(),
    help="Suite file or directory of *.json (repeatable); a run whose suite is not given is "
    "graded from the host record (D-4).",
)
default_pass_score_option = click.option(
    "--default-pass-score",
    type=bounded(PASS_SCORE),
    default=1.0,
    show_default=True,
    help="Suite bar, a score from 0 to 1, when thresholds.passScore is absent (D-15).",
)
on_miss_default_option = click.option(
    "--on-miss-default",
    type=click.Choice(ON_MISS_DEFAULTS),  # the values GradeOptions checks (E-130)
    default="count",
    show_default=True,
    help="What an absent fixtures.onMiss means (D-9).",
)
capabilities_option = click.option(
    "--capabilities",
    "capabilities_paths",
    multiple=True,
    type=click.Path(),
    metavar="CAPS",
    help="A host's capabilities (the document it serves, its agents block or its evalSuite "
    "block, read off its shape) to check against its agents.evalSuite facets (RFC 0244 §G, "
    "E-100); one document for the whole input (E-101).",
)


def one_capabilities(paths: Sequence[str]) -> EvalSuiteFacets | None:
    """The facets of the one `--capabilities` document, or None when none is given.

    Several documents would need the log to say which host ran which run, and an OpenWOP log
    does not (E-101): more than one is a usage error, never one silently chosen.
    """
    from evalbatch.inputs import capabilities

    if not paths:
        return None
    if len(paths) > 1:
        raise capabilities.CapabilitiesError(
            f"--capabilities given {len(paths)} times: give one document for the whole input "
            "(an event log does not say which host ran which run, E-101)"
        )
    return capabilities.read_capabilities(paths[0])
