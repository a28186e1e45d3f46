"""E-156: a night of `run --incremental` costs what it adds in its outputs too.

A night with nothing new leaves the output files as they are (the same inodes and times) and
reports what writing them would have; each is checked by its identity in place (size,
modification and status-change times), by its sha256 only where that is not the one recorded,
and a night that writes reads every file whole (E-71) before a byte of it is carried. A night
that adds runs copies the leading row groups of the previous tables, the rows before its first
new, changed or removed run, as they are. Every answer equals a full regrade's, byte for byte.

The row groups are made small here (`writer.ROW_GROUP_ROWS`) so that a few runs fill several.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.inputs import event_files
from evalbatch.outputs import parquet_splice, thrift_compact, writer
from evalbatch.pipeline import incremental
from tests.helpers import (
    OUTPUT_FILES,
    assert_as_a_full_regrade,
    incremental_night,
    night_run_id,
    read_outputs,
    standard_run,
    write_events,
    write_night,
    write_store,
)

#: every file a night would write, whose inode and times a night with nothing new keeps
KEPT = (*OUTPUT_FILES, "run-inputs.json", "manifest.json")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Three nights' files of three runs each (two trials and two tasks a run), the suite, and
    row groups of 4 rows: the 18 trial rows fill four whole row groups and part of a fifth."""
    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 4)
    return write_store(tmp_path, nights=3, runs=3)


def _identities(out: Path, names: tuple[str, ...] = KEPT) -> dict[str, tuple[int, int, int]]:
    """Each file's inode and modification and status-change times."""
    found = {}
    for name in names:
        status = (out / name).stat()
        found[name] = (status.st_ino, status.st_mtime_ns, status.st_ctime_ns)
    return found


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each time a run puts output files in place, and each time it replaces the manifest
    alone."""
    seen: list[str] = []
    real_finish = writer.OutputWriter.finish
    real_replace = writer.replace_manifest

    def finish(self: writer.OutputWriter, *args: Any, **kwargs: Any) -> Any:
        seen.append("outputs")
        return real_finish(self, *args, **kwargs)

    def replace(out_dir: Path, manifest: Any) -> None:
        seen.append("manifest")
        real_replace(out_dir, manifest)

    monkeypatch.setattr(writer.OutputWriter, "finish", finish)
    monkeypatch.setattr(writer, "replace_manifest", replace)
    return seen


@pytest.fixture
def copied(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """For each table a night joined, how many leading row groups it copied."""
    seen: dict[str, int] = {}
    real = parquet_splice.join

    def join(prefix: parquet_splice.Prefix, rest: Path, target: Path, layout: Any) -> None:
        seen[prefix.path.name] = prefix.row_groups
        real(prefix, rest, target, layout)

    monkeypatch.setattr(parquet_splice, "join", join)
    return seen


# --------------------------------------------------------------------------------------------
# a night with nothing new leaves the outputs as they are


def test_e156_a_night_with_nothing_new_leaves_every_output_file_as_it_is(
    store: dict[str, Path], writes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second night writes nothing, plans no batch, and every file keeps its inode and
    times; its report is the first night's, runs and problems alike."""
    out = store["root"] / "out"
    first = incremental_night(store, out)
    before = _identities(out)
    planned: list[int] = []
    real_plan = event_files.plan_batches
    monkeypatch.setattr(
        event_files,
        "plan_batches",
        lambda *a, **k: planned.append(1) or real_plan(*a, **k),
    )
    writes.clear()
    report = incremental_night(store, out)
    assert writes == [] and planned == []
    assert _identities(out) == before
    assert report.runs.equals(first.runs) and report.problems.equals(first.problems)
    assert not report.full_regrade and report.carried_runs == 9
    assert report.kept_run_ids == frozenset(first.runs["run_id"])
    assert report.written == first.written and report.exit_code == first.exit_code
    assert (report.event_files, report.event_files_read) == (3, 0)
    assert_as_a_full_regrade(store, out, "nothing-new")


def _invoke(store: dict[str, Path], out: Path, *extra: str) -> tuple[int, str]:
    args = ["run", str(store["events"]), "--suites", str(store["suites"]), "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, "--incremental", *extra])
    return result.exit_code, result.stdout


@pytest.mark.parametrize("extra", [(), ("--json",)])
def test_e156_the_terminal_says_what_a_night_that_writes_says(
    store: dict[str, Path], writes: list[str], extra: tuple[str, ...]
) -> None:
    """The terminal and `--json` of a night that leaves the outputs are those of the same night
    that writes them (made to write by removing run-inputs.json, which it then writes again),
    exit code included; a skipped run (exit 3) is told alike."""
    broken = standard_run("acme/broken-run").rows
    broken[3]["sequence"] = None  # E-76: the run is not graded, an error problem
    write_events(store["events"] / "broken.parquet", broken)
    out = store["root"] / "out"
    code, _ = _invoke(store, out, *extra)
    assert code == 3
    writes.clear()
    kept = _invoke(store, out, *extra)
    assert writes == []
    (out / "run-inputs.json").unlink()
    written = _invoke(store, out, *extra)
    assert writes == ["outputs"]
    assert kept == written and kept[0] == 3
    assert "kept 10 eval runs unchanged" in kept[1] or '"kept": 10' in kept[1]


def test_e156_a_report_made_from_the_outputs_stays_with_them(
    store: dict[str, Path], writes: list[str]
) -> None:
    """E-88 removes the report and exports once the tables they were made from are replaced; a
    night that leaves the tables leaves them too. One that writes removes them."""
    out = store["root"] / "out"
    incremental_night(store, out)
    (out / "report.html").write_text("made from these tables\n", encoding="utf-8")
    incremental_night(store, out)
    assert (out / "report.html").read_text(encoding="utf-8") == "made from these tables\n"
    write_night(store["events"], 3, runs=3)
    incremental_night(store, out)
    assert not (out / "report.html").exists() and writes == ["outputs", "outputs"]


# --------------------------------------------------------------------------------------------
# what makes a night with no new run write all the same


def test_e156_events_given_otherwise_are_recorded(
    store: dict[str, Path], writes: list[str]
) -> None:
    """The same files named one by one rather than by their directory: run-inputs.json records
    the paths as given (E-118), so the night writes, and what it writes equals a full
    regrade's."""
    out = store["root"] / "out"
    incremental_night(store, out)
    files = sorted(store["events"].glob("*.parquet"))
    writes.clear()
    incremental_night(store, out, events=files)
    assert writes == ["outputs"]
    recorded = json.loads((out / "run-inputs.json").read_text(encoding="utf-8"))
    assert recorded["events"] == [str(path) for path in files]


def test_e156_a_new_unusable_file_is_told(store: dict[str, Path], writes: list[str]) -> None:
    """A file that cannot be read appears beside the kept ones: no run changed, but its problem
    is in problems.parquet and the exit code says so (E-152 reads no kept file for it)."""
    out = store["root"] / "out"
    incremental_night(store, out)
    (store["events"] / "junk.parquet").write_bytes(b"not parquet at all")
    writes.clear()
    report = incremental_night(store, out)
    assert writes == ["outputs"] and report.exit_code == 3
    assert "junk.parquet" in " ".join(report.problems["message"].to_list())
    fresh = store["root"] / "fresh"
    api.write_outputs([store["events"]], fresh, [store["suites"]])
    assert read_outputs(out) == read_outputs(fresh)


# --------------------------------------------------------------------------------------------
# fail closed: a damaged or changed output is still caught


def _flip_byte_keeping_mtime(path: Path) -> None:
    """One byte inside the data changed, the size and modification time put back: only the
    status-change time tells."""
    status = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 4] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


@pytest.mark.parametrize("name", ["trials.parquet", "summaries.jsonl", "tasks.parquet"])
def test_e156_a_damaged_output_after_a_night_with_nothing_new_is_caught(
    store: dict[str, Path], name: str
) -> None:
    """After a night that left the outputs, one of them changed in place (its size and mtime
    put back): the next night sees its identity moved, reads it whole, and grades everything
    again saying why (E-71); the files equal a full regrade's."""
    out = store["root"] / "out"
    incremental_night(store, out)
    incremental_night(store, out)  # nothing new: left as it is
    _flip_byte_keeping_mtime(out / name)
    report = incremental_night(store, out)
    assert report.full_regrade
    assert report.regrade_reason == f"{name}: its sha256 is not the one manifest.json records"
    assert_as_a_full_regrade(store, out, "damaged")


def _hide_damage(out: Path, name: str) -> None:
    """Damage `name` the way the identity cannot see (as a disk that flips a bit under the file
    system would): its record in the manifest is given the damaged file's times."""
    _flip_byte_keeping_mtime(out / name)
    path = out / "manifest.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    status = (out / name).stat()
    doc["files"][name].update(mtime_ns=status.st_mtime_ns, ctime_ns=status.st_ctime_ns)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True) + "\n")


@pytest.mark.parametrize("name", ["trials.parquet", "summaries.jsonl"])
def test_e156_nothing_is_carried_from_a_file_whose_sha256_was_not_checked(
    store: dict[str, Path], name: str, writes: list[str]
) -> None:
    """What the trust in identity leaves: damage that keeps a file's identity is not seen by a
    night that leaves the files as they are, but the first night that writes reads every file
    whole before it carries a byte: a full regrade, saying which file, equal to a full
    regrade's."""
    out = store["root"] / "out"
    incremental_night(store, out)
    _hide_damage(out, name)
    incremental_night(store, out)
    assert writes == ["outputs"]  # the first night; the second left the (damaged) file
    write_night(store["events"], 3, runs=3)
    report = incremental_night(store, out)
    assert report.full_regrade
    assert report.regrade_reason == f"{name}: its sha256 is not the one manifest.json records"
    assert_as_a_full_regrade(store, out, "hidden-damage")


# --------------------------------------------------------------------------------------------
# an identity that moved with the same bytes: one read, and the record follows


@pytest.mark.parametrize("change", ["touched", "copied back"])
def test_e156_an_output_touched_or_copied_back_is_read_once_and_left(
    store: dict[str, Path], writes: list[str], change: str
) -> None:
    """A false alarm (an output touched, or copied away and back with `cp -p`) costs one read
    of it: the night checks its sha256, leaves every output as it is and records the identity
    found in the manifest (replaced alone); the next night reads nothing and writes nothing."""
    out = store["root"] / "out"
    incremental_night(store, out)
    target = out / "trials.parquet"
    if change == "touched":
        os.utime(target)
    else:
        data, status = target.read_bytes(), target.stat()
        target.unlink()
        target.write_bytes(data)
        os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns))
    before = _identities(out, OUTPUT_FILES)
    writes.clear()
    report = incremental_night(store, out)
    assert writes == ["manifest"] and not report.full_regrade
    assert _identities(out, OUTPUT_FILES) == before
    recorded = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert recorded["files"]["trials.parquet"]["ctime_ns"] == target.stat().st_ctime_ns
    settled = _identities(out)
    incremental_night(store, out)
    assert writes == ["manifest"] and _identities(out) == settled
    assert_as_a_full_regrade(store, out, change)


def test_e156_a_manifest_without_output_identities_is_read_once(
    store: dict[str, Path], writes: list[str]
) -> None:
    """A manifest written before E-156 records no identity of the outputs: the first night
    reads each whole (E-71), leaves them and records their identities; the next one reads none."""
    out = store["root"] / "out"
    incremental_night(store, out)
    path = out / "manifest.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    for record in doc["files"].values():
        del record["mtime_ns"], record["ctime_ns"]
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    before = _identities(out, OUTPUT_FILES)
    read: list[str] = []
    real = incremental.check_outputs

    def spy(out_dir: Path, manifest: Any, by_identity: bool = False, names: Any = None) -> Any:
        found = real(out_dir, manifest, by_identity, *([names] if names is not None else []))
        read.extend(n for n in (names or OUTPUT_FILES) if n not in found[1])
        return found

    incremental_check = pytest.MonkeyPatch()
    incremental_check.setattr(incremental, "check_outputs", spy)
    try:
        writes.clear()
        incremental_night(store, out)
        assert sorted(read) == sorted(OUTPUT_FILES) and writes == ["manifest"]
        read.clear()
        incremental_night(store, out)
        assert read == [] and writes == ["manifest"]
    finally:
        incremental_check.undo()
    assert _identities(out, OUTPUT_FILES) == before
    assert_as_a_full_regrade(store, out, "old-manifest")


# --------------------------------------------------------------------------------------------
# an event file rewritten in place with other content is graded again


def _rewrite_in_place(path: Path, run_id: str, score: float) -> None:
    """Rewrite the event file in place (the same inode) with one eval.scored of `run_id` scoring
    otherwise, then put its modification time back."""
    status = path.stat()
    rows = pq.read_table(path).to_pylist()
    for row in rows:
        payload = row["payload"]
        doc = json.loads(payload) if isinstance(payload, str) else payload
        if row["runId"] == run_id and row["type"] == "eval.scored" and doc["taskId"] == "beta":
            row["payload"] = json.dumps({**doc, "score": score})
    scratch = path.with_name("scratch.tmp")
    write_events(scratch, rows)
    with path.open("r+b") as handle:  # in place: the same inode
        handle.write(scratch.read_bytes())
        handle.truncate()
    scratch.unlink()
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert path.stat().st_ino == status.st_ino


@pytest.mark.parametrize("night", [0, 2])
def test_e156_an_event_file_rewritten_in_place_is_graded_again(
    store: dict[str, Path], night: int, copied: dict[str, int]
) -> None:
    """After a night that left the outputs, an event file rewritten in place with other content
    and its mtime put back: its changed run is graded again (the first night's, whose rows come
    first: nothing before it to copy; the last night's: the rows before it copied) and the
    outputs equal a full regrade's."""
    out = store["root"] / "out"
    incremental_night(store, out)
    incremental_night(store, out)
    _rewrite_in_place(store["events"] / f"night-{night:02d}.parquet", night_run_id(night, 1), 0.25)
    report = incremental_night(store, out)
    assert not report.full_regrade and report.runs.height - report.carried_runs == 1
    # the changed run is the 2nd (night 0) or the 8th (night 2) of 9: its rows start at
    # trial row 2 or 14, task row 2 or 14; whole row groups of 4 rows before them are copied
    assert copied == ({} if night == 0 else {"trials.parquet": 3, "tasks.parquet": 3})
    assert_as_a_full_regrade(store, out, f"rewritten-{night}")


# --------------------------------------------------------------------------------------------
# a night that writes copies the leading row groups


def test_e156_a_new_night_copies_the_row_groups_before_its_runs(
    store: dict[str, Path], copied: dict[str, int]
) -> None:
    """The night's runs sort after the kept ones: every whole row group of the previous tables
    is copied (18 rows: 4 of 4), the rest encoded; the files equal a full regrade's."""
    out = store["root"] / "out"
    incremental_night(store, out)
    write_night(store["events"], 3, runs=3)
    report = incremental_night(store, out)
    assert report.runs.height - report.carried_runs == 3
    assert copied == {"trials.parquet": 4, "tasks.parquet": 4}
    assert_as_a_full_regrade(store, out, "new-night")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("a run sorting first", {}),
        ("a run in the middle", {"trials.parquet": 2, "tasks.parquet": 2}),
        ("a run removed", {"trials.parquet": 1, "tasks.parquet": 1}),
    ],
)
def test_e156_only_the_rows_before_the_first_change_are_copied(
    store: dict[str, Path],
    copied: dict[str, int],
    change: str,
    expected: dict[str, int],
) -> None:
    """A run new before every kept one copies nothing; one new among them, or one removed,
    copies the whole row groups before it (its rows and the ones after are encoded); the files
    equal a full regrade's each time."""
    out = store["root"] / "out"
    incremental_night(store, out)
    if change == "a run sorting first":
        write_events(store["events"] / "early.parquet", standard_run("acme/aaa-first").rows)
    elif change == "a run in the middle":  # after night 1's first run: trial row 8 onwards
        write_events(store["events"] / "mid.parquet", standard_run(night_run_id(1, 0) + "b").rows)
    else:  # night 0's last run: its rows start at trial row 4
        rows = [r for n in range(2) for r in standard_run(night_run_id(0, n)).rows]
        write_events(store["events"] / "night-00.parquet", rows)
    incremental_night(store, out)
    assert copied == expected
    assert_as_a_full_regrade(store, out, change.replace(" ", "-"))


def _rewrite_with(path: Path, **options: Any) -> None:
    table = pq.read_table(path)
    pq.write_table(table, path, row_group_size=4, **options)


@pytest.mark.parametrize(
    "rewrite",
    [
        lambda p: _rewrite_with(p, compression="snappy", write_statistics=False),
        lambda p: _rewrite_with(p, compression="zstd", write_statistics=True),
    ],
)
def test_e156_a_table_written_otherwise_is_encoded_whole(
    store: dict[str, Path], copied: dict[str, int], rewrite: Callable[[Path], None]
) -> None:
    """A previous table whose footer, row groups aside, is not the one this writer writes (other
    compression, statistics; another Parquet writer) has none of its row groups copied: every
    row is encoded, and the files equal a full regrade's."""
    out = store["root"] / "out"
    incremental_night(store, out)
    rewrite(out / "trials.parquet")
    path = out / "manifest.json"
    doc = json.loads(path.read_text(encoding="utf-8"))  # trusted as if this run had written it
    data = (out / "trials.parquet").read_bytes()
    doc["files"]["trials.parquet"].update(
        bytes=len(data), sha256=__import__("hashlib").sha256(data).hexdigest()
    )
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    write_night(store["events"], 3, runs=3)
    incremental_night(store, out)
    assert copied == {"tasks.parquet": 4}
    assert_as_a_full_regrade(store, out, "written-otherwise")


# --------------------------------------------------------------------------------------------
# the pieces


def test_e156_a_footer_is_written_back_byte_for_byte(store: dict[str, Path]) -> None:
    """The compact protocol reads each table's footer into its fields and writes it back as
    Thrift's C++ library wrote it."""
    out = store["root"] / "out"
    incremental_night(store, out)
    for name in ("runs", "tasks", "trials", "problems"):
        data = (out / f"{name}.parquet").read_bytes()
        length = int.from_bytes(data[-8:-4], "little")
        footer = data[-8 - length : -8]
        assert thrift_compact.write_struct(thrift_compact.read_struct(footer)) == footer
    with pytest.raises(thrift_compact.ThriftError):
        thrift_compact.read_struct(footer[:-3])


@pytest.mark.parametrize("run_id", ["acme/ünïcode-run", "acme/" + "long-" * 1000])
def test_e156_a_carried_line_is_found_by_itsnight_run_id(tmp_path: Path, run_id: str) -> None:
    """Carried summary lines are read as bytes and told by their runId, decoded from the line's
    start (the whole line when the id is longer than that)."""
    line = writer.summary_line(run_id, {"runId": run_id, "x": "é" * 3000}).encode("utf-8")
    assert incremental._run_id_of_line(line) == run_id
    with pytest.raises(ValueError):
        incremental._run_id_of_line(b'{"summary": {}}\n')
