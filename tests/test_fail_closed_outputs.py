"""Fail closed: the nightly job cannot lose a night, and writes fail closed
(decisions E-70..E-75).

- `run` that selects no eval run exits 2 and leaves the outputs as they were (E-70);
- `--incremental` carries no row from a previous file that is not exactly the one its manifest
  records: a full regrade instead, saying which file failed which check (E-71);
- a full disk at any write point is exit code 4, the previous outputs byte for byte as they were
  and nothing left behind (E-72), for `run`, `files.write_atomic` (report, export) and `ingest`;
- the lock file is never written through a symbolic link (E-73);
- files inside `--out` are never read as events (E-74);
- `ingest`: a damaged gzip stream is one problem for its file, and a killed ingest's working
  directory is cleared by the next one (E-75); one killed between two links into place leaves
  its marker, which readers refuse and the next ingest undoes (E-122).
"""

from __future__ import annotations

import errno
import fcntl
import gzip
import io
import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from evalbatch import api, files
from evalbatch.errors import OutputError
from evalbatch.inputs import ingest, parquet_layout
from evalbatch.outputs import outdir, writer
from tests.helpers import (
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    directory_state,
    fail_at_call,
    ingested_parts,
    interleaved_sample_lines,
    night_inputs,
    read_outputs,
    run_killed,
    run_main,
    standard_run,
    truncate_half,
    write_events,
)

#: a slow family (full disks and damaged outputs at every write):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow


def _full_disk(*args: Any, **kwargs: Any) -> Any:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Yesterday's input (3 runs) and tonight's (5 runs), one suite."""
    return night_inputs(tmp_path_factory.mktemp("nights"), range(5))


def _yesterday(nights: dict[str, Path], out: Path) -> dict[str, bytes]:
    """Yesterday's outputs (and manifest) in `out`, as the directory holds them."""
    api.write_outputs([nights["yesterday"]], out, [nights["suites"]], incremental_run=True)
    return directory_state(out)


# --------------------------------------------------------------------------------------------
# E-70: a run that selects nothing never replaces the outputs, never exits 0


@pytest.mark.parametrize(
    "flags",
    [
        ["--suite-id", str(SAMPLE_SUITES), "--incremental"],  # --suite-id (a filter) for --suites
        ["--since", "2030-01-01"],
        ["--run-id", "acme/no-such-run*", "--incremental"],
    ],
    ids=["suite-for-suites", "since-future", "run-id"],
)
def test_e70_run_selecting_no_eval_run_exits_2_and_keeps_the_outputs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
) -> None:
    """E-70: yesterday's outputs of 3 runs are not replaced by 0 runs with exit code 0."""
    out = tmp_path / "out"
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES], incremental_run=True)
    before = directory_state(out)
    code, stdout, stderr = run_main(
        monkeypatch, capsys, "run", SAMPLE_EVENTS, "--out", out, "--quiet", *flags
    )
    assert code == 2, (stdout, stderr)
    assert "nothing to grade: no eval run" in stderr and "matches the run filters" in stderr
    assert "--allow-empty" in stderr and len(stderr.strip().splitlines()) == 1
    assert directory_state(out) == before


def test_e70_nothing_selected_in_a_fresh_directory_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-70: events holding no eval run (no eval.started) grade nothing: exit 2, no directory
    made, rather than empty outputs and exit code 0."""
    rows = [r for r in standard_run("acme/run-0001").rows if r["type"] != "eval.started"]
    events = write_events(tmp_path / "e.parquet", rows)
    out = tmp_path / "out"
    code, _, stderr = run_main(monkeypatch, capsys, "run", events, "--out", out)
    assert code == 2 and "nothing to grade: no eval run (no eval.started)" in stderr
    assert not out.exists()


def test_e70_allow_empty_writes_empty_outputs_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-70: --allow-empty says an empty selection is expected: empty outputs, exit 0."""
    out = tmp_path / "out"
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    code, stdout, stderr = run_main(
        monkeypatch,
        capsys,
        "run",
        SAMPLE_EVENTS,
        "--suites",
        SAMPLE_SUITES,
        "--out",
        out,
        "--since",
        "2030-01-01",
        "--allow-empty",
    )
    assert code == 0, stderr
    assert "wrote 0 summaries" in stdout
    assert (out / "summaries.jsonl").read_bytes() == b""
    assert pq.read_metadata(out / "runs.parquet").num_rows == 0


# --------------------------------------------------------------------------------------------
# E-71: an incremental run checks every previous file before it carries a row from it


def _torn(out: Path) -> None:
    data = (out / "summaries.jsonl").read_bytes()
    (out / "summaries.jsonl").write_bytes(data[:-10])  # the last line cut


def _lines_missing(out: Path) -> None:
    lines = (out / "summaries.jsonl").read_bytes().splitlines(keepends=True)
    (out / "summaries.jsonl").write_bytes(b"".join(lines[:1]))


def _flip_byte(name: str, where: float) -> Callable[[Path], None]:
    """Change one byte of `name` (same size; at 1/4 it is inside the data, not the footer)."""

    def damage(out: Path) -> None:
        data = bytearray((out / name).read_bytes())
        data[int(len(data) * where)] ^= 0xFF
        (out / name).write_bytes(bytes(data))

    return damage


def _hand_edit(out: Path) -> None:
    """A summary's score changed by hand, the file the same size."""
    text = (out / "summaries.jsonl").read_text()
    assert '"passed": true' in text
    (out / "summaries.jsonl").write_text(text.replace('"passed": true', '"passed": 1   ', 1))


def _old_format(out: Path) -> None:
    doc = json.loads((out / "manifest.json").read_text())
    doc["format"] = 1
    del doc["files"]
    (out / "manifest.json").write_text(json.dumps(doc))


DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "summaries-torn": (_torn, "summaries.jsonl: its last line is not whole"),
    "summaries-lines-missing": (_lines_missing, "summaries.jsonl: 1 lines, manifest.json records"),
    "summaries-hand-edited": (_hand_edit, "summaries.jsonl: its sha256 is not the one"),
    "trials-page-damaged": (_flip_byte("trials.parquet", 0.25), "trials.parquet: its sha256"),
    "trials-truncated": (truncate_half("trials.parquet"), "trials.parquet: not a readable Parquet"),
    "runs-truncated": (truncate_half("runs.parquet"), "runs.parquet: not a readable Parquet"),
    "tasks-page-damaged": (_flip_byte("tasks.parquet", 0.25), "tasks.parquet: its sha256"),
    "problems-removed": (lambda out: (out / "problems.parquet").unlink(), "problems.parquet: miss"),
    "old-manifest-format": (_old_format, "manifest.json: format 1, this evalbatch reads format 2"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_e71_damaged_previous_outputs_mean_a_full_regrade_saying_why(
    nights: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    damage: str,
) -> None:
    """E-71: a previous file that is not exactly the one the manifest records is never carried
    from (a torn or shortened summaries.jsonl was carried with exit 0; a damaged trials.parquet
    made every later run exit 2): the run grades everything, says which file failed which check,
    and writes what a full regrade writes. The next incremental run carries again."""
    out = tmp_path / "out"
    _yesterday(nights, out)
    damage_fn, reason = DAMAGES[damage]
    damage_fn(out)
    args = ["run", nights["tonight"], "--suites", nights["suites"], "--out", out, "--quiet"]
    code, stdout, stderr = run_main(monkeypatch, capsys, *args, "--incremental")
    assert code == 0, stderr
    # with --quiet the reason is still told, on stderr (E-107); stdout stays empty
    assert stdout == ""
    assert "note: full regrade: graded 5 new or changed eval runs, kept 0 unchanged (" in stderr
    assert reason in stderr
    fresh = tmp_path / "fresh"
    api.write_outputs([nights["tonight"]], fresh, [nights["suites"]])
    assert read_outputs(out) == read_outputs(fresh)
    code, stdout, _ = run_main(monkeypatch, capsys, *args[:-1], "--incremental")
    assert "incremental: graded 0 new or changed eval runs, kept 5 unchanged" in stdout


# --------------------------------------------------------------------------------------------
# E-72: a full disk at any write point


class _FullFile(io.TextIOBase):
    """A text file on a full disk: the `fail_at`th write fails, and closing (a flush of what
    is buffered) fails once too, as a real full disk does."""

    def __init__(self, real: Any, fail_at: int) -> None:
        self.real = real
        self.fail_at = fail_at
        self.writes = 0
        self.failed = False

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes >= self.fail_at:
            self.failed = True
            _full_disk()
        return self.real.write(text)

    def close(self) -> None:
        if self.failed and not self.real.closed:
            self.real.close()
            _full_disk()
        self.real.close()

    @property
    def closed(self) -> bool:
        return self.real.closed

    def __iter__(self) -> Any:
        return iter(self.real)

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fail_file_writes(monkeypatch: pytest.MonkeyPatch, name: str, fail_at: int = 1) -> None:
    """Writes to the file called `name` (opened with Path.open) hit a full disk."""
    real_open = Path.open

    def opening(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(self, mode, *args, **kwargs)
        return _FullFile(handle, fail_at) if self.name == name and "w" in mode else handle

    monkeypatch.setattr(Path, "open", opening)


def _fail_table(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Closing (writing the footer of) the Parquet file `name` hits a full disk."""
    real_close = pq.ParquetWriter.close

    def closing(self: pq.ParquetWriter) -> None:
        if Path(str(self.where)).name == name and self.is_open:
            real_close(self)
            _full_disk()
        real_close(self)

    monkeypatch.setattr(pq.ParquetWriter, "close", closing)


def _fail_nth(monkeypatch: pytest.MonkeyPatch, owner: Any, attr: str, nth: int) -> None:
    """The `nth` call of `owner.attr` hits a full disk."""
    fail_at_call(monkeypatch, owner, attr, nth, OSError(errno.ENOSPC, "No space left on device"))


def _fail_rename(nth: int) -> Callable[[pytest.MonkeyPatch], None]:
    return lambda m: _fail_nth(m, writer.os, "replace", nth)


WRITE_POINTS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "work-directory": lambda m: _fail_nth(m, writer.tempfile, "mkdtemp", 1),
    "trials-writer-open": lambda m: _fail_nth(m, writer.pq, "ParquetWriter", 1),
    "summaries-partial-first-write": lambda m: _fail_file_writes(m, "summaries.partial", 1),
    "summaries-partial-later-write": lambda m: _fail_file_writes(m, "summaries.partial", 3),
    "summaries-final": lambda m: _fail_file_writes(m, "summaries.jsonl", 2),
    "trials-rows": lambda m: _fail_nth(m, pq.ParquetWriter, "write_table", 1),
    "trials-footer": lambda m: _fail_table(m, "trials.parquet"),
    "runs-table": lambda m: _fail_table(m, "runs.parquet"),
    "tasks-table": lambda m: _fail_table(m, "tasks.parquet"),
    "problems-table": lambda m: _fail_table(m, "problems.parquet"),
    "manifest": lambda m: _fail_nth(m, Path, "write_text", 1),
    "keeping-previous": lambda m: _fail_nth(m, writer.os, "link", 3),
    **{f"rename-{n}": _fail_rename(n) for n in range(1, 7)},
}


@pytest.mark.parametrize("point", list(WRITE_POINTS))
def test_e72_full_disk_at_every_write_point_is_exit_4_and_changes_nothing(
    nights: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    point: str,
) -> None:
    """E-72: ENOSPC while the work directory is made, any file is written, the manifest is
    written, the previous files are kept aside, or at any of the six renames: exit code 4 with
    one line, yesterday's files (manifest included) byte for byte as they were, and no
    `.evalbatch-*` directory or temporary file left (abort used to raise again and keep it)."""
    out = tmp_path / "out"
    before = _yesterday(nights, out)
    WRITE_POINTS[point](monkeypatch)
    code, _, stderr = run_main(
        monkeypatch,
        capsys,
        "run",
        nights["tonight"],
        "--suites",
        nights["suites"],
        "--out",
        out,
        "--incremental",
        "--batch-events",
        "30",
        "--quiet",
    )
    assert code == 4, stderr
    assert "could not be written: No space left on device [ENOSPC]" in stderr
    assert "internal error" not in stderr and len(stderr.strip().splitlines()) == 1
    assert directory_state(out) == before


def test_e72_writer_abort_never_raises(tmp_path: Path) -> None:
    """E-72: abort after a full disk (the summaries buffer cannot be flushed) still removes the
    working directory and raises nothing."""
    files = writer.OutputWriter(tmp_path)
    files.summaries = _FullFile(files.summaries, 1)
    with pytest.raises(OSError):
        files.summaries.write("x")
    files.abort()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("point", ["write", "rename"])
def test_e72_write_atomic_full_disk_is_output_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """E-72 (`report`, `export` write through files.write_atomic, E-132): OutputError (exit code
    4), the previous file unchanged, no temporary file."""
    target = tmp_path / "report.html"
    target.write_text("yesterday")
    if point == "write":
        real_open = open
        full = lambda *a, **k: _FullFile(real_open(*a, **k), 2)  # noqa: E731
        monkeypatch.setattr(files, "open", full, raising=False)
    else:
        monkeypatch.setattr(files.os, "replace", _full_disk)
    with pytest.raises(OutputError, match="No space left on device"):
        files.write_atomic(target, iter(["a", "b", "c"]))
    assert OutputError.exit_code == 4
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    assert target.read_text() == "yesterday"


def test_e72_report_on_a_full_disk_exits_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-72: `evalbatch report` on a full disk: exit code 4, one line, no internal error."""
    out = tmp_path / "out"
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    before = directory_state(out)
    monkeypatch.setattr(outdir.os, "replace", _full_disk)
    code, _, stderr = run_main(monkeypatch, capsys, "report", out)
    assert code == 4, stderr
    assert "internal error" not in stderr and "No space left on device" in stderr
    assert directory_state(out) == before


# --------------------------------------------------------------------------------------------
# E-73: the lock file is never followed through a symbolic link


def test_e73_a_symlinked_lock_file_is_refused_and_its_target_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-73: `ln -s victim OUT/.evalbatch.lock` used to have the victim's content replaced by
    the holder's pid and host."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".evalbatch.lock").symlink_to(victim)
    code, _, stderr = run_main(
        monkeypatch, capsys, "run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", out
    )
    assert code == 4, stderr
    assert "lock file is a symbolic link; refusing to follow it" in stderr
    assert victim.read_text() == "precious\n"
    assert (out / ".evalbatch.lock").is_symlink()
    assert sorted(p.name for p in out.iterdir()) == [".evalbatch.lock"]


# --------------------------------------------------------------------------------------------
# E-74: --out inside an input directory


def test_e74_out_inside_the_input_directory_is_not_read_as_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-74: the second run used to read the first one's tables as event files (exit code 3,
    columns-missing); files inside --out are skipped, so every night grades the same."""
    events = tmp_path / "events"
    for path in SAMPLE_EVENTS.glob("*.parquet"):
        (events / path.name).parent.mkdir(parents=True, exist_ok=True)
        (events / path.name).write_bytes(path.read_bytes())
    out = events / "graded"
    args = ["run", events, "--suites", SAMPLE_SUITES, "--out", out, "--quiet"]
    for _ in range(2):
        code, _, stderr = run_main(monkeypatch, capsys, *args)
        assert code == 0, stderr
        (out / "extra.parquet").write_bytes(b"not events either")  # anything inside --out
    fresh = tmp_path / "fresh"
    api.write_outputs([SAMPLE_EVENTS], fresh, [SAMPLE_SUITES])
    assert read_outputs(out) == read_outputs(fresh)
    glob_code, _, stderr = run_main(
        monkeypatch, capsys, "run", f"{events}/**/*.parquet", "--suites", SAMPLE_SUITES,
        "--out", out, "--quiet",
    )  # fmt: skip
    assert glob_code == 0, stderr


def test_e74_only_files_inside_out_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-74: an input that holds nothing but the outputs is refused (exit 2), not graded as
    events."""
    out = tmp_path / "out"
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    before = directory_state(out)
    code, _, stderr = run_main(monkeypatch, capsys, "run", out, "--out", out)
    assert code == 2 and "every event file given is inside --out" in stderr
    assert directory_state(out) == before


# --------------------------------------------------------------------------------------------
# E-75: ingest


def _ndjson(path: Path, run_id: str) -> Path:
    rows = standard_run(run_id).rows
    lines = [
        json.dumps({"runId": r["runId"], "sequence": r["sequence"], "type": r["type"]})
        for r in rows
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_e75_ingest_damaged_gzip_is_one_problem_and_the_rest_is_ingested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-75: a gzip header over a damaged stream stopped the whole command with an internal
    error; now it is one problem for that file (exit code 3) and the good file is ingested."""
    good = _ndjson(tmp_path / "in" / "a-good.ndjson", "acme/run-good")
    packed = gzip.compress(_ndjson(tmp_path / "src.ndjson", "acme/run-bad").read_bytes())
    (tmp_path / "in" / "b-bad.ndjson.gz").write_bytes(packed[:20] + bytes(len(packed) - 20))
    out = tmp_path / "out"
    code, stdout, stderr = run_main(monkeypatch, capsys, "ingest", tmp_path / "in", "--out", out)
    assert code == 3, stderr
    assert "b-bad.ndjson.gz: cannot be read (damaged gzip data) [input-unreadable]" in stderr
    assert "internal error" not in stderr
    assert [p.name for p in out.iterdir()] == ["runId=acme%2Frun-good"]
    assert f"from 2 files into {out}/ (1 problem)" in stdout
    assert good.exists()


@pytest.mark.parametrize("point", ["part", "link"])
def test_e75_ingest_on_a_full_disk_exits_4_and_adds_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    point: str,
) -> None:
    """E-75: ENOSPC while a part is written or linked into place: exit code 4 (not an internal
    error, nor a problem of the input being read), the directory as it was, no `.ingest-*`."""
    out = tmp_path / "out"
    ingest.ingest_paths([_ndjson(tmp_path / "old.ndjson", "acme/run-old")], out)
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    inputs = [_ndjson(tmp_path / f"{n}.ndjson", f"acme/run-{n}") for n in ("a", "b", "c")]
    if point == "part":
        _fail_nth(monkeypatch, parquet_layout.pq, "write_table", 2)
    else:  # the second part cannot be linked, nor renamed (the fallback without hard links)
        _fail_nth(monkeypatch, parquet_layout.os, "link", 2)
        monkeypatch.setattr(parquet_layout.os, "replace", _full_disk)
    code, _, stderr = run_main(monkeypatch, capsys, "ingest", *inputs, "--out", out)
    assert code == 4, stderr
    assert "No space left on device" in stderr and "internal error" not in stderr
    assert "[input-unreadable]" not in stderr
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before


KILLED_INGEST = textwrap.dedent(
    """
    import os, signal, sys
    import pyarrow.parquet as pq
    from evalbatch.inputs import ingest

    def killed(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    pq.write_table = killed
    ingest.ingest_paths([sys.argv[1]], sys.argv[2])
    """
)


def test_e75_a_killed_ingests_directory_is_cleared_by_the_next(tmp_path: Path) -> None:
    """E-75: a killed ingest left `.ingest-*` behind for ever; the next ingest into the same
    directory removes it (its flock died with its process), and keeps a live one's."""
    source = _ndjson(tmp_path / "a.ndjson", "acme/run-a")
    out = tmp_path / "out"
    run_killed(KILLED_INGEST, source, out)
    left = [p.name for p in out.iterdir() if p.name.startswith(parquet_layout.WORK_PREFIX)]
    assert len(left) == 1
    live = out / f"{parquet_layout.WORK_PREFIX}live"
    live.mkdir()
    held = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # a live ingest's (another open file: flock conflicts)
        ingest.ingest_paths([source], out)
        names = sorted(p.name for p in out.iterdir())
    finally:
        os.close(held)
    assert names == [live.name, "runId=acme%2Frun-a"]


KILLED_AT_LINK = textwrap.dedent(
    """
    import os, signal, sys
    from evalbatch.inputs import ingest

    real, calls = os.link, [0]

    def link(*args, **kwargs):
        calls[0] += 1
        if calls[0] == int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)

    os.link = link
    ingest.ingest_paths([sys.argv[1]], sys.argv[2], flush_rows=20)
    """
)


@pytest.mark.parametrize("at", [2, 9, 30])
def test_e120_an_ingest_killed_between_two_links_is_refused_until_the_next_undoes_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    at: int,
) -> None:
    """E-75, E-122: an ingest killed (SIGKILL) at a link left some of its parts in place, and
    `run` graded them as a whole log, a run's first parts without the rest among them. Its
    marker stays: every reader refuses the directory (`run` exit code 2 naming it, and 3 with
    another input, graded), and the next ingest into it undoes what was linked before adding its
    own, so the directory ends as a clean ingest's."""
    source = interleaved_sample_lines(tmp_path / "in")
    clean = tmp_path / "clean"
    ingest.ingest_paths([source], clean, flush_rows=20)
    out = tmp_path / "out"
    run_killed(KILLED_AT_LINK, source, out, str(at))
    assert (out / parquet_layout.INCOMPLETE).is_file()
    linked = sorted(str(p.relative_to(out)) for p in out.glob("*/part-*.parquet"))
    assert 0 < len(linked) < len(list(clean.glob("*/part-*.parquet")))

    suites = ["--suites", SAMPLE_SUITES, "-q"]
    code, _, stderr = run_main(monkeypatch, capsys, "run", out, *suites, "--out", tmp_path / "r1")
    assert code == 2 and f"{out}: an ingest into it was interrupted or is running" in stderr
    code, _, stderr = run_main(
        monkeypatch, capsys, "run", out, SAMPLE_EVENTS, *suites, "--out", tmp_path / "r2"
    )
    assert code == 3 and f"{out}: an ingest into it was interrupted or is running" in stderr
    summaries = (tmp_path / "r2" / "summaries.jsonl").read_text().splitlines()
    assert len(summaries) == 3

    report = ingest.ingest_paths([source], out, flush_rows=20)
    assert report.exit_code == 0 and report.events_already_there == 0

    assert ingested_parts(out) == ingested_parts(clean)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in clean.iterdir())


def test_e72_write_atomic_never_replaces_what_is_not_a_regular_file(tmp_path: Path) -> None:
    """E-72: `report -o /dev/null` (or a pipe, or a link to one) wrote a temporary file and
    renamed it over the device, which as root replaced /dev/null with the page. A target that
    exists and is not a regular file is an OutputError (exit 4), left as it is."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    for target in (fifo, link):
        with pytest.raises(OutputError, match="not a regular file"):
            files.write_atomic(target, "<html>")
    assert fifo.is_fifo() and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "pipe"]
