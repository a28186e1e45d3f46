"""Options several commands share, defined once so they read and behave the same everywhere.

One name per concept on every command (issue 17 item 2): `--out/-o` for where files go,
`--suites` for suite files, `--suite-id` for the suiteId filter, `--run-id` (and
`--base-run-id`/`--cand-run-id`) for choosing runs. A renamed option is declared with
`renamed_option`: its old spellings keep working for one version as hidden aliases, each use
noted on stderr, and giving an old and the new spelling together is a usage error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from evalbatch.commands.types import bounded
from evalbatch.options import ON_MISS_DEFAULTS, PASS_SCORE

if TYPE_CHECKING:
    from evalbatch.inputs.capabilities import EvalSuiteFacets

__all__ = [
    "RenamedOption",
    "capabilities_option",
    "default_pass_score_option",
    "on_miss_default_option",
    "one_capabilities",
    "out_option",
    "renamed_option",
    "suites_option",
]

F = TypeVar("F", bound=Callable[..., Any])

#: the attributes that decide how the parser reads an option: an old spelling reads as the new
_PARSE_SHAPE = ("multiple", "nargs", "is_flag", "flag_value", "count")


def _old_dest(spelling: str) -> str:
    """The parameter name an old spelling is parsed into (never a command's keyword)."""
    return "_old_" + spelling.lstrip("-").replace("-", "_")


class RenamedOption(click.Option):
    """An option that also takes the value given under its old spellings (hidden options beside
    it, added by `renamed_option`): as if given under the new one, with a one-line note on
    stderr naming the new spelling. An old and the new spelling together are a usage error
    (exit 2), never one silently winning over the other."""

    def __init__(self, *args: Any, old_spellings: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.old_spellings = tuple(old_spellings)

    @property
    def spelling(self) -> str:
        """The new long spelling, as messages name it."""
        return next(opt for opt in self.opts if opt.startswith("--"))

    def consume_value(
        self, ctx: click.Context, opts: Mapping[str, Any]
    ) -> tuple[Any, ParameterSource]:
        used = [old for old in self.old_spellings if _old_dest(old) in opts]
        new_given = self.name in opts
        if used and not ctx.resilient_parsing:
            if new_given or len(used) > 1:
                spellings = [*used, self.spelling] if new_given else used
                raise click.BadOptionUsage(
                    self.spelling,
                    f"{' and '.join(spellings)} are one option: give only {self.spelling}",
                    ctx,
                )
            click.echo(
                f"evalbatch: note: {used[0]} is renamed {self.spelling} (the old spelling works "
                "until the next version)",
                err=True,
            )
        if used and not new_given:
            opts = {**opts, self.name: opts[_old_dest(used[0])]}
        return super().consume_value(ctx, opts)


def renamed_option(
    *param_decls: str, old_spellings: Sequence[str] = (), **attrs: Any
) -> Callable[[F], F]:
    """`click.option(*param_decls, **attrs)`, and each of `old_spellings` as a hidden alias of it
    for one version (documented in the README's "Renamed options"); see `RenamedOption`."""
    shape = {key: attrs[key] for key in _PARSE_SHAPE if key in attrs}

    def decorate(command: F) -> F:
        new = click.option(*param_decls, cls=RenamedOption, old_spellings=old_spellings, **attrs)
        command = new(command)
        spelling = next(d for d in param_decls if d.startswith("--"))
        for old in old_spellings:
            alias = click.option(
                old,
                _old_dest(old),
                hidden=True,
                expose_value=False,
                help=f"Old spelling of {spelling}, kept for one version.",
                **shape,
            )
            command = alias(command)
        return command

    return decorate


def out_option(
    dest: str, *, help: str, old_spellings: Sequence[str] = (), **attrs: Any
) -> Callable[[F], F]:
    """`--out/-o`: where a command writes its files, spelled alike on every command."""
    return renamed_option("--out", "-o", dest, old_spellings=old_spellings, help=help, **attrs)


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
