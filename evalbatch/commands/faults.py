"""How a command stops on a fault: one line on stderr and an exit code, the same whether it is
started as `evalbatch` (`evalbatch.cli.main`) or invoked on its own (click's test runner, a
notebook calling a command).

Every command of the `evalbatch` group is a `Command`, whose `invoke` turns the faults it can name
into a `CommandFailed` (a click exception, so click shows it and exits with its code). `main()`
asks `named` about anything that still escapes; what it cannot name is an internal error (E-83).
"""

from __future__ import annotations

import errno
from typing import IO, Any

import click

from evalbatch.commands.types import printable
from evalbatch.errors import name_fault


class CommandFailed(click.ClickException):
    """A fault a user can act on: `evalbatch: <message>` on stderr, then `exit_code`."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self._exit_code = exit_code

    # click declares `exit_code` once per exception class; a fault carries its own
    @property
    def exit_code(self) -> int:
        return self._exit_code

    @exit_code.setter
    def exit_code(self, code: int) -> None:
        self._exit_code = code

    def show(self, file: IO[Any] | None = None) -> None:
        """The message's own lines (a list of faults) each escaped: an id can break no line."""
        lines = self.message.split("\n")
        click.echo(
            "\n".join(["evalbatch: " + printable(lines[0]), *map(printable, lines[1:])]), err=True
        )


def named(exc: BaseException) -> CommandFailed | None:
    """`exc` as the one line a user sees and its exit code, or None when it is not a fault the
    program can name (a bug: `main()` reports it as an internal error). What is named, and how,
    is `errors.name_fault`'s (the library's errors keep theirs; an `OSError` is an output fault,
    exit code 4; running out of memory is exit code 2 naming the options that help)."""
    fault = name_fault(exc)
    return CommandFailed(*fault) if fault is not None else None


class Command(click.Command):
    """A command whose faults are shown as one line with their exit code (see `named`)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
                raise  # the reader went away (`| head`): click exits quietly
            failure = named(exc)
            if failure is None:
                raise
            raise failure from exc


class Group(click.Group):
    """A group whose commands are `Command`s."""

    command_class = Command
