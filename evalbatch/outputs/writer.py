"""Writing the results (§4): summaries.jsonl plus the runs/tasks/trials/problems tables.

Outputs are built in a private directory inside the output directory and each file is renamed
into place only when complete, so a reader never sees a half-written file and a crash leaves the
previous outputs whole. The renames are bracketed by `outputs-incomplete` (E-119): created and
synced before the first file is replaced, removed after the last, so a directory a run died in
between holds two runs' files and the marker, and every reader refuses it until a run completes
it. A write that fails (a full disk) at any point leaves the previous outputs as they were and
nothing behind: the working directory is removed, and files already renamed into place are put
back (E-72). Rows are sorted, JSON keys keep the contract's order and Parquet row groups have a
fixed size, so the same inputs give byte-identical files however they were batched. So a table
that begins with the rows of the previous one begins with its row groups: those are copied as
they are (E-156, `parquet_splice`), and only the rows after them are encoded.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from evalbatch.files import file_mode
from evalbatch.outputs import output_format, parquet_splice
from evalbatch.outputs.manifest import Manifest, describe_file
from evalbatch.outputs.output_format import (
    DERIVED_FILES,
    INCOMPLETE_FILE,
    MANIFEST_FILE,
    OUTPUT_FILES,
    RUN_INPUTS_FILE,
    SUMMARIES_FILE,
    TASK_SCHEMA,
    TRIAL_SCHEMA,
    WORK_PREFIX,
    table_file,
)
from evalbatch.outputs.run_inputs import RunInputs


def clear_dead_runs(out_dir: Path) -> int:
    """Remove working directories left by runs that died (call it holding the directory's lock:
    no live run owns one then); returns how many there were."""
    if not out_dir.is_dir():
        return 0
    stale = [p for p in out_dir.iterdir() if p.name.startswith(WORK_PREFIX) and p.is_dir()]
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return len(stale)


#: rows per Parquet row group: fixed, so the files do not depend on how runs were batched
ROW_GROUP_ROWS = 65_536
#: rows per record batch when a written shard is copied (E-154): a whole row group decoded at
#: once held several times its own size (measured), a few thousand rows at a time do not
COPY_BATCH_ROWS = 8_192


def _arrow_schema(schema: pl.Schema | dict[str, Any]) -> pa.Schema:
    return pl.DataFrame(schema=schema).to_arrow().schema


#: how every table is written (what a copied row group must have been written with, E-156)
_PARQUET_OPTIONS: dict[str, Any] = {"compression": "zstd", "write_statistics": False}


class TableWriter:
    """Appends row batches, already in output order, to one Parquet file in row groups of
    `ROW_GROUP_ROWS` rows, so the bytes depend only on the rows. Its first row groups may be
    those of a previous file, copied as they are (`copy_leading`, E-156)."""

    def __init__(
        self, path: Path, schema: pl.Schema | dict[str, Any], table: str | None = None
    ) -> None:
        self.path = path
        self.schema = pl.Schema(schema)
        self.arrow_schema = _arrow_schema(self.schema)
        if table is not None:  # which table, and which version of its columns (tables.py)
            self.arrow_schema = self.arrow_schema.with_metadata(output_format.metadata(table))
        self.writer = pq.ParquetWriter(path, self.arrow_schema, **_PARQUET_OPTIONS)
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.rows = 0
        self.leading: parquet_splice.Prefix | None = None
        self.layout: parquet_splice.Layout | None = None

    def copy_leading(self, previous: Path, below: str | None) -> int:
        """Begin the file with the leading row groups of the `previous` file of this table that
        hold only rows whose run_id is below `below` (None: any), copied as they are (E-156);
        the rows written after are the ones that follow them. Returns how many row groups
        (none when the previous file was written otherwise: every row is then written)."""
        if self.rows or self.pending_rows:
            raise ValueError("copy_leading comes before the first row")
        self.layout = parquet_splice.Layout.of(self.arrow_schema, **_PARQUET_OPTIONS)
        self.leading = parquet_splice.leading_row_groups(
            previous, self.layout, ROW_GROUP_ROWS, below
        )
        return self.leading.row_groups if self.leading is not None else 0

    def write(self, frame: pl.DataFrame) -> None:
        if frame.height == 0:
            return
        self.write_arrow(frame.select(list(self.schema)).cast(self.schema).to_arrow())

    def write_arrow(self, rows: pa.Table) -> None:
        """Append rows already in Arrow form, with the table's columns (as a file this writer
        wrote reads back): the same bytes as `write` of the same rows."""
        if rows.num_rows == 0:
            return
        self.pending.append(rows.select(self.arrow_schema.names).cast(self.arrow_schema))
        self.pending_rows += rows.num_rows
        self.rows += rows.num_rows
        if self.pending_rows >= ROW_GROUP_ROWS:
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        table = pa.concat_tables(self.pending)
        whole = table.num_rows if final else table.num_rows - table.num_rows % ROW_GROUP_ROWS
        for start in range(0, whole, ROW_GROUP_ROWS):
            chunk = table.slice(start, min(ROW_GROUP_ROWS, whole - start)).combine_chunks()
            self.writer.write_table(chunk, row_group_size=ROW_GROUP_ROWS)
        rest = table.slice(whole)
        self.pending = [rest] if rest.num_rows else []
        self.pending_rows = rest.num_rows

    def close(self) -> None:
        if self.pending:
            self._flush(final=True)
        self.writer.close()
        if self.leading is not None and self.layout is not None:
            joined = self.path.with_name(f"{self.path.name}.joined")
            parquet_splice.join(self.leading, self.path, joined, self.layout)
            os.replace(joined, self.path)

    def discard(self) -> None:
        """Close after a failure, whatever state the file is in (never raises: the caller is
        already handling an error and removes the file)."""
        self.pending = []
        with contextlib.suppress(Exception):  # Arrow raises its own types as well as OSError
            self.writer.close()


@dataclass(frozen=True)
class WrittenShard:
    """The rows of one batch a worker wrote itself (E-154): its trials and tasks as Parquet, its
    lines of summaries.jsonl (a line still to be completed marked as `OutputWriter.add` marks
    it), in the working directory, for `OutputWriter.add_written` to copy in order."""

    trials: Path
    tasks: Path
    summaries: Path

    def remove(self) -> None:
        for path in (self.trials, self.tasks, self.summaries):
            path.unlink(missing_ok=True)


def _arrow_rows(path: Path) -> Iterator[pa.Table]:
    """The rows of a Parquet file a few thousand at a time, as Arrow (never whole row groups:
    the driver's memory while it copies shards, E-154)."""
    parquet = pq.ParquetFile(path)
    for batch in parquet.iter_batches(batch_size=COPY_BATCH_ROWS, use_threads=False):
        yield pa.Table.from_batches([batch])


def write_table(
    path: Path, frame: pl.DataFrame, table: str | None = None, schema: pl.Schema | None = None
) -> None:
    """One whole table into `path` (in `schema`, else the frame's own); the file is closed
    whatever happens, and a failed one is left for the caller to remove."""
    writer = TableWriter(path, schema if schema is not None else frame.schema, table)
    try:
        writer.write(frame)
        writer.close()
    except BaseException:
        writer.discard()
        raise


def summary_line(run_id: str, summary: dict[str, Any]) -> str:
    """One line of summaries.jsonl: {"runId": ..., "summary": ...}."""
    return json.dumps({"runId": run_id, "summary": summary}, ensure_ascii=False) + "\n"


#: marks, in the working copy of summaries.jsonl, a summary finished after the last batch
_PENDING = "\x00"
_PENDING_BYTES = _PENDING.encode("ascii")


def marked_lines(
    summaries: Sequence[tuple[str, str]], pending: set[str] | frozenset[str]
) -> list[tuple[str, str]]:
    """Lines of summaries.jsonl as the working copy holds them: a `pending` run's line is a
    mark, replaced by its completed summary in `finish` (§5: its regression block)."""
    return [
        (run_id, _PENDING + json.dumps(run_id) + "\n" if run_id in pending else line)
        for run_id, line in summaries
    ]


#: errors of `os.link` that mean "no hard links here", not "the disk is full"
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK}
#: the prefix, in the working directory, of a hard link to a file about to be replaced
_PREVIOUS = "previous."
#: what the marker says to whoever opens it (paths and content of the outputs aside)
_INCOMPLETE_TEXT = (
    "evalbatch run is putting its outputs in place here, or died doing it: until this file is "
    "gone the files may be of two runs and every reader refuses the directory; run it again "
    "(E-119)\n"
)
#: errors of fsync on a directory that mean "not supported here", not a failed write
_NO_DIRECTORY_SYNC = {errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EBADF}


def _sync(path: Path, directory: bool = False) -> None:
    """Flush `path` (a file's data, or a directory's entries) to the disk."""
    handle = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(handle)
    except OSError as exc:
        if not directory or exc.errno not in _NO_DIRECTORY_SYNC:
            raise
    finally:
        os.close(handle)


def mark_incomplete(out_dir: Path) -> None:
    """Create the marker of E-119 in `out_dir`, durably (its data and its directory entry synced),
    before the first output file is replaced; a link at its name is not followed (ELOOP)."""
    path = out_dir / INCOMPLETE_FILE
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    handle = os.open(path, flags, file_mode())
    try:
        os.write(handle, _INCOMPLETE_TEXT.encode("ascii"))
        os.fsync(handle)
    finally:
        os.close(handle)
    _sync(out_dir, directory=True)


def replace_manifest(out_dir: Path, manifest: Manifest) -> None:
    """Put `manifest` in place of the one in `out_dir`, whose output files it describes as the
    old one does (E-156: a night that keeps the outputs as they are records their identity as
    found): one rename, so a reader sees either, each true of the files. A failed write leaves
    the old one and nothing else (E-72)."""
    work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=out_dir))
    try:
        (work / MANIFEST_FILE).write_text(manifest.text(), encoding="utf-8")
        _sync(work / MANIFEST_FILE)
        os.chmod(work / MANIFEST_FILE, file_mode())
        os.replace(work / MANIFEST_FILE, out_dir / MANIFEST_FILE)
        _sync(out_dir, directory=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: what describes the previous outputs, removed before any file is replaced (and put back, the
#: manifest last, when a rename fails): a run that writes none leaves none of the old ones
_REPLACED = (MANIFEST_FILE, RUN_INPUTS_FILE)


class OutputWriter:
    """Writes the outputs of a grading pass batch by batch (batches come in run-id order).

    Any `OSError` (a full disk included) from any method leaves the output directory as it was
    once `abort` has run; `abort` itself never raises.
    """

    def __init__(self, out_dir: str | Path) -> None:
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=self.out))
        self.summaries: Any = None
        self.trials: TableWriter | None = None
        self.tasks: TableWriter | None = None
        self.tasks_closed = False
        try:
            self.summaries = (self.work / "summaries.partial").open("wb")
            self.trials = TableWriter(self.work / table_file("trials"), TRIAL_SCHEMA, "trials")
            self.tasks = TableWriter(self.work / table_file("tasks"), TASK_SCHEMA, "tasks")
        except BaseException:
            self.abort()
            raise

    def copy_leading(self, previous: Path, below: str | None) -> dict[str, int]:
        """Begin the trials and tasks tables with the leading row groups of their `previous`
        files (an output directory) that hold only runs below `below` (None: any), copied as they
        are (E-156): the rows added after are those that follow. Returns, per table, how many
        row groups were copied."""
        assert self.trials is not None and self.tasks is not None
        return {
            "trials": self.trials.copy_leading(previous / table_file("trials"), below),
            "tasks": self.tasks.copy_leading(previous / table_file("tasks"), below),
        }

    def add(
        self,
        summaries: list[tuple[str, str]],
        trials: pl.DataFrame,
        tasks: pl.DataFrame,
        pending: set[str] | frozenset[str] = frozenset(),
        carried: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        """Append a batch: `summaries` holds (runId, line of summaries.jsonl) in runId order;
        summaries of `pending` runs are completed in `finish` (regression). `carried` holds lines
        kept from the previous outputs (an incremental run), as the file held them, merged in
        runId order with the batch's own; `trials` and `tasks` already hold the carried rows of
        the batch's runs."""
        assert self.trials is not None and self.tasks is not None
        lines = [(run, line.encode("utf-8")) for run, line in marked_lines(summaries, pending)]
        if carried:
            lines = sorted([*lines, *carried], key=lambda item: item[0])
        for _, line in lines:
            self.summaries.write(line)
        self.trials.write(trials)
        self.tasks.write(tasks)

    def add_written(self, shard: WrittenShard) -> None:
        """Append a batch a worker wrote (E-154), in run-id order as `add`'s: its summary lines as
        they are, its trials and tasks a few thousand rows at a time, so the files are those
        `add` would have written from the same rows; the shard's files are removed once copied."""
        assert self.trials is not None and self.tasks is not None
        with shard.summaries.open("rb") as lines:
            for line in lines:
                self.summaries.write(line)
        for rows in _arrow_rows(shard.trials):
            self.trials.write_arrow(rows)
        for rows in _arrow_rows(shard.tasks):
            self.tasks.write_arrow(rows)
        shard.remove()

    def task_rows(self, run_ids: list[str]) -> pl.DataFrame:
        """The task rows written for `run_ids`, read back (for the regression pairs, §5: a
        baseline may sit in any batch). The tasks table is complete from here on: no batch is
        added after this."""
        assert self.tasks is not None
        if not self.tasks_closed:
            self.tasks.close()
            self.tasks_closed = True
        path = self.work / table_file("tasks")
        keep = pl.col("run_id").is_in(run_ids)
        return pl.scan_parquet(path).filter(keep).collect().cast(TASK_SCHEMA)

    def finish(
        self,
        pending: dict[str, dict[str, Any]],
        runs: pl.DataFrame,
        problems: pl.DataFrame,
        manifest: Manifest | None = None,
        run_inputs: RunInputs | None = None,
    ) -> dict[str, Path]:
        """Complete every file and rename each into the output directory.

        `manifest` (an incremental run's) gets each finished file's size, sha256 and rows, so
        the next incremental run can check them before carrying a row (E-71), and its identity
        once in place (E-156). The previous `manifest.json` goes first and the new one comes
        last, so a crash in between leaves no manifest and the next incremental run grades
        everything rather than trusting rows that may have been replaced. `run_inputs`, what
        the run was given, is recorded with the sha256 of the summaries written (E-118); the
        previous record goes with the previous manifest, so a directory never holds the record
        of other outputs."""
        assert self.trials is not None and self.tasks is not None
        self.summaries.close()
        with (
            (self.work / "summaries.partial").open("rb") as partial,
            (self.work / SUMMARIES_FILE).open("wb") as final,
        ):
            for line in partial:
                if line.startswith(_PENDING_BYTES):
                    run_id = json.loads(line[1:])
                    line = summary_line(run_id, pending[run_id]).encode("utf-8")
                final.write(line)
        (self.work / "summaries.partial").unlink()
        self.trials.close()
        if not self.tasks_closed:
            self.tasks.close()
            self.tasks_closed = True
        for name, frame in (("runs", runs), ("problems", problems)):
            write_table(self.work / table_file(name), frame, name)
        names = list(OUTPUT_FILES)
        records = {name: describe_file(self.work / name) for name in OUTPUT_FILES}
        if run_inputs is not None:
            summaries_sha256 = records[SUMMARIES_FILE].sha256
            (self.work / RUN_INPUTS_FILE).write_text(
                run_inputs.text(summaries_sha256), encoding="utf-8"
            )
            names.append(RUN_INPUTS_FILE)
        if manifest is not None:
            manifest.files = records
            names.append(MANIFEST_FILE)
        self._put_in_place(names, manifest)
        shutil.rmtree(self.work, ignore_errors=True)
        written = {name.split(".")[0]: self.out / name for name in names}
        return written

    def _put_in_place(self, names: list[str], manifest: Manifest | None = None) -> None:
        """Rename each finished file over its previous version, the manifest last (the old one
        is removed first, as are the record of the previous run's inputs and the report and
        export files made from the previous tables, `DERIVED_FILES`: stale from now on), inside
        the commit of E-119: the files are synced, the marker is created, the directory changes,
        is synced, and the marker goes. The manifest (when `names` holds it) is written once the
        other files are in place, with each one's identity there (E-156). Each file about to be
        replaced or removed is first hard-linked into the working directory, so when a rename
        fails the ones already done are undone and the directory is as it was, marker included
        (where the file system has no hard links, a failed rename can only stop, and the marker
        stays)."""
        derived = [name for name in DERIVED_FILES if (self.out / name).is_file()]
        kept: dict[str, Path] = {}
        absent: set[str] = set()
        for name in dict.fromkeys([*names, *_REPLACED, *derived]):
            backup = self.work / f"{_PREVIOUS}{name}"
            try:
                os.link(self.out / name, backup, follow_symlinks=False)
            except FileNotFoundError:
                absent.add(name)  # nothing there before
                continue
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise  # nothing is replaced yet
                continue
            kept[name] = backup
        for name in names:
            if name != MANIFEST_FILE:  # written in place below, once the others are renamed
                _sync(self.work / name)
        marked_before = os.path.lexists(self.out / INCOMPLETE_FILE)
        try:
            mark_incomplete(self.out)
        except OSError:
            if not marked_before:  # nothing is replaced yet: leave no marker either
                with contextlib.suppress(OSError):
                    (self.out / INCOMPLETE_FILE).unlink(missing_ok=True)
            raise
        removed = [*_REPLACED, *derived]
        done: list[str] = []
        try:
            for name in removed:
                (self.out / name).unlink(missing_ok=True)
            for name in names:
                if name == MANIFEST_FILE and manifest is not None:
                    self._write_manifest(manifest)
                os.chmod(self.work / name, file_mode())
                os.replace(self.work / name, self.out / name)
                done.append(name)
            _sync(self.out, directory=True)
            (self.out / INCOMPLETE_FILE).unlink()
            _sync(self.out, directory=True)
        except OSError:
            restored = self._put_back(done, removed, kept, absent)
            with contextlib.suppress(OSError):
                if restored and not marked_before:
                    (self.out / INCOMPLETE_FILE).unlink(missing_ok=True)
                else:  # what the directory holds now is not one run's: readers must refuse it
                    mark_incomplete(self.out)
            raise

    def _write_manifest(self, manifest: Manifest) -> None:
        """Write `manifest` into the working directory, each output file's record with the
        identity of the file now in place (E-156: renaming it moved its status-change time)."""
        manifest.files = {
            name: record.in_place((self.out / name).stat())
            for name, record in manifest.files.items()
        }
        (self.work / MANIFEST_FILE).write_text(manifest.text(), encoding="utf-8")
        _sync(self.work / MANIFEST_FILE)

    def _put_back(
        self, done: list[str], removed: list[str], kept: dict[str, Path], absent: set[str]
    ) -> bool:
        """Undo the renames `done`, then the removals `removed` in reverse: the report and export
        files, the record of the previous run's inputs, the previous manifest last (best effort:
        never raises). Returns whether the directory is as it was (not where a previous file
        could not be kept aside: no hard links)."""
        restored = True
        for name in reversed(done):
            try:
                if name in kept:
                    os.replace(kept[name], self.out / name)
                else:
                    (self.out / name).unlink()
                    restored = restored and name in absent
            except OSError:
                restored = False
        for name in reversed(removed):
            if name in done:
                continue  # put back with the renames
            if name in kept:
                try:
                    os.replace(kept[name], self.out / name)
                except OSError:
                    restored = False
            elif name not in absent:
                restored = False  # it was there, no hard link kept it, and it is gone
        return restored

    def abort(self) -> None:
        """Leave the output directory as it was: close what is open and remove the working
        directory. Never raises: it runs while another error (often a full disk, which makes
        closing fail too) is being handled."""
        if self.summaries is not None:
            with contextlib.suppress(OSError, ValueError):
                self.summaries.close()
        if self.trials is not None:
            self.trials.discard()
        if self.tasks is not None:
            self.tasks.discard()
        shutil.rmtree(self.work, ignore_errors=True)
