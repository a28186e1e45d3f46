"""E-152: a night of `run --incremental` reads only the event files new or changed since the last
one. An unchanged file (its size, modification and status-change times and Parquet footer as the
manifest records them) is not read again; a file changed in place, replaced or removed is, and the
runs it holds or held are graded again. Every answer equals a full regrade's, byte for byte.

The proof that a kept file's rows are not read is a spy on the one function that reads event rows
to fingerprint runs (`incremental.event_fingerprints`), not a timing.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from evalbatch.cli import cli
from evalbatch.inputs import event_files
from evalbatch.pipeline import incremental
from tests.helpers import (
    assert_as_a_full_regrade,
    incremental_night,
    make_suite,
    night_run_id,
    standard_run,
    write_events,
    write_json,
    write_night,
    write_store,
)


@pytest.fixture
def store(tmp_path: Path) -> dict[str, Path]:
    """Three nights' files of two runs each kept side by side, and the suite their runs claim."""
    return write_store(tmp_path, nights=3, runs=2)


@pytest.fixture
def read_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every event file whose rows are read to fingerprint runs, in order."""
    seen: list[str] = []
    real = incremental.event_fingerprints

    def spy(con: Any, sources: event_files.Sources) -> dict[str, str]:
        seen.extend(path for paths in sources.groups.values() for path in paths)
        return real(con, sources)

    monkeypatch.setattr(incremental, "event_fingerprints", spy)
    return seen


def test_e152_a_night_with_nothing_new_reads_no_kept_file(
    store: dict[str, Path], read_files: list[str]
) -> None:
    """The kept files are told unchanged without reading their rows, nothing is graded, and the
    outputs are the ones a full regrade writes."""
    out = store["root"] / "out"
    incremental_night(store, out)
    assert len(read_files) == 3  # the first night reads every file once
    read_files.clear()
    report = incremental_night(store, out)
    assert read_files == []
    assert (
        not report.full_regrade
        and report.carried_runs == 6
        and not report.kept_run_ids
        ^ {night_run_id(night, n) for night in range(3) for n in range(2)}
    )
    assert_as_a_full_regrade(store, out, "nothing-new")


def test_e152_a_new_night_reads_only_its_file(
    store: dict[str, Path], read_files: list[str]
) -> None:
    """A night's cost is what it adds: its own file is read and its runs graded."""
    out = store["root"] / "out"
    incremental_night(store, out)
    read_files.clear()
    added = write_night(store["events"], 3, runs=2)
    report = incremental_night(store, out)
    assert read_files == [str(added)]
    assert report.runs.height - report.carried_runs == 2
    assert report.kept_run_ids == {night_run_id(night, n) for night in range(3) for n in range(2)}
    assert_as_a_full_regrade(store, out, "new-night")


def _plain(path: Path) -> None:
    """Rewrite a Parquet file uncompressed, without dictionaries or statistics: each payload's
    text is in the file once, as written, so a test can edit it in place."""
    table = pq.read_table(path)
    pq.write_table(table, path, compression="none", use_dictionary=False, write_statistics=False)


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Change the first `old` to `new` (as long) inside the file's data pages, then put its
    modification time back: the size, the footer and the mtime are the ones recorded, only the
    status-change time tells."""
    assert len(old) == len(new)
    status = path.stat()
    data = path.read_bytes()
    assert old in data
    with path.open("r+b") as handle:
        handle.seek(data.index(old))
        handle.write(new)
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (status.st_size, status.st_mtime_ns)


@pytest.mark.parametrize("change", ["in-place", "replaced", "removed", "touched"])
def test_e152_a_changed_replaced_or_removed_file_is_caught(
    store: dict[str, Path], read_files: list[str], change: str
) -> None:
    """Only the changed file is read; the runs it holds (or held) are graded again, and the
    outputs equal a full regrade's. A file only touched is read and its runs found unchanged:
    a false alarm costs a read, never a grade."""
    target = store["events"] / "night-01.parquet"
    _plain(target)
    out = store["root"] / "out"
    incremental_night(store, out)
    read_files.clear()
    if change == "in-place":  # the first run's beta scores 0.9, not 0.5 (same size and mtime)
        before = incremental.identify(str(target))
        _edit_in_place(target, b'"score": 0.5, "passed": false', b'"score": 0.9, "passed": false')
        after = incremental.identify(str(target))
        assert before is not None and after is not None
        assert dataclasses.replace(after, ctime_ns=before.ctime_ns) == before  # only ctime
    elif change == "replaced":
        rows = standard_run(night_run_id(1, 0)).rows + standard_run(night_run_id(1, 7)).rows
        write_events(target.with_name("new.tmp"), rows).replace(target)
    elif change == "removed":
        target.unlink()
    else:
        os.utime(target)
    report = incremental_night(store, out)
    assert read_files == ([] if change == "removed" else [str(target)])
    graded = report.runs.height - report.carried_runs
    assert not report.full_regrade
    assert graded == {"in-place": 1, "replaced": 1, "removed": 0, "touched": 0}[change]
    assert report.runs.height == {"removed": 4}.get(change, 6)
    assert_as_a_full_regrade(store, out, change)


def test_e152_a_run_split_across_an_unchanged_and_a_changed_file_is_graded_again(
    tmp_path: Path, read_files: list[str]
) -> None:
    """A run's fingerprint is its files' combined: its rows in the unchanged file come from the
    manifest, those in the changed one are read, and the run is graded again."""
    events, suites = tmp_path / "events", tmp_path / "suites"
    write_json(suites / "basic.json", make_suite())
    split = standard_run("acme/split-run").rows
    half = len(split) // 2
    write_events(events / "a.parquet", split[:half] + standard_run("acme/whole-run").rows)
    write_events(events / "b.parquet", split[half:])
    store = {"events": events, "suites": suites, "root": tmp_path}
    out = tmp_path / "out"
    incremental_night(store, out)
    manifest = json.loads((out / "manifest.json").read_text())
    recorded = manifest["inputs"]
    assert set(recorded[str(events / "a.parquet")]["runs"]) == {"acme/split-run", "acme/whole-run"}
    assert set(recorded[str(events / "b.parquet")]["runs"]) == {"acme/split-run"}
    con = incremental.duckdb.connect()
    whole = incremental.event_fingerprints(con, event_files.scan(con, [str(events)]))
    assert {run: entry["events"] for run, entry in manifest["runs"].items()} == whole

    read_files.clear()
    rows = split[half:]
    for row in rows:
        if row["type"] == "eval.scored" and '"beta"' in json.dumps(row["payload"]):
            row["payload"] = {**row["payload"], "score": 0.9}
    write_events(events / "b.parquet", rows)
    report = incremental_night(store, out)
    assert read_files == [str(events / "b.parquet")]
    assert report.kept_run_ids == {"acme/whole-run"}
    assert_as_a_full_regrade(store, out, "split")


def test_e152_a_manifest_without_file_records_reads_every_file_once(
    store: dict[str, Path], read_files: list[str]
) -> None:
    """A manifest written before E-152 records no event file: each is read once, as before, and
    nothing is graded again; the night after reads none."""
    out = store["root"] / "out"
    incremental_night(store, out)
    path = out / "manifest.json"
    doc = json.loads(path.read_text())
    del doc["inputs"]
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    read_files.clear()
    report = incremental_night(store, out)
    assert len(read_files) == 3 and report.carried_runs == 6 and not report.full_regrade
    read_files.clear()
    incremental_night(store, out)
    assert read_files == []
    assert_as_a_full_regrade(store, out, "old-manifest")


def test_e152_a_damaged_file_record_is_a_full_regrade(store: dict[str, Path]) -> None:
    """A file record the manifest cannot vouch for (a fingerprint that is not one) makes the
    manifest untrusted, as any damage to it does (E-71): a full regrade, never a failure."""
    out = store["root"] / "out"
    incremental_night(store, out)
    path = out / "manifest.json"
    doc = json.loads(path.read_text())
    record = doc["inputs"][str(store["events"] / "night-00.parquet")]
    record["runs"] = dict.fromkeys(record["runs"], "not:a:fingerprint")
    path.write_text(json.dumps(doc))
    report = incremental_night(store, out)
    assert report.full_regrade
    assert report.regrade_reason == "manifest.json: not a manifest of this evalbatch"
    assert_as_a_full_regrade(store, out, "damaged-record")


def test_e152_the_terminal_lists_the_nights_runs_and_counts_the_kept(
    store: dict[str, Path],
) -> None:
    """After an incremental run the table is the runs graded this night; the kept ones are one
    line, whatever their number; the totals stay over every run."""
    out = store["root"] / "out"
    args = ["run", str(store["events"]), "--suites", str(store["suites"]), "--out", str(out)]
    first = CliRunner().invoke(cli, [*args, "--incremental"])
    assert first.exit_code == 0, first.output
    assert night_run_id(0, 0) in first.stdout and "kept" not in first.stdout.splitlines()[-2]
    write_night(store["events"], 3, runs=2)
    night = CliRunner().invoke(cli, [*args, "--incremental"])
    assert night.exit_code == 0, night.output
    lines = night.stdout.splitlines()
    assert lines[0] == (
        "incremental: graded 2 new or changed eval runs, kept 6 unchanged; read 1 of 4 event files"
    )
    assert night_run_id(3, 0) in night.stdout and night_run_id(3, 1) in night.stdout
    assert not any(night_run_id(n, r) in night.stdout for n in range(3) for r in range(2))
    assert "kept 6 eval runs unchanged from the last run, not listed (see runs.parquet)" in lines
    assert any(line.startswith("total: 8 eval runs") for line in lines)
    again = CliRunner().invoke(cli, [*args, "--incremental"])
    assert again.exit_code == 0
    assert not any("acme/" in line for line in again.stdout.splitlines())
    assert "kept 8 eval runs unchanged from the last run, not listed (see runs.parquet)" in (
        again.stdout.splitlines()
    )
    doc = json.loads(CliRunner().invoke(cli, [*args, "--incremental", "--json"]).stdout)
    assert doc["incremental"] == {
        "fullRegrade": False,
        "graded": 0,
        "kept": 8,
        "reason": None,
        "eventFiles": 4,
        "eventFilesRead": 0,
    }
    assert len(doc["runs"]) == 8  # --json still holds every run
