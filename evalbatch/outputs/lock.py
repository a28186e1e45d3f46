"""One writer per output directory (E-49).

`evalbatch run` takes an exclusive `flock` on `OUT/.evalbatch.lock` before it writes anything and
holds it until its files are in place, then removes the file. The kernel drops the lock when its
process ends, however it ends (SIGKILL included), so a lock file left by a dead process is never
in the way: the next run takes it over and says whose it was. The file itself only says who holds
the lock (pid, host, start time), for the message a second writer gets. `flock` is local to one
machine: two hosts writing to one network directory are not kept apart. The file is opened
without following a symbolic link (E-73): a link planted at its name is refused, never written
through.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalbatch.errors import OutputError, OutputLocked
from evalbatch.inputs import limits
from evalbatch.outputs.output_format import LOCK_FILE


@dataclass(frozen=True)
class Holder:
    """Who wrote a lock file: enough to find the process."""

    pid: int | None
    host: str | None
    started: str | None

    def describe(self) -> str:
        where = f" on {self.host}" if self.host else ""
        since = f" since {self.started}" if self.started else ""
        return f"pid {self.pid}{where}{since}" if self.pid is not None else "an unknown process"


def _read_holder(handle: Any) -> Holder:
    handle.seek(0)
    try:
        doc = limits.loads(handle.read() or "{}")  # too deep: no holder named (E-115)
    except (ValueError, UnicodeDecodeError):
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    pid = doc.get("pid")
    return Holder(
        pid=pid if isinstance(pid, int) else None,
        host=doc.get("host") if isinstance(doc.get("host"), str) else None,
        started=doc.get("started") if isinstance(doc.get("started"), str) else None,
    )


class OutputLock:
    """An exclusive lock on an output directory, as a context manager.

    `stale` is the holder recorded in a lock file left behind by a process that is gone (None when
    there was none), so the caller can say the lock was taken over.
    """

    def __init__(self, out_dir: str | Path) -> None:
        self.path = Path(out_dir) / LOCK_FILE
        self.stale: Holder | None = None
        self._handle: Any = None
        self._made_dir = False

    def _open(self) -> Any:
        """Open (or create) the lock file itself: never through a symbolic link (O_NOFOLLOW), and
        only when it is a regular file, so a link planted at its name cannot make the holder's
        details overwrite another file."""
        try:
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._made_dir = True
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OutputError(
                    f"{self.path}: the lock file is a symbolic link; refusing to follow it "
                    "(remove it and rerun)"
                ) from exc
            raise OutputError(
                f"{self.path.parent}: cannot write here ({exc.strerror or exc})"
            ) from exc
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OutputError(f"{self.path}: the lock file is not a regular file (remove it)")
        return open(fd, "r+", encoding="utf-8")  # held until release

    def _open_locked(self) -> Any:
        """Open and flock the lock file; None when it was replaced meanwhile (retry)."""
        handle = self._open()
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(handle)
            handle.close()
            raise OutputLocked(
                f"{self.path.parent}: another evalbatch run is writing here ({holder.describe()}; "
                f"lock file {self.path}); wait for it to finish or use another --out"
            ) from None
        except OSError as exc:
            handle.close()
            raise OutputError(f"{self.path}: cannot be locked ({exc.strerror})") from exc
        try:
            same = os.lstat(self.path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the holder removed the file between our open and our lock
            handle.close()
            return None
        return handle

    def acquire(self) -> OutputLock:
        handle = None
        while handle is None:
            handle = self._open_locked()
        previous = _read_holder(handle)
        if previous.pid is not None:
            self.stale = previous  # its holder neither removed it nor holds it: it is gone
        self._handle = handle
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(
                json.dumps(
                    {
                        "pid": os.getpid(),
                        "host": socket.gethostname(),
                        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    }
                )
            )
            handle.flush()
        except OSError as exc:  # a full disk: nothing else could be written either
            self.release()
            raise OutputError(
                f"{self.path.parent}: cannot write here ({exc.strerror or exc})"
            ) from exc
        return self

    def release(self) -> None:
        """Remove the lock file, then drop the lock (a process that opened the file meanwhile
        sees it was replaced and opens the new one). A directory made for the lock and left
        empty (the run stopped before writing) is removed too."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        with contextlib.suppress(OSError):  # closing flushes: a full disk must not stop it
            handle.close()
        if self._made_dir:
            with contextlib.suppress(OSError):
                self.path.parent.rmdir()  # only if empty

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
