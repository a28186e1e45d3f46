"""Writing event rows as the canonical Parquet layout (§1.1), never losing or replacing a file.

One directory per run (`runId=<id>/`, the id percent-encoded, or `runKey=<digest>/` for an id a
file name or DuckDB's hive partitioning would change, E-33), each file written aside in a private
working directory and linked into place complete (E-34). A write that fails (a full disk) is an
`OutputError` and leaves nothing behind; a working directory left by a killed ingest is removed by
the next ingest into the same directory (E-75). While an ingest links its parts into place, its
output directory holds a marker (`INCOMPLETE`) naming what it adds: readers leave such a
directory out (`interrupted_ingests`), and the next ingest undoes what a killed one linked
(E-122). Each file records the sha256 of its rows, so the same export written again adds nothing
(E-34).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import urllib.parse
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from evalbatch.errors import OutputError, write_failed
from evalbatch.files import file_mode
from evalbatch.inputs import limits
from evalbatch.inputs.event_rows import SCHEMA
from evalbatch.options import Resources

#: rows buffered before they are written out (bounds memory on large inputs)
DEFAULT_FLUSH_ROWS = 1_000_000

#: the longest `runId=<encoded id>` directory name; longer ids use the `runKey=` layout (E-33)
_MAX_DIR_NAME = 200


def _castable_ids(run_ids: Sequence[str], resources: Resources | None) -> set[str]:
    """Ids DuckDB's hive partitioning would read as another type (`2026-1-2` as a date, `42` as
    a number) and so could hand back changed: they use the `runKey=` layout (E-33)."""
    if not run_ids:
        return set()
    con = duckdb.connect(":memory:")
    (resources or Resources()).apply(con)
    try:
        con.register("ids", pa.table({"id": pa.array(run_ids, pa.string())}))
        casts = " OR ".join(
            f"TRY_CAST(id AS {kind}) IS NOT NULL"
            for kind in ("BIGINT", "HUGEINT", "DOUBLE", "DATE", "TIME", "TIMESTAMP", "BOOLEAN")
        )
        rows = con.execute(f"SELECT id FROM ids WHERE {casts}").fetchall()
    finally:
        con.close()
    return {row[0] for row in rows}


def partition_names(
    run_ids: Sequence[str], existing: Iterable[str] = (), resources: Resources | None = None
) -> dict[str, str]:
    """The directory of each run (E-33): `runId=<id>` with every character outside
    `[A-Za-z0-9._~-]` percent-encoded (DuckDB decodes it back, so the partition value is the id),
    or `runKey=<sha-256 prefix>` for an id that is empty, too long for a file name, would be read
    as another type, or differs only in case from another run's directory."""
    existing_folded = {name.casefold(): name for name in existing}
    castable = _castable_ids(run_ids, resources)
    names: dict[str, str] = {}
    for run_id in sorted(run_ids):
        name = f"runId={urllib.parse.quote(run_id, safe='')}"
        folded = name.casefold()
        clash = existing_folded.get(folded, name) != name
        if not run_id or run_id in castable or len(name) > _MAX_DIR_NAME or clash:
            digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()
            name = f"runKey={digest[:32]}"
            folded = name.casefold()
        existing_folded.setdefault(folded, name)
        names[run_id] = name
    return names


#: the private working directories of ingests into an output directory
WORK_PREFIX = ".ingest-"

#: the Parquet key-value metadata key under which each written file records `rows_digest`
DIGEST_KEY = "evalbatch.ingest.sha256"


def rows_digest(columns: Sequence[Sequence[Any]]) -> str:
    """The sha256 of a file's rows, taken over each column (in `SCHEMA` order, rows in file
    order) as one line of ASCII JSON: it depends on the values alone, not on how Parquet or a
    library version encodes them, so the same events from the same export give the same digest."""
    digest = hashlib.sha256()
    for column in columns:
        digest.update(json.dumps(column, separators=(",", ":")).encode("ascii"))
        digest.update(b"\n")
    return digest.hexdigest()


def _recorded_digest(path: Path) -> tuple[str, int] | None:
    """The digest a part file records and its row count; None for a file from before digests
    were recorded or one that cannot be read (then nothing is taken as already there)."""
    try:
        footer = pq.read_metadata(path)
    except (OSError, ValueError, pa.ArrowException):
        return None
    recorded = (footer.metadata or {}).get(DIGEST_KEY.encode("ascii"))
    return (recorded.decode("ascii"), footer.num_rows) if recorded else None


#: the file an ingest keeps in its output directory from before it links its first part into
#: place until after its last: while it is there, a run may have some of its parts and not
#: others (E-122). Underscored, as `_SUCCESS` is: table readers pass it over.
INCOMPLETE = "_INGEST_INCOMPLETE"

#: the names of the directories a marker may name (E-33): nothing outside the output directory
_RUN_DIRECTORY = ("runId=", "runKey=")


def _sync_dir(path: Path) -> None:
    """Make the entries of directory `path` (a file made or removed in it) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(OSError):  # a file system that cannot sync a directory
            os.fsync(fd)
    finally:
        os.close(fd)


def _mark_incomplete(out_dir: Path, plan: list[dict[str, Any]]) -> None:
    """Create the marker, naming each run directory the ingest links into (`made` when it
    makes it) and the digest and row count of each part it adds, durably and before the first
    link: whoever finds it knows what to undo. Never over another marker ("x": the call fails
    instead). Torn by a kill, it is not JSON, and then nothing was linked yet."""
    marker = out_dir / INCOMPLETE
    with marker.open("x", encoding="ascii") as handle:
        try:
            handle.write(json.dumps({"directories": plan}, separators=(",", ":")))
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                marker.unlink()  # this ingest's own, never another's (that one fails "x")
            raise
    _sync_dir(out_dir)


def _marker_plan(text: str) -> list[tuple[str, bool, set[tuple[str, int]]]] | None:
    """A marker's (directory name, made, {(digest, rows)}) entries; None when it is not one
    whole marker (torn by a kill before the first link, or not written by an ingest)."""
    try:
        entries = limits.loads(text)["directories"]
        plan = []
        for entry in entries:
            name, made = entry["name"], entry["made"]
            parts = {(str(digest), int(rows)) for digest, rows in entry["parts"]}
            if not isinstance(name, str) or not isinstance(made, bool):
                return None
            if "/" in name or "\\" in name or not name.startswith(_RUN_DIRECTORY):
                return None  # a name reaching outside the output directory: not ours
            plan.append((name, made, parts))
    except (ValueError, TypeError, KeyError, IndexError):
        return None
    return plan


def undo_incomplete(out_dir: Path) -> bool:
    """Undo what the ingest whose marker `out_dir` holds linked into place, and remove the
    marker (E-122): each part of a directory it names whose recorded digest and row count it
    lists (no part that was there before has them: only parts whose rows were not there are
    added), then each directory it made, when empty. Call it holding the lock on `out_dir`,
    with no ingest alive that holds it; True when there was a marker."""
    marker = out_dir / INCOMPLETE
    try:
        text = marker.read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return False
    for name, made, parts in _marker_plan(text) or []:
        directory = out_dir / name
        if directory.is_symlink() or not directory.is_dir():
            continue
        for part in sorted(directory.glob("part-*.parquet")):
            if _recorded_digest(part) in parts:
                part.unlink()
        if made:
            with contextlib.suppress(OSError):  # not empty: it holds parts of its own
                directory.rmdir()
    marker.unlink()
    _sync_dir(out_dir)
    return True


def interrupted_ingests(given: Sequence[str], files: Sequence[str]) -> dict[str, list[str]]:
    """The directories holding an ingest's marker (E-122) among the directories `given` and
    the ancestors of `files`, each with the files below it: their runs may be partial. A
    directory is named as the user spelled it where the path given reaches it, else in full."""
    nearest: dict[Path, Path | None] = {}

    def marked(directory: Path) -> Path | None:
        """The nearest directory at or above absolute `directory` that holds a marker."""
        chain: list[Path] = []
        found: Path | None = None
        current = directory
        while True:
            if current in nearest:
                found = nearest[current]
                break
            chain.append(current)
            if os.path.lexists(current / INCOMPLETE):
                found = current
                break
            if current.parent == current:
                break
            current = current.parent
        for seen in chain:
            nearest[seen] = found
        return found

    def shown(path: str, up: int, marker_dir: Path) -> str:
        """`marker_dir` as `path` spells it, `up` levels above it, where that names it."""
        spelled = Path(path)
        candidate = spelled if up == 0 else None
        if 0 < up <= len(spelled.parents):
            candidate = spelled.parents[up - 1]
        if candidate is not None and Path(os.path.abspath(candidate)) == marker_dir:
            return str(candidate)
        return str(marker_dir)

    found: dict[str, list[str]] = {}
    for path in given:
        absolute = Path(os.path.abspath(path))
        if absolute.is_dir() and (marker_dir := marked(absolute)) is not None:
            up = len(absolute.parts) - len(marker_dir.parts)
            found.setdefault(shown(path, up, marker_dir), [])
    for path in files:
        absolute = Path(os.path.abspath(path))
        if (marker_dir := marked(absolute.parent)) is not None:
            up = len(absolute.parts) - len(marker_dir.parts)
            found.setdefault(shown(path, up, marker_dir), []).append(path)
    return found


#: what a failed ingest leaves (E-72)
_NOTHING_ADDED = "nothing was added and the files already there are unchanged"


def _lock_dir(path: Path, blocking: bool) -> int | None:
    """An open descriptor of directory `path` holding an exclusive `flock` on it; None when
    another process holds it (only when not `blocking`)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def clear_dead_ingests(out_dir: Path) -> int:
    """Remove the working directories of ingests that died; returns how many there were.

    A live ingest holds a `flock` on its working directory until it ends (the kernel drops it
    when the process dies, however it dies), so one whose lock can be taken belongs to no live
    ingest. Call it holding the lock on `out_dir` itself (`LayoutWriter` does): a directory is made
    and locked in one step under that lock, so none is seen unlocked while its ingest lives."""
    cleared = 0
    for path in out_dir.iterdir():
        if not path.name.startswith(WORK_PREFIX) or path.is_symlink() or not path.is_dir():
            continue
        try:
            fd = _lock_dir(path, blocking=False)
        except OSError:
            continue  # gone meanwhile, or cannot be locked here: left alone
        if fd is None:
            continue  # a live ingest's
        try:
            shutil.rmtree(path, ignore_errors=True)
            cleared += 1
        finally:
            os.close(fd)
    return cleared


class LayoutWriter:
    """Buffers rows by run and writes them as Parquet parts into a private temporary directory
    inside the output directory; `commit` links each finished part into place. Every `OSError`
    while writing is an `OutputError`, and `discard` leaves nothing behind. The output directory
    (and its parents) is made when it is not there."""

    def __init__(self, out_dir: Path, flush_rows: int, resources: Resources | None) -> None:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_failed(out_dir, exc, _NOTHING_ADDED) from exc
        self.out_dir = out_dir
        self.flush_rows = flush_rows
        self.resources = resources
        self.tmp, self._held = self._make_work_dir(out_dir)
        self.buffer: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
        self.buffered = 0
        self.parts: dict[str, list[Path]] = defaultdict(list)
        self.digests: dict[Path, tuple[str, int]] = {}  # each part's rows_digest and rows
        self.files_written = 0
        self.events = 0
        self.events_already_there = 0
        self.runs_already_there = 0

    @staticmethod
    def _make_work_dir(out_dir: Path) -> tuple[Path, int | None]:
        """Undo what a killed ingest linked (E-122), clear dead ingests' working directories
        and make and lock this one, under a short lock on `out_dir` (E-75). Where directories
        cannot be locked nothing is undone or cleared."""
        try:
            guard = _lock_dir(out_dir, blocking=True)
        except OSError:
            guard = None
        try:
            held = None
            if guard is not None:
                undo_incomplete(out_dir)
                clear_dead_ingests(out_dir)
            tmp = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=out_dir))
            with contextlib.suppress(OSError):
                held = _lock_dir(tmp, blocking=False)
            return tmp, held
        except OSError as exc:
            raise write_failed(out_dir, exc, _NOTHING_ADDED) from exc
        finally:
            if guard is not None:
                os.close(guard)

    def add(self, rows: list[tuple[Any, ...]]) -> None:
        for row in rows:
            self.buffer[row[0]].append(row)
        self.buffered += len(rows)
        self.events += len(rows)
        if self.buffered >= self.flush_rows:
            self.flush()

    def flush(self) -> None:
        try:
            for run_id, rows in sorted(self.buffer.items()):
                rows.sort(key=lambda row: row[1])  # stable: rows of one sequence keep input order
                columns = [[row[i] for row in rows] for i in range(len(SCHEMA))]
                digest = rows_digest(columns)
                table = pa.Table.from_arrays(
                    [pa.array(values, f.type) for values, f in zip(columns, SCHEMA, strict=True)],
                    schema=SCHEMA.with_metadata({DIGEST_KEY: digest}),
                )
                # not named *.parquet until committed: a reader never sees a partial file
                target = self.tmp / f"{self.files_written}.part"
                self.files_written += 1
                pq.write_table(table, target)
                os.chmod(target, file_mode())
                self.parts[run_id].append(target)
                self.digests[target] = (digest, len(rows))
        except OSError as exc:  # raised past the input readers, which report their own OSErrors
            raise write_failed(self.out_dir, exc, _NOTHING_ADDED) from exc
        self.buffer.clear()
        self.buffered = 0

    def commit(self) -> list[Path]:
        """Link every part into place, less the parts whose rows a file of their run's directory
        already holds (the same digest and row count: the same export ingested again), under
        the output directory's lock, so two ingests of the same export never both add it.

        The links are bracketed by the marker (E-122): made, naming what will be added, before
        the first, removed after the last, so a kill between two links leaves a directory that
        readers refuse and the next ingest undoes. If a part cannot be linked, what was linked
        is undone the same way, so a failed ingest adds nothing."""
        self.flush()
        try:
            guard = _lock_dir(self.out_dir, blocking=True)
        except OSError:
            guard = None  # a file system without locks: checked and linked all the same
        try:
            return self._link_parts(locked=guard is not None)
        finally:
            if guard is not None:
                os.close(guard)

    def _link_parts(self, locked: bool) -> list[Path]:
        """`commit` under the lock (`locked`), or where there is none: a marker found is then
        maybe a live ingest's, never undone or linked beside (E-122)."""
        written: list[Path] = []
        marked = False
        try:
            if locked:
                undo_incomplete(self.out_dir)  # of an ingest killed since this one began
            elif os.path.lexists(self.out_dir / INCOMPLETE):
                raise OutputError(
                    f"{self.out_dir}: holds {INCOMPLETE}, the marker of an ingest that was "
                    "interrupted or is running, and cannot be locked to tell which (E-122): "
                    "nothing was added; ingest into another directory"
                )
            plan, adds = self._plan()
            if not adds:
                return written
            _mark_incomplete(self.out_dir, plan)
            marked = True
            for part, directory in adds:
                if not directory.is_dir():
                    directory.mkdir()
                written.append(_link_next(part, directory))
            (self.out_dir / INCOMPLETE).unlink()
            _sync_dir(self.out_dir)
        except OSError as exc:
            if marked:  # what this ingest linked; if that fails, the next ingest undoes it
                with contextlib.suppress(OSError):
                    undo_incomplete(self.out_dir)
            raise write_failed(self.out_dir, exc, _NOTHING_ADDED) from exc
        return written

    def _plan(self) -> tuple[list[dict[str, Any]], list[tuple[Path, Path]]]:
        """What `commit` adds: the marker's entries (each run directory, whether it is made,
        the digest and rows of each part added) and each part with its run directory; parts
        whose rows are already there are counted and left out."""
        existing = [p.name for p in self.out_dir.iterdir() if p.is_dir() and p != self.tmp]
        names = partition_names(list(self.parts), existing, self.resources)
        plan: list[dict[str, Any]] = []
        adds: list[tuple[Path, Path]] = []
        for run_id in sorted(self.parts):
            directory = self.out_dir / names[run_id]
            made = not directory.is_dir()
            there = (
                set()
                if made
                else {_recorded_digest(p) for p in sorted(directory.glob("part-*.parquet"))}
            )
            added: list[tuple[str, int]] = []
            for part in self.parts[run_id]:
                if self.digests[part] in there:
                    self.events_already_there += self.digests[part][1]
                    continue
                adds.append((part, directory))
                added.append(self.digests[part])
                there.add(self.digests[part])
            self.runs_already_there += not added
            if added:
                plan.append({"name": directory.name, "made": made, "parts": added})
        return plan, adds

    def discard(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self._held is not None:
            os.close(self._held)
            self._held = None


def _link_next(part: Path, directory: Path) -> Path:
    """Give a finished file the first free name `part-<n>.parquet` in `directory` without ever
    replacing one (a hard link fails when the name is taken); earlier ingests are kept."""
    number = 0
    while True:
        target = directory / f"part-{number}.parquet"
        try:
            os.link(part, target)
        except FileExistsError:
            number += 1
            continue
        except OSError:  # a file system without hard links: rename to a name still free
            if target.exists():
                number += 1
                continue
            os.replace(part, target)
            return target
        part.unlink()
        return target
