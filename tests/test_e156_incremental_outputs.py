"""E-156: a night of `run --incremental` costs what it adds in its outputs too.

A night that adds runs copies the leading row groups of the previous tables, the rows before its
first new, changed or removed run, as they are. Every answer equals a full regrade's, byte for
byte.

The row groups are made small here (`writer.ROW_GROUP_ROWS`) so that a few runs fill several.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from evalbatch import api
from evalbatch.outputs import parquet_splice, thrift_compact, writer
from evalbatch.pipeline import incremental
from tests.helpers import (
    make_suite,
    read_outputs,
    standard_run,
    write_events,
    write_json,
)


def _run_id(night: int, number: int) -> str:
    return f"acme/night-{night:02d}-run-{number:02d}"


def _night(events: Path, night: int, runs: int = 3) -> Path:
    rows = [row for n in range(runs) for row in standard_run(_run_id(night, n)).rows]
    return write_events(events / f"night-{night:02d}.parquet", rows)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Three nights' files of three runs each (two trials and two tasks a run), the suite, and
    row groups of 4 rows: the 18 trial rows fill four whole row groups and part of a fifth."""
    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 4)
    events = tmp_path / "events"
    for night in range(3):
        _night(events, night)
    suites = tmp_path / "suites"
    write_json(suites / "basic.json", make_suite())
    return {"events": events, "suites": suites, "root": tmp_path}


def _incremental(store: dict[str, Path], out: Path, events: Any = None) -> api.RunReport:
    given = [store["events"]] if events is None else events
    return api.write_outputs(given, out, [store["suites"]], incremental_run=True)


def _assert_equals_full(store: dict[str, Path], out: Path, name: str) -> None:
    """The outputs equal a plain run's, and the manifest a first incremental run's."""
    fresh = store["root"] / f"full-{name}"
    api.write_outputs([store["events"]], fresh, [store["suites"]])
    assert read_outputs(out) == read_outputs(fresh)
    again = store["root"] / f"first-{name}"
    _incremental(store, again)
    assert (out / "manifest.json").read_bytes() == (again / "manifest.json").read_bytes()


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
# a night that writes copies the leading row groups


def test_e156_a_new_night_copies_the_row_groups_before_its_runs(
    store: dict[str, Path], copied: dict[str, int]
) -> None:
    """The night's runs sort after the kept ones: every whole row group of the previous tables
    is copied (18 rows: 4 of 4), the rest encoded; the files equal a full regrade's."""
    out = store["root"] / "out"
    _incremental(store, out)
    _night(store["events"], 3)
    report = _incremental(store, out)
    assert report.runs.height - report.carried_runs == 3
    assert copied == {"trials.parquet": 4, "tasks.parquet": 4}
    _assert_equals_full(store, out, "new-night")


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
    _incremental(store, out)
    if change == "a run sorting first":
        write_events(store["events"] / "early.parquet", standard_run("acme/aaa-first").rows)
    elif change == "a run in the middle":  # after night 1's first run: trial row 8 onwards
        write_events(store["events"] / "mid.parquet", standard_run(_run_id(1, 0) + "b").rows)
    else:  # night 0's last run: its rows start at trial row 4
        rows = [r for n in range(2) for r in standard_run(_run_id(0, n)).rows]
        write_events(store["events"] / "night-00.parquet", rows)
    _incremental(store, out)
    assert copied == expected
    _assert_equals_full(store, out, change.replace(" ", "-"))


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
    _incremental(store, out)
    rewrite(out / "trials.parquet")
    path = out / "manifest.json"
    doc = json.loads(path.read_text(encoding="utf-8"))  # trusted as if this run had written it
    data = (out / "trials.parquet").read_bytes()
    doc["files"]["trials.parquet"].update(
        bytes=len(data), sha256=__import__("hashlib").sha256(data).hexdigest()
    )
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    _night(store["events"], 3)
    _incremental(store, out)
    assert copied == {"tasks.parquet": 4}
    _assert_equals_full(store, out, "written-otherwise")


# --------------------------------------------------------------------------------------------
# the pieces


def test_e156_a_footer_is_written_back_byte_for_byte(store: dict[str, Path]) -> None:
    """The compact protocol reads each table's footer into its fields and writes it back as
    Thrift's C++ library wrote it."""
    out = store["root"] / "out"
    _incremental(store, out)
    for name in ("runs", "tasks", "trials", "problems"):
        data = (out / f"{name}.parquet").read_bytes()
        length = int.from_bytes(data[-8:-4], "little")
        footer = data[-8 - length : -8]
        assert thrift_compact.write_struct(thrift_compact.read_struct(footer)) == footer
    with pytest.raises(thrift_compact.ThriftError):
        thrift_compact.read_struct(footer[:-3])


@pytest.mark.parametrize("run_id", ["acme/ünïcode-run", "acme/" + "long-" * 1000])
def test_e156_a_carried_line_is_found_by_its_run_id(tmp_path: Path, run_id: str) -> None:
    """Carried summary lines are read as bytes and told by their runId, decoded from the line's
    start (the whole line when the id is longer than that)."""
    line = writer.summary_line(run_id, {"runId": run_id, "x": "é" * 3000}).encode("utf-8")
    assert incremental._run_id_of_line(line) == run_id
    with pytest.raises(ValueError):
        incremental._run_id_of_line(b'{"summary": {}}\n')
