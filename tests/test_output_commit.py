"""An output directory is committed whole, read one way, and never written over its inputs
(decisions E-119, E-120, E-121; E-22 for `export otel --events`).

- E-119: a run interrupted between its renames leaves `outputs-incomplete` beside the mix of two
  runs' files; every reader refuses the directory, `--incremental` carries nothing from it, and
  the next run completes it and removes the marker;
- E-120: a destination that is, is inside or is a link to a file the command reads is a usage
  error (exit 2), the input untouched, for every command that writes a file;
- E-121: `export` and `report` read an output directory as `sql` and `history` do, through
  `outdir.load`: one directory, one answer;
- E-22: `export otel --events` leaves out a damaged event file, naming it, as `run` does.
"""

from __future__ import annotations

import os
import shutil
import struct
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from evalbatch import api, notebook
from evalbatch.errors import InputError, OutputError
from evalbatch.outputs import destinations, outdir, writer
from evalbatch.outputs.output_format import INCOMPLETE_FILE
from tests.helpers import (
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    WRITTEN_FILES,
    directory_state,
    fail_at_call,
    night_inputs,
    read_outputs,
    run_killed,
    run_main,
    slow_except,
    truncate_half,
)

INTERRUPTED = "the outputs of a run that was interrupted while writing them"
REPLACES = "writing it would replace an input"


# --------------------------------------------------------------------------------------------
# Output directories and inputs every section uses


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The samples graded into an output directory."""
    out = tmp_path_factory.mktemp("graded") / "out"
    api.write_outputs(SAMPLE_EVENTS, out, SAMPLE_SUITES)
    return out


def _events_copy(root: Path) -> Path:
    events = root / "events"
    shutil.copytree(SAMPLE_EVENTS, events)
    return events


def _link(link: Path, target: Path, symbolic: bool = False) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    if symbolic:
        link.symlink_to(target)
    else:
        os.link(target, link)
    return link


def _copy(path: Path, source: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    return path


def _readers(out: Path) -> dict[str, list[str | Path]]:
    """Every command that reads an output directory, as a user runs it on `out`."""
    elsewhere = out.parent / "elsewhere"
    return {
        "sql": ["sql", out, "-e", "SELECT count(*) FROM runs"],
        "history": ["history", out],
        "report": ["report", out, "--out", elsewhere / "report.html"],
        "export-otel": ["export", "otel", out, "--out", elsewhere / "otel.jsonl"],
        "export-eee": [
            "export",
            "eee",
            out,
            "--model-id",
            "acme/agent",
            "--org",
            "acme",
            "--out",
            elsewhere / "eee.jsonl",
        ],
    }


# --------------------------------------------------------------------------------------------
# E-121: one checked reader


def _remove(name: str) -> Callable[[Path], None]:
    return lambda out: (out / name).unlink()


def _empty(name: str) -> Callable[[Path], None]:
    return lambda out: (out / name).write_bytes(b"")


def _extra_summary(out: Path) -> None:
    lines = (out / "summaries.jsonl").read_text().splitlines(keepends=True)
    (out / "summaries.jsonl").write_text(
        "".join(lines) + lines[0].replace('"runId": "', '"runId": "zz-extra-', 1)
    )


def _events_as_trials(out: Path) -> None:
    shutil.copyfile(SAMPLE_EVENTS / "trials.parquet", out / "trials.parquet")


DAMAGE: dict[str, Callable[[Path], None]] = {
    "runs-truncated": truncate_half("runs.parquet"),
    "tasks-missing": _remove("tasks.parquet"),
    "problems-empty": _empty("problems.parquet"),
    "trials-truncated": truncate_half("trials.parquet"),
    "events-as-trials": _events_as_trials,
    "summary-of-a-run-not-in-the-tables": _extra_summary,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_e121_every_reader_gives_one_answer_for_one_output_directory(
    graded: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    damage: str,
) -> None:
    """E-121: export, report, history and sql refuse a damaged output directory alike (exit 2,
    the same reason), where export and report used to write from it."""
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    DAMAGE[damage](out)
    with pytest.raises(InputError) as refused:
        outdir.load(out)
    reason = str(refused.value)
    for name, argv in _readers(out).items():
        code, _, stderr = run_main(monkeypatch, capsys, *argv)
        assert code == 2, (name, stderr)
        assert reason in stderr, (name, stderr)
        assert "internal error" not in stderr, stderr
    assert not (tmp_path / "elsewhere").exists()


# --------------------------------------------------------------------------------------------
# E-22: export otel --events leaves a damaged event file out, as run does


def _data_pages_missing(path: Path) -> None:
    data = path.read_bytes()
    footer = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - footer
    path.write_bytes(data[:4] + data[start - 64 :])


def _zstd_pages_flipped(path: Path) -> None:
    pq.write_table(pq.read_table(path), path, compression="zstd")
    data = bytearray(path.read_bytes())
    for offset in range(200, 600, 7):
        data[offset] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage", [_data_pages_missing, _zstd_pages_flipped], ids=["pages-missing", "zstd-flipped"]
)
def test_e22_export_otel_leaves_out_a_damaged_event_file_as_run_does(
    graded: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[Path], None],
) -> None:
    """E-22: `export otel --events` names a file whose data pages cannot be read and reads the
    others, as `run` skips it (it was an internal error); given alone, it is exit 2."""
    bad = _copy(tmp_path / "bad" / "trials.parquet", SAMPLE_EVENTS / "trials.parquet")
    damage(bad)
    code, _, stderr = run_main(
        monkeypatch, capsys, "run", bad, SAMPLE_EVENTS, "--suites", SAMPLE_SUITES,
        "--out", tmp_path / "run", "-q",
    )  # fmt: skip
    assert code == 3 and "internal error" not in stderr
    good = tmp_path / "good.jsonl"
    code, _, stderr = run_main(
        monkeypatch, capsys, "export", "otel", graded, "--events", SAMPLE_EVENTS,
        "--out", good, "-q",
    )  # fmt: skip
    assert code == 0, stderr
    both = tmp_path / "both.jsonl"
    code, _, stderr = run_main(
        monkeypatch, capsys, "export", "otel", graded, "--events", bad, "--events",
        SAMPLE_EVENTS, "--out", both, "-q",
    )  # fmt: skip
    assert code == 0, stderr
    assert f"evalbatch: left out: {bad}: damaged Parquet data" in stderr
    assert "internal error" not in stderr
    assert both.read_bytes() == good.read_bytes()
    code, _, stderr = run_main(
        monkeypatch, capsys, "export", "otel", graded, "--events", bad,
        "--out", tmp_path / "alone.jsonl", "-q",
    )  # fmt: skip
    assert code == 2 and str(bad) in stderr and "internal error" not in stderr, stderr
    assert not (tmp_path / "alone.jsonl").exists()


# --------------------------------------------------------------------------------------------
# E-120: no output replaces an input


TABLE = "a file of the output directory"

#: each case: the command, the input that must stay as it is, and what the message calls it
CASES = (
    "report-over-runs",
    "report-over-summaries",
    "report-over-a-history-table",
    "export-otel-over-tasks",
    "export-eee-over-trials",
    "export-over-the-record-by-dotdot",
    "export-otel-over-an-event-file",
    "sql-over-an-event-file",
    "sql-over-a-table",
    "sql-over-a-suite-file",
    "sql-through-a-symlink",
    "sql-over-a-hard-link",
    "run-over-an-event-file-named-in-out",
    "run-over-a-suite-file",
)


def _eee(out: Path, target: Path) -> list[str | Path]:
    return ["export", "eee", out, "--model-id", "acme/a", "--org", "acme", "--out", target]


def _case(name: str, tmp: Path, out: Path) -> tuple[list[str | Path], Path, str]:
    """The command of case `name` over the output directory `out` and the copies of the
    samples' events and suites in `tmp`; what it must leave as it is; how it names that."""
    events, suites, graded = tmp / "events", tmp / "suites", tmp / "graded"
    sql = ["sql", events, "--suites", SAMPLE_SUITES, "-e", "SELECT 1", "--format", "csv"]
    event_file = events / "trials.parquet"
    cases: dict[str, Callable[[], tuple[list[str | Path], Path, str]]] = {
        "report-over-runs": lambda: (
            ["report", out, "--out", out / "runs.parquet"],
            out / "runs.parquet",
            TABLE,
        ),
        "report-over-summaries": lambda: (
            ["report", out, "--out", out / "summaries.jsonl"],
            out / "summaries.jsonl",
            TABLE,
        ),
        "report-over-a-history-table": lambda: (
            ["report", out, "--history", out, "--out", out / "tasks.parquet"],
            out / "tasks.parquet",
            TABLE,
        ),
        "export-otel-over-tasks": lambda: (
            ["export", "otel", out, "--out", out / "tasks.parquet"],
            out / "tasks.parquet",
            TABLE,
        ),
        "export-eee-over-trials": lambda: (
            _eee(out, out / "trials.parquet"),
            out / "trials.parquet",
            TABLE,
        ),
        "export-over-the-record-by-dotdot": lambda: (
            _eee(out, out / ".." / out.name / "run-inputs.json"),
            out / "run-inputs.json",
            TABLE,
        ),
        "export-otel-over-an-event-file": lambda: (
            ["export", "otel", out, "--events", events, "--out", event_file],
            event_file,
            "an event file",
        ),
        "sql-over-an-event-file": lambda: (
            [*sql[:-1], "parquet", "--out", event_file],
            event_file,
            "an event file",
        ),
        "sql-over-a-table": lambda: (
            [
                "sql",
                out,
                "-e",
                "SELECT 1",
                "--format",
                "parquet",
                "--out",
                out / "problems.parquet",
            ],
            out / "problems.parquet",
            TABLE,
        ),
        "sql-over-a-suite-file": lambda: (
            [*sql[:2], "--suites", suites, *sql[4:], "--out", suites / "trials.json"],
            suites / "trials.json",
            "a suite file",
        ),
        "sql-through-a-symlink": lambda: (
            [*sql, "--out", _link(tmp / "link.csv", event_file, symbolic=True)],
            event_file,
            "an event file",
        ),
        "sql-over-a-hard-link": lambda: (
            [*sql, "--out", _link(tmp / "elsewhere" / "a.csv", event_file)],
            event_file,
            "is a hard link to",
        ),
        "run-over-an-event-file-named-in-out": lambda: (
            [
                "run",
                _copy(graded / "trials.parquet", SAMPLE_EVENTS / "trials.parquet"),
                "--suites",
                SAMPLE_SUITES,
                "--out",
                graded,
            ],
            graded / "trials.parquet",
            "an event file",
        ),
        "run-over-a-suite-file": lambda: (
            [
                "run",
                events,
                "--suites",
                _copy(graded / "manifest.json", SAMPLE_SUITES / "trials.json"),
                "--out",
                graded,
            ],
            graded / "manifest.json",
            "a suite file",
        ),
    }
    return cases[name]()


@pytest.mark.parametrize("case", CASES)
def test_e120_no_output_replaces_an_input(
    graded: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    """E-120: a destination that is, is inside or links to a file the command reads is exit 2
    with one line naming it and why; the input is untouched and nothing is written."""
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    _events_copy(tmp_path)
    shutil.copytree(SAMPLE_SUITES, tmp_path / "suites")
    argv, kept, named = _case(case, tmp_path, out)
    before = directory_state(tmp_path)
    code, stdout, stderr = run_main(monkeypatch, capsys, *argv)
    assert code == 2, (stdout, stderr)
    assert REPLACES in stderr and named in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1 and "internal error" not in stderr, stderr
    assert kept.name in stderr
    assert directory_state(tmp_path) == before


@pytest.mark.slow
def test_e120_writing_beside_an_input_stays_allowed(
    graded: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """E-120: the default destinations inside OUT_DIR, and `--out` inside the events' directory
    or under a glob over it, run again there (E-74), are not inputs."""
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    events = _events_copy(tmp_path)
    globbed = _events_copy(tmp_path / "globbed")
    for argv in (
        ["report", out, "-q"],
        ["export", "otel", out, "--events", events, "-q"],
        ["sql", out, "-e", "SELECT 1", "--format", "csv", "--out", out / "result.csv"],
        ["run", events, "--suites", SAMPLE_SUITES, "--out", events / "graded", "-q"],
        ["run", events, "--suites", SAMPLE_SUITES, "--out", events / "graded", "-q"],
        ["run", globbed / "**" / "*.parquet", "--suites", SAMPLE_SUITES, "--out", globbed / "g"],
        ["run", globbed / "**" / "*.parquet", "--suites", SAMPLE_SUITES, "--out", globbed / "g"],
    ):
        code, _, stderr = run_main(monkeypatch, capsys, *argv)
        assert code == 0, (argv, stderr)


def test_e120_the_guard_for_ingest(tmp_path: Path) -> None:
    """E-120: `ingest`'s destinations take the same check: `--out` or `--write-suites` equal to a
    log it reads, a hard link to one, or the directory it reads them from."""
    log = tmp_path / "in" / "log.ndjson"
    log.parent.mkdir()
    log.write_text("{}\n")
    reads = destinations.Inputs(ingest=[log.parent])
    for option, target in (
        ("--write-suites", log),
        ("--out", log),
        ("--out", _link(tmp_path / "other" / "x.ndjson", log)),
        ("--out", log.parent),
    ):
        with pytest.raises(InputError, match=REPLACES):
            destinations.refuse_overwrite(option, target, reads)
    destinations.refuse_overwrite("--out", log.parent / "parts", reads)  # beside it: allowed


# --------------------------------------------------------------------------------------------
# E-119: a directory is committed under a marker


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Yesterday's input (3 runs), tonight's (6 runs, one of them changed) and tonight's outputs
    as an uninterrupted run writes them, plain and incremental."""
    inputs = night_inputs(tmp_path_factory.mktemp("nights"), range(1, 7))
    new = {}
    for incremental in (False, True):
        out = inputs["root"] / f"new-{incremental}"
        api.write_outputs(inputs["tonight"], out, inputs["suites"], incremental_run=incremental)
        new[incremental] = read_outputs(out)
    return {**inputs, "new": new}


class _Killed(BaseException):
    """The process dying at a rename: not an OSError, so nothing is put back (as with SIGKILL)."""


def _assert_every_reader_refuses(
    out: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, argv in _readers(out).items():
        code, _, stderr = run_main(monkeypatch, capsys, *argv)
        assert code == 2, (name, stderr)
        assert INTERRUPTED in stderr and "run it again" in stderr, (name, stderr)
        assert "internal error" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    for read in (outdir.load, outdir.read_graded, notebook.connect):
        with pytest.raises(InputError, match=INTERRUPTED):
            read(out)


@pytest.mark.parametrize("incremental", [False, True], ids=["run", "incremental"])
# the first rename and the last of each mode in the fast set; the ones between under --run-slow
@pytest.mark.parametrize("nth", slow_except(range(1, 8), fast=[1, 6, 7]))
def test_e119_run_killed_between_renames_is_refused_by_every_reader_and_the_next_run_recovers(
    nights: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    incremental: bool,
    nth: int,
) -> None:
    """E-119: the real writer dies at its nth rename into place (six renames, seven with the
    manifest). The directory holds the marker beside whatever mix of two runs the renames made,
    and every reader refuses it with one line; the next run, of the same command, writes tonight's
    files exactly, carries nothing over, and leaves no marker."""
    out = tmp_path / "out"
    api.write_outputs(nights["yesterday"], out, nights["suites"], incremental_run=incremental)
    assert not (out / INCOMPLETE_FILE).exists()
    with monkeypatch.context() as patch:
        fail_at_call(patch, writer.os, "replace", nth, _Killed)
        try:
            api.write_outputs(nights["tonight"], out, nights["suites"], incremental_run=incremental)
        except _Killed:
            pass
        else:
            assert nth == 7 and not incremental, "fewer renames than expected"
            return  # a plain run renames six files
    assert (out / INCOMPLETE_FILE).is_file()
    _assert_every_reader_refuses(out, monkeypatch, capsys)
    report = api.write_outputs(
        nights["tonight"], out, nights["suites"], incremental_run=incremental
    )
    if incremental:  # told even with -q: not taken for a first incremental run
        assert report.full_regrade and report.carried_runs == 0 and not report.first_incremental
        assert report.regrade_reason == (
            "the last run was interrupted while putting its outputs in place"
        )
    assert read_outputs(out) == nights["new"][incremental]
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([*WRITTEN_FILES, *(["manifest.json"] if incremental else [])])
    assert outdir.load(out).summaries


@pytest.mark.slow
def test_e119_a_marker_stays_until_a_run_completes_the_directory(
    nights: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """E-119: a marker a dead run left is kept by a run that stops before its renames (nothing to
    grade: exit 2) and by one whose rename fails and is undone (a full disk: exit 4), since the
    files are still a mix; a run that completes removes it."""
    out = tmp_path / "out"
    api.write_outputs(nights["yesterday"], out, nights["suites"])
    writer.mark_incomplete(out)
    before = directory_state(out)
    code, _, stderr = run_main(
        monkeypatch, capsys, "run", nights["tonight"], "--suites", nights["suites"],
        "--out", out, "--run-id", "acme/none*", "-q",
    )  # fmt: skip
    assert code == 2 and directory_state(out) == before, stderr
    with monkeypatch.context() as patch:
        fail_at_call(patch, writer.os, "replace", 3, OSError(28, "No space left on device"))
        code, _, stderr = run_main(
            monkeypatch, capsys, "run", nights["tonight"], "--suites", nights["suites"],
            "--out", out, "-q",
        )  # fmt: skip
    assert code == 4 and directory_state(out) == before, stderr
    _assert_every_reader_refuses(out, monkeypatch, capsys)
    api.write_outputs(nights["tonight"], out, nights["suites"])
    assert not (out / INCOMPLETE_FILE).exists()
    assert read_outputs(out) == nights["new"][False]


def test_e119_a_failed_rename_without_a_marker_before_leaves_none(
    nights: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-119 with E-72: a rename that fails is undone, and the marker goes with it: the directory
    is byte for byte as it was, and reads as before."""
    out = tmp_path / "out"
    api.write_outputs(nights["yesterday"], out, nights["suites"])
    before = directory_state(out)
    with monkeypatch.context() as patch:
        fail_at_call(patch, writer.os, "replace", 4, OSError(28, "No space left on device"))
        with pytest.raises(OutputError):
            api.write_outputs(nights["tonight"], out, nights["suites"])
    assert directory_state(out) == before
    assert outdir.load(out).summaries


def test_e119_a_run_that_begins_its_commit_while_a_reader_reads_is_refused(
    nights: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-119: the marker is looked for before the files are read and again after, so a reader
    that a run's commit overtakes (the marker created while it reads) refuses what it read."""
    out = tmp_path / "out"
    api.write_outputs(nights["yesterday"], out, nights["suites"])
    real = outdir.read_run_inputs

    def overtaken(*args: Any, **kwargs: Any) -> Any:
        writer.mark_incomplete(out)  # a run begins its commit between two reads
        return real(*args, **kwargs)

    monkeypatch.setattr(outdir, "read_run_inputs", overtaken)
    with pytest.raises(InputError, match=INTERRUPTED):
        outdir.load(out)


#: `evalbatch` in a child process that sends itself SIGKILL at one step of the commit of E-119:
#: `before-mark`, `marked` (the marker synced, nothing changed yet), `rename-N` (before the Nth
#: rename into place), `before-unmark` (every file in place) or `unmarked` (the marker removed)
KILLER = textwrap.dedent(
    """
    import os, pathlib, signal, sys
    from evalbatch.outputs import writer
    from evalbatch.outputs.output_format import INCOMPLETE_FILE
    point = sys.argv[1]
    state = {"marked": False, "renames": 0}

    def die(at):
        if point == at:
            os.kill(os.getpid(), signal.SIGKILL)

    real_mark, real_replace, real_unlink = writer.mark_incomplete, os.replace, pathlib.Path.unlink

    def mark(out_dir):
        die("before-mark")
        real_mark(out_dir)
        state["marked"] = True
        die("marked")

    def replace(*args, **kwargs):
        if state["marked"]:
            state["renames"] += 1
            die(f"rename-{state['renames']}")
        return real_replace(*args, **kwargs)

    def unlink(self, *args, **kwargs):
        if self.name == INCOMPLETE_FILE:
            die("before-unmark")
        real_unlink(self, *args, **kwargs)
        if self.name == INCOMPLETE_FILE:
            die("unmarked")

    writer.mark_incomplete, os.replace, pathlib.Path.unlink = mark, replace, unlink
    sys.argv = ["evalbatch", *sys.argv[2:]]
    from evalbatch.cli import main
    main()
    """
)


# the fast set kills one real run at the marker; every step of both modes under --run-slow
@pytest.mark.parametrize(
    "incremental", slow_except([False, True], fast=[False]), ids=["run", "incremental"]
)
@pytest.mark.parametrize(
    "point",
    [
        pytest.param("before-mark", marks=pytest.mark.slow),
        "marked",
        pytest.param("rename-1", marks=pytest.mark.slow),
        pytest.param("rename-4", marks=pytest.mark.slow),
        pytest.param("before-unmark", marks=pytest.mark.slow),
        pytest.param("unmarked", marks=pytest.mark.slow),
    ],
)
def test_e119_sigkill_at_each_step_of_the_commit_then_readers_refuse_or_read_whole(
    nights: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    point: str,
    incremental: bool,
) -> None:
    """E-119, E-51: `evalbatch run` in a child process is killed (SIGKILL) at one step of its
    commit. Before the marker, the directory is yesterday's and reads so; from the marker's
    creation to its removal, the marker is there and every reader refuses the directory with
    one line, whatever mix the renames made; after, it is tonight's. The same command run again
    writes tonight's files exactly and leaves no marker; `--incremental` carries nothing from a
    marked directory and says why, even with -q."""
    out = tmp_path / "out"
    api.write_outputs(nights["yesterday"], out, nights["suites"], incremental_run=incremental)
    old, new = read_outputs(out), nights["new"][incremental]
    argv = ["run", str(nights["tonight"]), "--suites", str(nights["suites"]), "--out", str(out)]
    argv += ["-q", *(["--incremental"] if incremental else [])]
    run_killed(KILLER, point, *argv)
    marked = (out / INCOMPLETE_FILE).is_file()
    assert marked == (point not in ("before-mark", "unmarked"))
    state = read_outputs(out)
    if point == "before-mark" or point == "marked":
        assert state == old
    elif point in ("before-unmark", "unmarked"):
        assert state == new
    else:
        assert all(state[name] in (old[name], new[name]) for name in state)
    if marked:
        _assert_every_reader_refuses(out, monkeypatch, capsys)
    else:
        assert read_outputs(out) in (old, new)
        assert outdir.load(out).summaries
    code, _, stderr = run_main(monkeypatch, capsys, *argv)
    assert code == 0, stderr
    if incremental and marked:
        assert "interrupted while putting its outputs in place" in stderr, stderr
    assert read_outputs(out) == new
    manifest = ["manifest.json"] if incremental else []
    assert sorted(p.name for p in out.iterdir()) == sorted([*WRITTEN_FILES, *manifest])
    assert outdir.load(out).summaries
