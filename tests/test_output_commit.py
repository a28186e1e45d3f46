"""An output directory is read one way, and never written over its inputs (decisions E-120,
E-121; E-22 for `export otel --events`).

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
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalbatch import api
from evalbatch.errors import InputError
from evalbatch.outputs import destinations, outdir
from tests.conftest import (
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    run_main,
)

REPLACES = "writing it would replace an input"


# --------------------------------------------------------------------------------------------
# Output directories and inputs every section uses


def _files(root: Path) -> dict[str, bytes]:
    """Every file below `root`, by relative path."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


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


def _truncate(name: str) -> Callable[[Path], None]:
    def damage(out: Path) -> None:
        data = (out / name).read_bytes()
        (out / name).write_bytes(data[: len(data) // 2])

    return damage


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
    "runs-truncated": _truncate("runs.parquet"),
    "tasks-missing": _remove("tasks.parquet"),
    "problems-empty": _empty("problems.parquet"),
    "trials-truncated": _truncate("trials.parquet"),
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
    before = _files(tmp_path)
    code, stdout, stderr = run_main(monkeypatch, capsys, *argv)
    assert code == 2, (stdout, stderr)
    assert REPLACES in stderr and named in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1 and "internal error" not in stderr, stderr
    assert kept.name in stderr
    assert _files(tmp_path) == before


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
