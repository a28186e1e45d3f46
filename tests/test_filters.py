"""Run filters (decisions E-63): `--run-id` globs, `--suite-id`, `--since`/`--until` on
`eval.started`, on `run`, `verify`, `regress` and `sql`, applied in the DuckDB scan.

A filtered run must equal a run over only the chosen runs' events, byte for byte: filtering is a
choice of input, never a change of grade (CONTRACT §4 determinism).

Sample `eval.started` times (data/samples): trajectory 2026-11-02T10:00:00.020Z, trials
11:00:00.020Z, fixture-miss 12:00:00.020Z; regress baseline 2026-11-01T09:00, candidate
2026-11-02T09:00.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.inputs import event_files
from evalbatch.inputs.event_files import RunFilter
from tests.helpers import (
    SAMPLE_EVENTS,
    SAMPLE_SUITES,
    SAMPLES,
    make_suite,
    read_outputs,
    standard_run,
    write_events,
    write_json,
)
from tests.logbuilder import write_raw_events

#: a slow family (the run filters on every command):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

TRAJECTORY = "acme/run-trajectory-0001"
TRIALS = "acme/run-trials-k2-0001"
FIXTURE = "acme/run-fixture-miss-0001"


def _rows(*paths: Path) -> list[dict[str, Any]]:
    columns = ["runId", "sequence", "type", "payload", "timestamp"]
    return [r for p in paths for r in pq.read_table(p, columns=columns).to_pylist()]


def _invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _sample_rows() -> list[dict[str, Any]]:
    return _rows(*sorted(SAMPLE_EVENTS.glob("*.parquet")))


@pytest.mark.parametrize(
    ("flags", "chosen"),
    [
        (["--run-id", "acme/run-tr*"], [TRAJECTORY, TRIALS]),
        (["--run-id", TRIALS, "--run-id", "*fixture*"], [FIXTURE, TRIALS]),
        (["--suite-id", "acme.support.evals.trials"], [TRIALS]),
        (["--since", "2026-11-02T10:30:00Z"], [FIXTURE, TRIALS]),
        (["--until", "2026-11-02T11:00:00.020Z"], [TRAJECTORY]),  # until is exclusive
        (
            ["--since", "2026-11-02T10:00:00.020", "--until", "2026-11-02T12:00Z"],
            [TRAJECTORY, TRIALS],
        ),
        (["--run-id", "acme/run-t*", "--suite-id", "acme.support.evals.trajectory"], [TRAJECTORY]),
        (["--until", "2000-01-01", "--allow-empty"], []),
    ],
)
def test_run_filter_equals_grading_only_the_chosen_runs(
    tmp_path: Path, flags: list[str], chosen: list[str]
) -> None:
    """E-63 (run filters).

    Globs match any of them; a suite and time bounds select on eval.started (a time without a
    zone is UTC; since inclusive, until exclusive); several filters all apply. The outputs equal
    an unfiltered run over the chosen runs' events alone."""
    out = tmp_path / "filtered"
    result = _invoke(
        "run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", out, "--quiet", *flags
    )
    assert result.exit_code == 0, result.output
    alone = (
        write_events(
            tmp_path / "alone.parquet", [r for r in _sample_rows() if r["runId"] in chosen]
        )
        if chosen
        else None
    )
    summaries = [json.loads(x)["runId"] for x in (out / "summaries.jsonl").read_text().splitlines()]
    assert summaries == chosen
    if alone is not None:
        expected = tmp_path / "alone-out"
        api.write_outputs([alone], expected, [SAMPLE_SUITES])
        assert read_outputs(out) == read_outputs(expected)


def test_filtered_out_runs_are_never_read(tmp_path: Path) -> None:
    """The filter is applied in the scan: a run left out is not parsed, so its broken payload
    and conflicting duplicates (D-3, D-7) raise no problem; the run kept grades as alone."""
    suites = tmp_path / "suites"
    write_json(suites / "basic.json", make_suite())
    broken = standard_run("acme/run-broken").rows
    broken[3] = {**broken[3], "payload": "{not json"}
    broken.append({**broken[5], "payload": {"different": True}})  # a conflicting duplicate
    good = standard_run("acme/run-good").rows
    events = write_events(tmp_path / "e.parquet", broken + good)
    out = tmp_path / "out"
    result = _invoke(
        "run", events, "--suites", suites, "--out", out, "--quiet", "--run-id", "acme/run-good"
    )
    assert result.exit_code == 0, result.output
    problems = pq.read_table(out / "problems.parquet").to_pylist()
    assert problems == []
    alone = tmp_path / "alone"
    api.write_outputs([write_events(tmp_path / "g.parquet", good)], alone, [suites])
    assert read_outputs(out) == read_outputs(alone)


def test_e140_run_ids_named_on_the_column_choose_the_same_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E-140: the chosen run ids are also named on a text run-id column, where DuckDB skips the
    rest unread; the outputs are those of the chosen runs matched through `selected_runs` alone,
    with a blank run id (E-3) and an integer run-id column (read as its text) beside them."""
    suites = tmp_path / "suites"
    write_json(suites / "basic.json", make_suite())
    events = tmp_path / "events"
    blank = {**standard_run("acme/run-a").rows[0], "runId": " "}
    text = standard_run("acme/run-a").rows + standard_run("acme/run-b").rows + [blank]
    write_events(events / "text.parquet", text)
    numbered = [{**row, "runId": 7} for row in standard_run("7").rows]
    write_raw_events(events / "numbered.parquet", numbered, {"runId": pa.int64()})
    written = {}
    for pushed in (event_files.PUSHED_RUN_IDS, 0):
        monkeypatch.setattr(event_files, "PUSHED_RUN_IDS", pushed)
        out = tmp_path / f"out-{pushed}"
        chosen = ["--run-id", "acme/run-a", "--run-id", "7"]
        result = _invoke("run", events, "--suites", suites, "--out", out, "--quiet", *chosen)
        assert result.exit_code == 0, result.output
        written[pushed] = read_outputs(out)
    assert written[event_files.PUSHED_RUN_IDS] == written[0]
    lines = written[0]["summaries.jsonl"].decode().splitlines()
    assert [json.loads(line)["runId"] for line in lines] == ["7", "acme/run-a"]


def test_e140_only_a_text_run_id_column_is_named_the_chosen_ids() -> None:
    """E-140: the ids are named on the column only where its value is the run id (text: a chosen
    id is never blank), and only up to `PUSHED_RUN_IDS` of them."""
    assert event_files._pushed_ids("runId", "VARCHAR", frozenset({"a", "o'b"})) == (
        "\"runId\" IN ('a', 'o''b')"
    )
    assert event_files._pushed_ids("runId", "VARCHAR", frozenset()) == "false"
    assert event_files._pushed_ids("runId", "BIGINT", frozenset({"7"})) is None
    assert event_files._pushed_ids("runId", "VARCHAR", None) is None
    many = frozenset(str(n) for n in range(event_files.PUSHED_RUN_IDS + 1))
    assert event_files._pushed_ids("runId", "VARCHAR", many) is None


def test_filter_with_incremental(tmp_path: Path) -> None:
    """E-50 within a filter: the incremental run's input is the filtered runs."""
    out = tmp_path / "out"
    flags = ["--run-id", "acme/run-tr*"]
    for _ in range(2):
        result = _invoke(
            "run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", out, "--incremental", *flags
        )
        assert result.exit_code == 0, result.output
    assert "kept 2 unchanged" in result.output
    plain = tmp_path / "plain"
    _invoke("run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--out", plain, *flags)
    assert read_outputs(out) == read_outputs(plain)


def test_verify_filter() -> None:
    """CONTRACT §8 on the chosen runs only: the filtered report holds exactly the trials run,
    judged as in the unfiltered report."""
    args = ["verify", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--json"]
    everything = json.loads(_invoke(*args).stdout)
    result = _invoke(*args, "--suite-id", "acme.support.evals.trials")
    report = json.loads(result.stdout)
    assert [run["runId"] for run in report["runs"]] == [TRIALS]
    assert report["runs"] == [r for r in everything["runs"] if r["runId"] == TRIALS]
    assert report["findings"] == [f for f in everything["findings"] if f["runId"] == TRIALS]


def test_regress_filter_on_logs_and_on_task_tables(tmp_path: Path) -> None:
    """§5: the filter picks the runs each side contributes; a tasks.parquet side is filtered by
    run id and suite (it has no eval.started time)."""
    base = SAMPLES / "regress" / "baseline.parquet"
    cand = SAMPLES / "regress" / "candidate.parquet"
    result = _invoke("regress", base, cand, "--suites", SAMPLE_SUITES, "--json")
    assert result.exit_code == 1, result.output  # the samples' candidate regressed
    result = _invoke(
        "regress", base, cand, "--suites", SAMPLE_SUITES, "--since", "2026-11-01T12:00Z"
    )
    # E-65: the baseline side holds no run after the filter: nothing compared, refused
    assert result.exit_code == 2, result.output
    assert "holds no eval run matching the run filters" in result.output
    out = tmp_path / "graded"
    api.write_outputs([base, cand], out, [SAMPLE_SUITES])
    tasks = out / "tasks.parquet"
    pair = ["--base-run-id", "acme/run-regress-baseline-0001"]
    pair += ["--cand-run-id", "acme/run-regress-candidate-0001"]
    result = _invoke(
        "regress", tasks, tasks, *pair, "--suite-id", "acme.support.evals.regression", "--json"
    )
    assert result.exit_code == 1, result.output
    result = _invoke("regress", tasks, tasks, "--run-id", "*candidate*", "--allow-same-run")
    assert result.exit_code == 0, result.output  # the candidate against itself: unchanged
    assert (
        "baseline acme/run-regress-candidate-0001 -> candidate acme/run-regress-candidate-0001"
        in result.output
    )
    result = _invoke("regress", tasks, tasks, "--suite-id", "no.such.suite")
    assert result.exit_code == 2, result.output  # E-65: nothing compared
    assert "holds no eval run matching the run filters" in result.output


def test_sql_filter() -> None:
    """E-63 (run filters)."""
    result = _invoke(
        "sql",
        SAMPLE_EVENTS,
        "--suites",
        SAMPLE_SUITES,
        "--format",
        "json",
        "--run-id",
        "*trials*",
        "-e",
        "SELECT DISTINCT run_id FROM event_log ORDER BY 1",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"run_id": TRIALS}]
    result = _invoke(
        "sql",
        SAMPLE_EVENTS,
        "--suites",
        SAMPLE_SUITES,
        "--format",
        "json",
        "--run-id",
        "*trials*",
        "-e",
        "SELECT run_id FROM runs",
    )
    assert json.loads(result.stdout) == [{"run_id": TRIALS}]


def test_a_bad_time_is_a_usage_error() -> None:
    """E-63 (run filters)."""
    result = _invoke("run", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--since", "last tuesday")
    assert result.exit_code == 2
    assert "not an ISO 8601 date or time" in result.output


def test_library_filter_object() -> None:
    """E-63 (run filters)."""
    chosen = RunFilter(run_ids=("*trajectory*",))
    result = api.grade_paths([SAMPLE_EVENTS], [SAMPLE_SUITES], run_filter=chosen)
    assert sorted(result.summaries) == [TRAJECTORY]
    assert RunFilter().empty and not chosen.empty
