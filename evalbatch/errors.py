"""The exceptions the library raises; the CLI turns each into a message and an exit code once."""

from __future__ import annotations

import errno
import os
from pathlib import Path

#: the exit codes every command shares, defined once (each command's --help and the README say
#: which it uses): all done; a check failed (a regression, a disagreement, an invalid suite);
#: unusable input or a usage error; something skipped; outputs not written; outputs locked
EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE, EXIT_SKIPPED, EXIT_NOT_WRITTEN, EXIT_LOCKED = 0, 1, 2, 3, 4, 5


class EvalbatchError(Exception):
    """Base of every error meant for a user: the message says what is wrong and what to do."""


class OptionError(EvalbatchError, ValueError):
    """An option object was made with a field outside what it allows (`GradeOptions`,
    `RegressOptions`, `Resources`: E-130); the message names the field, the value and what is
    allowed. A command's own parameter types refuse such a value first, as a usage error."""


class InputError(EvalbatchError):
    """The input as a whole is unusable (no readable file, no file with the required columns)."""


class SuiteError(EvalbatchError):
    """A suite file cannot be matched to any run (not JSON, or no suiteId/version): §1.3."""


class SqlFileError(EvalbatchError):
    """A file under sql/ is missing or malformed."""


class OutputError(EvalbatchError):
    """The outputs could not be written (a full disk, an unwritable directory); the previous
    outputs are left as they were."""

    exit_code = EXIT_NOT_WRITTEN


class OutputLocked(EvalbatchError):
    """Another live process is writing to the output directory."""

    exit_code = EXIT_LOCKED


class ShardFailed(EvalbatchError):
    """A shard of the Ray engine (or the task planning the shards) failed for good (E-155): its
    worker stopped on a fault, or Ray could not run it to the end in the attempts it is given.
    The message names the shard, its runs (ids only) and the fault; `exit_code` is the one the
    local engine exits with for the same fault in a batch (`name_fault`), 4 when the worker was
    lost. Nothing is written."""

    def __init__(self, message: str, exit_code: int = EXIT_NOT_WRITTEN) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def os_reason(exc: BaseException) -> str:
    """An OS fault as the OS names it (`No space left on device [ENOSPC]`), never the exception's
    own text, which may quote what was being written; the exception's type when it is no
    OSError."""
    if isinstance(exc, OSError) and exc.errno:
        return f"{os.strerror(exc.errno)} [{errno.errorcode.get(exc.errno, exc.errno)}]"
    if isinstance(exc, OSError) and exc.args:
        return str(exc.args[0])  # an OS-level message raised without an errno (a file system's)
    return type(exc).__name__


def write_failed(
    target: str | Path, exc: BaseException, consequence: str, *, name_file: bool = False
) -> OutputError:
    """The one message of a write that failed: what, the OS's reason, and what it left
    (E-72: a failed write changes nothing). With `name_file`, the file the OS names in `exc`
    (one inside the directory `target`) follows `target` in parentheses.

    Every writer raises it (E-132): `run`'s outputs, an ingest, `files.write_aside`."""
    filename = getattr(exc, "filename", None) if name_file else None
    where = f"{target} ({filename})" if filename else f"{target}"
    return OutputError(f"{where}: could not be written: {os_reason(exc)}; {consequence}")


def name_fault(exc: BaseException) -> tuple[str, int] | None:
    """`exc` as the one line a user is shown and its exit code, or None when it is not a fault
    the program can name (a bug). One definition for every command (`commands.faults.named`)
    and for a Ray worker saying why its shard failed (E-155), so a fault is said alike on either
    engine:

    - the library's errors keep their message and exit code;
    - an `OSError` is an output fault, exit code 4: reading paths turn their own OS errors into
      input errors where they read, so an OS error that reaches here came from writing (a full
      disk, a read-only file system, a directory it may not write); named by the path it met
      and the OS's reason, never the exception's text;
    - running out of memory (DuckDB's limit or the process's) names the options that help,
      exit code 2.
    """
    if isinstance(exc, EvalbatchError):
        return str(exc), getattr(exc, "exit_code", EXIT_UNUSABLE)
    if isinstance(exc, OSError):
        path = exc.filename2 or exc.filename
        where = f" {path}" if path else ""
        return f"could not read or write{where}: {os_reason(exc)}", OutputError.exit_code
    import duckdb  # the engine loads when a command runs, not for --help

    if isinstance(exc, duckdb.OutOfMemoryException | MemoryError):
        reason = " ".join(str(exc).split("\n\n", 1)[0].split()) or type(exc).__name__
        return (
            f"out of memory ({reason}): raise --memory-limit, lower --threads or "
            "--batch-events, or give --temp-dir a disk to spill to",
            EXIT_UNUSABLE,
        )
    return None
