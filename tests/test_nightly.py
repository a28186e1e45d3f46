"""Nightly batches that survive (CONTRACT §4 atomic outputs, §7 batching; decisions E-49..E-51):
`run --incremental` equals a full regrade byte for byte, one writer per output directory, and a
run killed at any point leaves whole files and a directory the next run completes.

The "nights" below change inputs the ways nightly logs change: a new run arrives, a run's events
are re-exported with a change, a run disappears, a suite document is edited, the baseline of a
candidate run changes (its §5 regression block depends on the baseline), the grading options
change. After each, the incremental output must equal a fresh full run's, file for file.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from evalbatch import api, cli
from evalbatch.options import GradeOptions
from evalbatch.outputs import output_format
from tests.helpers import (
    OTHER_SUITE_ID,
    OUTPUT_FILES,
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SAMPLES,
    WRITTEN_FILES,
    make_suite,
    manifest_as_graded,
    night_inputs,
    read_outputs,
    run_killed,
    standard_run,
    write_events,
    write_json,
)

#: a slow family (killed runs at every write point):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

BASELINE = "acme/run-regress-baseline-0001"
CANDIDATE = "acme/run-regress-candidate-0001"
PYTHON = sys.executable


def _rows(path: Path) -> list[dict[str, Any]]:
    columns = ["runId", "sequence", "type", "payload", "timestamp"]
    return pq.read_table(path, columns=columns).to_pylist()


def _full(events: Path, suites: Path, out: Path, **kwargs: Any) -> dict[str, bytes]:
    api.write_outputs([events], out, [suites], **kwargs)
    return read_outputs(out)


def _incremental(events: Path, suites: Path, out: Path, **kwargs: Any) -> api.RunReport:
    return api.write_outputs([events], out, [suites], incremental_run=True, **kwargs)


@pytest.fixture
def night(tmp_path: Path) -> dict[str, Path]:
    """A night's input: the samples, the regression pair, and runs of two more suites, in
    several files; the suites in one directory."""
    events = tmp_path / "events"
    suites = tmp_path / "suites"
    for path in sorted(SAMPLE_SUITES.glob("*.json")):
        write_json(suites / path.name, json.loads(path.read_text()))
    write_json(suites / "basic.json", make_suite())
    write_json(suites / "other.json", make_suite(OTHER_SUITE_ID))
    for path in sorted(SAMPLE_EVENTS.glob("*.parquet")):
        write_events(events / f"sample-{path.name}", _rows(path))
    write_events(events / "baseline.parquet", _rows(SAMPLES / "regress" / "baseline.parquet"))
    write_events(events / "candidate.parquet", _rows(SAMPLES / "regress" / "candidate.parquet"))
    write_events(
        events / "basic.parquet",
        standard_run("acme/run-basic-0001").rows + standard_run("acme/run-basic-0002").rows,
    )
    write_events(events / "other.parquet", standard_run("acme/run-other-0001", OTHER_SUITE_ID).rows)
    return {"events": events, "suites": suites, "root": tmp_path}


def _check_equals_full(night: dict[str, Path], out: Path, name: str) -> None:
    fresh = night["root"] / f"fresh-{name}"
    assert read_outputs(out) == _full(night["events"], night["suites"], fresh)
    again = night["root"] / f"fresh-inc-{name}"
    _incremental(night["events"], night["suites"], again)
    assert manifest_as_graded(out) == manifest_as_graded(again)


def _rescore(path: Path, run_id: str, task_id: str, score: float) -> None:
    """Re-export `path` with one eval.scored of `run_id` scoring differently."""
    rows = _rows(path)
    for row in rows:
        payload = row["payload"]
        doc = json.loads(payload) if isinstance(payload, str) else payload
        if row["runId"] == run_id and row["type"] == "eval.scored" and doc["taskId"] == task_id:
            row["payload"] = json.dumps({**doc, "score": score})
            break
    else:
        raise AssertionError(f"no eval.scored of {task_id} in {run_id}")
    write_events(path, rows)


def test_incremental_first_night_is_a_full_regrade(night: dict[str, Path]) -> None:
    """E-50: with no manifest every run is graded; the files equal a plain run's."""
    out = night["root"] / "out"
    report = _incremental(night["events"], night["suites"], out)
    assert report.full_regrade and report.carried_runs == 0
    _check_equals_full(night, out, "first")
    manifest = json.loads((out / "manifest.json").read_text())
    assert BASELINE in manifest["runs"] and manifest["runs"][CANDIDATE]["baseline"] == BASELINE


def test_incremental_unchanged_input_grades_nothing(night: dict[str, Path]) -> None:
    """E-50 (incremental runs)."""
    out = night["root"] / "out"
    _incremental(night["events"], night["suites"], out)
    before = read_outputs(out)
    report = _incremental(night["events"], night["suites"], out)
    assert not report.full_regrade
    assert report.carried_runs == report.runs.height == 8
    assert read_outputs(out) == before


def test_incremental_new_changed_and_removed_runs(night: dict[str, Path]) -> None:
    """E-50 (incremental runs).

    A new run, a re-exported run with a changed score, a run gone: only the new and changed
    are graded, and the files equal a full regrade's (the gone run's rows are dropped)."""
    out = night["root"] / "out"
    _incremental(night["events"], night["suites"], out)
    write_events(night["events"] / "new.parquet", standard_run("acme/run-basic-0003").rows)
    write_events(night["events"] / "basic.parquet", standard_run("acme/run-basic-0002").rows)
    _rescore(night["events"] / "other.parquet", "acme/run-other-0001", "alpha", 0.25)
    report = _incremental(night["events"], night["suites"], out)
    assert not report.full_regrade
    assert report.runs.height - report.carried_runs == 2  # basic-0003 (new), other-0001 (changed)
    assert "acme/run-basic-0001" not in report.runs["run_id"].to_list()
    _check_equals_full(night, out, "changed")


def test_incremental_follows_a_changed_baseline(night: dict[str, Path]) -> None:
    """§5: the candidate's regression block depends on its baseline's tasks, so a changed
    baseline regrades the candidate although the candidate's own events did not change."""
    out = night["root"] / "out"
    _incremental(night["events"], night["suites"], out)
    before = {
        json.loads(line)["runId"]: json.loads(line)["summary"]
        for line in (out / "summaries.jsonl").read_text().splitlines()
    }
    baseline_task = next(
        json.loads(r["payload"])["taskId"]
        for r in _rows(night["events"] / "baseline.parquet")
        if r["type"] == "eval.scored"
    )
    _rescore(night["events"] / "baseline.parquet", BASELINE, baseline_task, 0.0)
    report = _incremental(night["events"], night["suites"], out)
    assert report.runs.height - report.carried_runs == 2  # the baseline and its candidate
    _check_equals_full(night, out, "baseline")
    after = {
        json.loads(line)["runId"]: json.loads(line)["summary"]
        for line in (out / "summaries.jsonl").read_text().splitlines()
    }
    assert after[CANDIDATE]["regression"] != before[CANDIDATE]["regression"]


def test_incremental_follows_a_removed_baseline(night: dict[str, Path]) -> None:
    """§3.6: no regression block when the baseline is not in the input."""
    out = night["root"] / "out"
    _incremental(night["events"], night["suites"], out)
    (night["events"] / "baseline.parquet").unlink()
    _incremental(night["events"], night["suites"], out)
    _check_equals_full(night, out, "no-baseline")
    lines = (out / "summaries.jsonl").read_text().splitlines()
    candidate = next(json.loads(x)["summary"] for x in lines if CANDIDATE in x)
    assert "regression" not in candidate


def test_incremental_follows_an_edited_suite(night: dict[str, Path]) -> None:
    """E-50 (incremental runs).

    A suite document edited under the same id and version regrades the runs graded with it
    (and only those)."""
    out = night["root"] / "out"
    _incremental(night["events"], night["suites"], out)
    write_json(
        night["suites"] / "basic.json", make_suite(thresholds={"passScore": 0.1})
    )  # beta (0.5) passes now
    report = _incremental(night["events"], night["suites"], out)
    assert report.runs.height - report.carried_runs == 2  # acme/run-basic-0001 and -0002
    _check_equals_full(night, out, "suite")


def test_incremental_with_other_options_regrades_everything(night: dict[str, Path]) -> None:
    """E-50 (incremental runs)."""
    out = night["root"] / "out"
    _incremental(night["events"], night["suites"], out)
    options = GradeOptions(default_pass_score=0.9)
    report = _incremental(night["events"], night["suites"], out, options=options)
    assert report.full_regrade
    fresh = night["root"] / "fresh"
    assert read_outputs(out) == _full(night["events"], night["suites"], fresh, options=options)


@pytest.mark.parametrize("damage", ["garbage", "missing-table", "removed"])
def test_incremental_with_a_damaged_manifest_or_outputs_regrades_everything(
    night: dict[str, Path], damage: str
) -> None:
    """E-50 (incremental runs).

    Nothing is trusted that cannot be read whole: a full regrade, the same files."""
    out = night["root"] / "out"
    _incremental(night["events"], night["suites"], out)
    _rescore(night["events"] / "other.parquet", "acme/run-other-0001", "alpha", 0.25)
    if damage == "garbage":
        (out / "manifest.json").write_text("{not json")
    elif damage == "missing-table":
        (out / "tasks.parquet").unlink()
    else:
        (out / "manifest.json").unlink()
    report = _incremental(night["events"], night["suites"], out)
    assert report.full_regrade
    _check_equals_full(night, out, damage)


def test_a_plain_run_removes_the_manifest(night: dict[str, Path]) -> None:
    """E-50 (incremental runs).

    A run without --incremental may grade other inputs: the manifest would no longer
    describe the files, so it is removed and the next incremental run grades everything."""
    out = night["root"] / "out"
    _incremental(night["events"], night["suites"], out)
    api.write_outputs([night["events"]], out, [night["suites"]])
    assert not (out / "manifest.json").exists()
    assert _incremental(night["events"], night["suites"], out).full_regrade


def test_cli_incremental_says_what_it_graded(night: dict[str, Path]) -> None:
    """E-50 (incremental runs)."""
    out = night["root"] / "out"
    args = [str(night["events"]), "--suites", str(night["suites"]), "--out", str(out)]
    code, stdout, _ = _main("run", *args, "--incremental")
    assert code == 0
    assert "full regrade: graded 8 new or changed eval runs, kept 0 unchanged" in stdout
    code, stdout, _ = _main("run", *args, "--incremental")
    assert "incremental: graded 0 new or changed eval runs, kept 8 unchanged" in stdout
    code, stdout, stderr = _main("run", *args, "--incremental", "--quiet")
    assert code == 0 and stdout == "" and stderr == ""  # E-107: a clean night mails nothing


# --------------------------------------------------------------------------------------------
# One writer per output directory (E-49)


def _main(*args: str) -> tuple[int, str, str]:
    """The console entry point in a child process: exit code, stdout, stderr."""
    proc = subprocess.run(
        [PYTHON, "-c", "from evalbatch.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout, proc.stderr


HOLDER = textwrap.dedent(
    """
    import sys, time
    from evalbatch.outputs.lock import OutputLock
    lock = OutputLock(sys.argv[1]).acquire()
    print("held", flush=True)
    time.sleep(600)
    """
)


def _hold_lock(out: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen([PYTHON, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_writer_refuses_naming_the_holder(tmp_path: Path) -> None:
    """E-49 (one writer)."""
    out = tmp_path / "out"
    holder = _hold_lock(out)
    try:
        code, _, stderr = _main(
            "run", str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "--out", str(out)
        )
    finally:
        holder.kill()
        holder.communicate()  # reaps it and closes its pipe
    assert code == 5, stderr
    assert f"another evalbatch run is writing here (pid {holder.pid}" in stderr
    assert "Traceback" not in stderr
    assert not (out / "summaries.jsonl").exists()


def test_a_stale_lock_of_a_dead_run_is_taken_over(tmp_path: Path) -> None:
    """E-49 (one writer).

    SIGKILL leaves the lock file behind; the kernel has dropped the lock, so the next run
    takes it over, says whose it was, and removes it when done."""
    out = tmp_path / "out"
    holder = _hold_lock(out)
    holder.send_signal(signal.SIGKILL)
    holder.communicate()  # reaps it and closes its pipe
    assert (out / ".evalbatch.lock").exists()
    code, _, stderr = _main(
        "run", str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "--out", str(out), "--quiet"
    )
    assert code in (0, 3), stderr
    assert f"took over the lock of a run that is gone (pid {holder.pid}" in stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(WRITTEN_FILES)


# --------------------------------------------------------------------------------------------
# Crash safety (§4 atomic outputs)

#: kills the run (SIGKILL) at the Nth call of one of the functions that write outputs
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import pyarrow.parquet as pq
    from evalbatch.outputs import output_format, writer
    target, count = sys.argv[1], int(sys.argv[2])
    calls = 0

    def arm(owner, name):
        real = getattr(owner, name)

        def wrapped(*args, **kwargs):
            global calls
            calls += 1
            if calls == count:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        setattr(owner, name, wrapped)

    if target == "replace":
        arm(os, "replace")
    elif target == "rows":
        arm(pq.ParquetWriter, "write_table")
    else:
        arm(writer.OutputWriter, "add")
    sys.argv = ["evalbatch", *sys.argv[3:]]
    from evalbatch.cli import main
    main()
    """
)


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Yesterday's input and outputs, and tonight's input (more runs) with its uninterrupted
    outputs."""
    inputs = night_inputs(tmp_path_factory.mktemp("nights"), range(12))
    root, suites, tonight = inputs["root"], inputs["suites"], inputs["tonight"]
    old = _full(inputs["yesterday"], suites, root / "old")
    new = _full(tonight, suites, root / "new", resources=api.Resources(batch_events=30))
    return {"root": root, "suites": suites, "tonight": tonight, "old": old, "new": new}


@pytest.mark.parametrize(
    ("target", "count"),
    [("add", 1), ("add", 3), ("add", 6), ("rows", 1), ("rows", 2), ("rows", 3)]
    + [("replace", n) for n in range(1, 6)],
)
def test_sigkill_at_any_point_leaves_whole_files_and_a_rerun_completes(
    two_nights: dict[str, Any], tmp_path: Path, target: str, count: int
) -> None:
    """§4 atomic writing, E-51, E-119.

    Killed while batches are written (`add`), while Parquet row groups are written (`rows`) or
    between the renames into place (`replace`): every output file is whole — yesterday's or
    tonight's, never a part —, a mix of the two is marked `outputs-incomplete` and refused by
    its readers, and a rerun gives tonight's files exactly, with no leftover."""
    out = tmp_path / "out"
    out.mkdir()
    for name, data in two_nights["old"].items():
        (out / name).write_bytes(data)
    args = [
        "run",
        str(two_nights["tonight"]),
        "--suites",
        str(two_nights["suites"]),
        "--out",
        str(out),
        "--batch-events",
        "30",
        "--quiet",
    ]
    run_killed(KILLER, target, str(count), *args)
    for name in OUTPUT_FILES:
        data = (out / name).read_bytes()
        assert data in (two_nights["old"][name], two_nights["new"][name]), name
    mixed = read_outputs(out) not in (two_nights["old"], two_nights["new"])
    if mixed or (out / output_format.INCOMPLETE_FILE).exists():
        # E-119: files of two runs only under the marker, which every reader refuses
        assert (out / output_format.INCOMPLETE_FILE).is_file()
        assert target == "replace"
        code, _, stderr = _main("sql", str(out), "-e", "SELECT count(*) FROM runs")
        assert code == 2 and "interrupted while writing them" in stderr, stderr
    code, _, stderr = _main(*args)
    assert code in (0, 3), stderr
    assert read_outputs(out) == two_nights["new"]
    assert sorted(p.name for p in out.iterdir()) == sorted(WRITTEN_FILES)


def test_sigkill_at_a_random_moment_then_rerun(two_nights: dict[str, Any], tmp_path: Path) -> None:
    """§4 atomic writing, E-51.

    The same with the signal sent from outside, at moments spread over a whole run."""
    out = tmp_path / "out"
    args = [
        "run",
        str(two_nights["tonight"]),
        "--suites",
        str(two_nights["suites"]),
        "--out",
        str(out),
        "--batch-events",
        "30",
        "--quiet",
    ]
    started = time.perf_counter()
    assert _main(*args)[0] in (0, 3)
    whole = time.perf_counter() - started
    for fraction in (0.4, 0.8, 0.95):
        proc = subprocess.Popen(
            [PYTHON, "-c", "from evalbatch.cli import main; main()", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(whole * fraction)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for name in OUTPUT_FILES:
            assert (out / name).read_bytes() == two_nights["new"][name], name
        assert _main(*args)[0] in (0, 3)
        assert read_outputs(out) == two_nights["new"]
        assert sorted(p.name for p in out.iterdir()) == sorted(WRITTEN_FILES)


# --------------------------------------------------------------------------------------------
# Full disk, unwritable output


def test_a_full_disk_keeps_the_previous_outputs(
    two_nights: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§4 atomic writing, E-51.

    ENOSPC while a table is written: exit 4, one clear line, yesterday's files untouched,
    nothing left behind."""
    out = tmp_path / "out"
    out.mkdir()
    for name, data in two_nights["old"].items():
        (out / name).write_bytes(data)

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "evalbatch",
            "run",
            str(two_nights["tonight"]),
            "--suites",
            str(two_nights["suites"]),
            "--out",
            str(out),
        ],
    )
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 4
    assert read_outputs(out) == two_nights["old"]
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)  # as it was


def test_an_unwritable_output_is_a_clear_error(tmp_path: Path) -> None:
    """§4 atomic writing, E-51: a file where the output directory (or a directory above it)
    should be is one clear line, a usage error said as such (exit 2), before anything is
    written."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the output directory should be")
    code, _, stderr = _main(
        "run", str(SAMPLE_EVENTS), "--suites", str(SAMPLE_SUITES), "--out", str(blocker / "out")
    )
    assert code == 2, stderr
    assert stderr.startswith("evalbatch: ") and f"under {blocker}, which is a file" in stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1
    assert blocker.read_text() == "a file where the output directory should be"


def test_stale_working_directories_are_cleared(tmp_path: Path) -> None:
    """§4 atomic writing, E-51.

    A dead run's private working directory is removed by the next run (it holds the lock,
    so no live run owns one)."""
    out = tmp_path / "out"
    (out / f"{output_format.WORK_PREFIX}dead").mkdir(parents=True)
    (out / f"{output_format.WORK_PREFIX}dead" / "summaries.partial").write_text("half")
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    assert sorted(p.name for p in out.iterdir()) == sorted(WRITTEN_FILES)
