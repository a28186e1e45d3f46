"""Provenance (decisions E-54): each run row says which evalbatch, which suite file (its
sha256), which grade-changing options and which events produced it; `evalbatch --version`.
Resource options (E-64): `--threads`, `--memory-limit`, `--temp-dir` reach every DuckDB
connection of every command that reads data.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.extract import trial_tables
from evalbatch.inputs import event_files
from evalbatch.options import GradeOptions, Resources
from evalbatch.pipeline import incremental
from tests.helpers import (
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SAMPLES,
    make_suite,
    standard_run,
    write_events,
    write_json,
)

#: a slow family (provenance over graded runs):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

SUITE_FILES = {
    "acme.support.evals.fixture-miss": "fixture-miss.json",
    "acme.support.evals.trajectory": "trajectory.json",
    "acme.support.evals.trials": "trials.json",
}


def _runs(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "runs.parquet")


def test_run_rows_name_version_suite_file_options_and_events(tmp_path: Path) -> None:
    """E-54 (provenance)."""
    out = tmp_path / "out"
    options = GradeOptions(default_pass_score=0.8, on_miss_default="fail")
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES], options=options)
    runs = _runs(out)
    assert runs.height == 3
    for row in runs.iter_rows(named=True):
        assert row["evalbatch_version"] == metadata.version("evalbatch")
        suite_file = SAMPLE_SUITES / SUITE_FILES[row["suite_id"]]
        assert row["suite_sha256"] == hashlib.sha256(suite_file.read_bytes()).hexdigest()
        assert row["default_pass_score"] == 0.8
        assert row["on_miss_default"] == "fail"
    # the fingerprint is the one `run --incremental` records for the same events
    con = trial_tables.new_connection()
    prints = incremental.event_fingerprints(con, event_files.scan(con, [str(SAMPLE_EVENTS)]))
    assert dict(runs.select("run_id", "events_fingerprint").iter_rows()) == prints


def test_events_fingerprint_follows_the_events_not_their_files(tmp_path: Path) -> None:
    """E-54 (provenance).

    Re-exported in another order or split over files: the same fingerprint; one payload
    changed: another."""
    suites = tmp_path / "suites"
    write_json(suites / "basic.json", make_suite())
    rows = standard_run("acme/run-0001").rows + standard_run("acme/run-0002").rows

    def prints(*files: Path) -> dict[str, str]:
        out = tmp_path / f"out-{len(list(tmp_path.iterdir()))}"
        api.write_outputs(list(files), out, [suites])
        return dict(_runs(out).select("run_id", "events_fingerprint").iter_rows())

    one = prints(write_events(tmp_path / "a.parquet", rows))
    split = prints(
        write_events(tmp_path / "b1.parquet", list(reversed(rows[:9]))),
        write_events(tmp_path / "b2.parquet", rows[9:]),
    )
    assert one == split
    changed = list(rows)
    changed[4] = {**changed[4], "payload": {**changed[4]["payload"], "inputTokens": 101}}
    other = prints(write_events(tmp_path / "c.parquet", changed))
    assert other["acme/run-0001"] != one["acme/run-0001"]
    assert other["acme/run-0002"] == one["acme/run-0002"]


def test_batch_fingerprint_counts_every_row_the_files_hold(tmp_path: Path) -> None:
    """E-54 (provenance), D-3: the fingerprint each batch takes from its events pass equals
    the one read from the files, also when rows repeat a key (an exact copy, a conflict) and
    when a payload is re-read by the strict parser (NaN), with runs split over batches."""
    suites = tmp_path / "suites"
    write_json(suites / "basic.json", make_suite())
    copied = standard_run("acme/run-copy").rows
    copied.append(dict(copied[3]))
    conflict = standard_run("acme/run-conflict").rows
    conflict.append({**conflict[1], "payload": {**conflict[1]["payload"], "taskCount": 9}})
    lenient = standard_run("acme/run-nan").rows
    plain = standard_run("acme/run-plain").rows
    events = write_events(tmp_path / "e.parquet", copied + conflict + lenient + plain)
    table = pl.read_parquet(events)
    nan_row = (pl.col("runId") == "acme/run-nan") & (pl.col("type") == "provider.usage")
    table = table.with_columns(
        pl.when(nan_row)
        .then(pl.col("payload").str.replace('"inputTokens":', '"extra":NaN,"inputTokens":'))
        .otherwise(pl.col("payload"))
        .alias("payload")
    )
    assert table.filter(nan_row).height and table["payload"].str.contains("NaN").any()
    table.write_parquet(events)
    out = tmp_path / "out"
    api.write_outputs([events], out, [suites], resources=api.Resources(batch_events=30))
    con = trial_tables.new_connection()
    prints = incremental.event_fingerprints(con, event_files.scan(con, [str(events)]))
    got = dict(_runs(out).select("run_id", "events_fingerprint").iter_rows())
    assert set(got) == {"acme/run-copy", "acme/run-conflict", "acme/run-nan", "acme/run-plain"}
    assert got == {run: prints[run] for run in got}
    assert got["acme/run-copy"].split(":")[0] == str(len(copied))


def test_ungraded_and_suiteless_runs_carry_provenance(tmp_path: Path) -> None:
    """A run graded from the host record (D-4) has no suite hash; a run not graded still says
    what read it."""
    rows = standard_run("acme/run-nosuite").rows
    conflict = standard_run("acme/run-conflict").rows
    conflict.append({**conflict[1], "payload": {**conflict[1]["payload"], "taskCount": 9}})
    out = tmp_path / "out"
    api.write_outputs([write_events(tmp_path / "e.parquet", rows + conflict)], out)
    runs = {r["run_id"]: r for r in _runs(out).iter_rows(named=True)}
    assert runs["acme/run-nosuite"]["graded"] and runs["acme/run-nosuite"]["suite_sha256"] is None
    assert not runs["acme/run-conflict"]["graded"]
    for row in runs.values():
        assert row["evalbatch_version"] == metadata.version("evalbatch")
        assert row["events_fingerprint"] and row["default_pass_score"] == 1.0


def test_suite_given_in_memory_is_hashed_as_canonical_json(tmp_path: Path) -> None:
    """E-54 (provenance)."""
    doc = make_suite()
    events = write_events(tmp_path / "e.parquet", standard_run("acme/run-0001").rows)
    result = api.grade_paths([events], suite_docs=[doc])
    from evalbatch import jsonvalue

    canonical = jsonvalue.canonical_text(json.dumps(doc))
    assert result.runs["suite_sha256"].to_list() == [hashlib.sha256(canonical.encode()).hexdigest()]


def test_version_option() -> None:
    """E-54 (provenance)."""
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert metadata.version("evalbatch") in result.output


# --------------------------------------------------------------------------------------------
# resource options on every command that reads data


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("graded")
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    return out


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, ...]]]:
    """The (threads, memory_limit, temp_directory, enable_progress_bar_print) DuckDB reports for
    each connection made, read back right after its resources were applied; every connection
    must go through that step."""
    found: list[tuple[Any, ...]] = []
    made: list[int] = []
    real_connect = duckdb.connect
    real_apply = Resources.apply

    def connect(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return real_connect(*args, **kwargs)

    def apply(self: Resources, con: Any) -> None:
        real_apply(self, con)
        found.append(
            tuple(
                con.execute(f"SELECT current_setting('{name}')").fetchall()[0][0]
                for name in (
                    "threads",
                    "memory_limit",
                    "temp_directory",
                    "enable_progress_bar_print",
                )
            )
        )

    monkeypatch.setattr(duckdb, "connect", connect)
    monkeypatch.setattr(Resources, "apply", apply)
    yield found
    assert len(found) == len(made), "a DuckDB connection was made without the resources"


def _ndjson(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    line = {"runId": "acme/run-0001", "sequence": 0, "type": "run.started", "payload": {}}
    (where / "e.ndjson").write_text(json.dumps(line) + "\n")
    return where / "e.ndjson"


def _command(name: str, tmp: Path, graded: Path) -> list[Any]:
    suites = ["--suites", SAMPLE_SUITES]
    return {
        "run": ["run", SAMPLE_EVENTS, *suites, "--out", tmp / "o"],
        "verify": ["verify", SAMPLE_EVENTS, *suites],
        "regress": [
            "regress",
            SAMPLES / "regress" / "baseline.parquet",
            SAMPLES / "regress" / "candidate.parquet",
            *suites,
        ],
        "sql": ["sql", SAMPLE_EVENTS, *suites, "-e", "SELECT 1"],
        "explain": ["explain", SAMPLE_EVENTS, *suites, "--run-id", "acme/run-trials-k2-0001"],
        "ingest": ["ingest", _ndjson(tmp), "--out", tmp / "ingested"],
        "export": ["export", "otel", graded, "--events", SAMPLE_EVENTS, "--out", tmp / "x"],
    }[name]


COMMANDS = ("explain", "export", "ingest", "regress", "run", "sql", "verify")


@pytest.mark.parametrize("command", COMMANDS)
def test_resource_options_reach_every_connection(
    command: str, tmp_path: Path, graded: Path, seen: list[tuple[Any, ...]]
) -> None:
    """E-64: each command that reads data honours the three options on every connection."""
    spill = tmp_path / "spill"
    args = [*_command(command, tmp_path, graded), "--threads", "1", "--memory-limit", "1GB"]
    args += ["--temp-dir", spill]
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code in (0, 1, 3), result.output
    assert seen, f"{command} made no DuckDB connection"
    for threads, memory, temp, bar_printed in seen:
        assert not bar_printed  # DuckDB's bar would come before a --json document on stdout
        assert int(threads) == 1
        assert memory.replace(" ", "") in ("1.0GiB", "953.6MiB", "1GB", "1.0GB", "953.6MB")
        assert Path(temp) == spill


@pytest.mark.parametrize("command", ["explain", "ingest"])
def test_resource_options_do_not_outlive_their_command(
    command: str, tmp_path: Path, graded: Path, seen: list[tuple[Any, ...]]
) -> None:
    """E-64 (resource options)."""
    spill = tmp_path / "spill"
    args = [*_command(command, tmp_path / "a", graded), "--threads", "1", "--temp-dir", spill]
    CliRunner().invoke(cli, [str(a) for a in args])
    before = len(seen)
    result = CliRunner().invoke(cli, [str(a) for a in _command(command, tmp_path / "b", graded)])
    assert result.exit_code in (0, 1, 3), result.output
    after = seen[before:]
    assert after and all(Path(temp) != spill for _, _, temp, _ in after)
