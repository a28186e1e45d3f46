"""Files written whole: the one file-mode rule and the one atomic writer (E-132).

Every file evalbatch puts where a user reads it gets the mode an ordinary new file gets, 0666
less the process umask (0644 under umask 022), not the private 0600 `mkstemp` gives a temporary
file. The umask is read once, when this module is imported, and never set at run time: `os.umask`
can only be read by setting it, and while it is set to anything else every file another thread
creates (DuckDB's, Ray's, a notebook's) gets the wrong mode. Nothing in evalbatch changes the
umask, so the value read at import is the one in force. On Linux it is read from
`/proc/self/status` (`Umask:`), which changes nothing; elsewhere by one `os.umask` pair here,
at import, before any command or engine starts a thread.

`write_aside` is the one way a single file is written whole: a scratch file in the target's
directory, written, synced, given `file_mode()` and renamed onto the target, so a reader never sees
half a file; any `OSError` on the way (a full disk, an unwritable directory) removes the scratch
file and is one `OutputError` naming the target and the reason (E-72). A target that exists and
is not a regular file (`/dev/null`, a pipe, a link to one) is never replaced by the rename: it is
refused and left as it is. `write_atomic` is it for text (`report`, `export`). The outputs of
`run` and an ingest's parts are committed as sets of files instead (E-119, E-122), with the same
mode and the same message (`errors.write_failed`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from evalbatch.errors import OutputError, write_failed

__all__ = ["file_mode", "write_aside", "write_atomic"]


def _read_umask() -> int:
    """The process umask: Linux's `/proc/self/status` where it says (nothing is changed to read
    it), else one `os.umask` pair (called once, at import)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8) & 0o777
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


#: the mode of every file evalbatch writes for a user: 0666 less the umask read at import
_FILE_MODE = 0o666 & ~_read_umask()


def file_mode() -> int:
    """The mode an ordinary new file gets: 0666 less the umask read at import (it never reads or
    sets the umask itself)."""
    return _FILE_MODE


@contextmanager
def write_aside(target: str | Path, consequence: str) -> Iterator[Path]:
    """A scratch path in the directory of `target` (made when missing) for the block to write;
    when the block completes the file is synced, given `file_mode()` and renamed onto `target`.

    Raises:
        OutputError: `target` exists and is not a regular file (nothing is written), or an
            `OSError` was raised making the scratch file, in the block, or syncing, chmodding or
            renaming it: one line naming `target`, the OS's reason and `consequence` (what the
            failure left). The scratch file is removed on every failure, any exception of the
            block included.
    """
    path = Path(target)
    if path.exists() and not path.is_file():
        raise OutputError(f"{path}: not a regular file; it is left as it is and nothing is written")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.close(handle)
    except OSError as exc:
        raise write_failed(path, exc, consequence) from exc
    scratch = Path(name)
    try:
        yield scratch
        _sync(scratch)
        os.chmod(scratch, file_mode())
        os.replace(scratch, path)
    except OSError as exc:
        raise write_failed(path, exc, consequence) from exc
    finally:
        scratch.unlink(missing_ok=True)


def _sync(path: Path) -> None:
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def write_atomic(
    target: str | Path,
    text: str | Iterable[str],
    consequence: str = "the previous file is unchanged",
    newline: str = "\n",
) -> Path:
    """Write `text` (or its pieces, as they come) to `target` as UTF-8 through `write_aside`: a
    failure, an error raised by the pieces included, leaves the previous file and no scratch
    file."""
    with (
        write_aside(target, consequence) as scratch,
        open(scratch, "w", encoding="utf-8", newline=newline) as stream,
    ):
        for piece in [text] if isinstance(text, str) else text:
            stream.write(piece)
    return Path(target)
