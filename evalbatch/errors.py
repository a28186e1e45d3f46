"""The exceptions the library raises; the CLI turns each into a message and an exit code once."""

from __future__ import annotations


class EvalbatchError(Exception):
    """Base of every error meant for a user: the message says what is wrong and what to do."""


class InputError(EvalbatchError):
    """The input as a whole is unusable (no readable file, no file with the required columns)."""


class SuiteError(EvalbatchError):
    """A suite file cannot be matched to any run (not JSON, or no suiteId/version): §1.3."""


class SqlFileError(EvalbatchError):
    """A file under sql/ is missing or malformed."""


class OutputError(EvalbatchError):
    """The outputs could not be written (a full disk, an unwritable directory); the previous
    outputs are left as they were."""

    exit_code = 4


class OutputLocked(EvalbatchError):
    """Another live process is writing to the output directory."""

    exit_code = 5
