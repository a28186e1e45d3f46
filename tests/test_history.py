"""Across nights, the history (E-96): each suite's and task's runs in time order, read
from the output directories `evalbatch run` wrote on several nights (or one holding them all),
with score, gating score, pass rate, pass^k, cost and tokens; `evalbatch history` prints it (a
table, or --json), `evalbatch.connect` holds it as `history`, and `evalbatch report --history`
draws a trend chart per suite. Fail closed (CONTRACT §6): a directory that cannot be read is
named, nothing shown is never exit 0.

The nights are generated and graded with the library (`write_outputs`); every expected number is
worked out by hand from the generator below.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest

import evalbatch
from evalbatch import api
from evalbatch.errors import InputError
from evalbatch.history.series import SERIES_SCHEMA, read_history, series
from evalbatch.outputs import output_format
from tests.helpers import (
    LEAK_MARKERS,
    OTHER_SUITE_ID,
    SUITE_ID,
    T0,
    RunLog,
    make_suite,
    run_main,
    write_events,
    write_json,
)

#: a slow family (history across generated nights):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

DAY = timedelta(days=1)
NIGHTS = 4
#: the run of each night: ids out of time order, so ordering by id would be wrong
NIGHT_RUNS = ("acme/run-d", "acme/run-b", "acme/run-c", "acme/run-a")
#: the other suite runs on nights 1 and 2 only
OTHER_RUNS = {1: "acme/other-1", 2: "acme/other-2"}
UNTIMED_RUN = "acme/run-0-untimed"
TRIALS = 3
#: why `outdir.load` refuses a path that is no directory
NO_SUCH_DIRECTORY = "no such directory (give the --out directory of evalbatch run)"
USAGE = {"inputTokens": 100, "outputTokens": 10, "costEstimateUsd": 0.001}


def _run(
    run_id: str, suite_id: str, start: datetime, t2_passes: int, tasks: tuple[str, ...]
) -> RunLog:
    """Three trials of each task: t1 always passes; t2 passes its first `t2_passes` trials and
    scores 0 on the others. Each trial: 100 input and 10 output tokens, $0.001."""
    log = RunLog(run_id, start)
    log.emit("run.started", {"runId": run_id})
    log.eval_started(suite_id, taskCount=len(tasks))
    for task in tasks:
        for index in range(TRIALS):
            passed = task != "t2" or index < t2_passes
            log.trial(
                task,
                score=1.0 if passed else 0.0,
                passed=passed,
                usages=[USAGE],
                scored_extra={"trialIndex": index},
            )
    log.eval_completed()
    log.emit("run.completed", {"outcome": "completed"})
    return log


def _night_logs(night: int) -> list[RunLog]:
    """Night N: the suite's run (t2 passes 3 - N of 3 trials) and the other suite's, if any."""
    logs = [_run(NIGHT_RUNS[night], SUITE_ID, T0 + night * DAY, TRIALS - night, ("t1", "t2"))]
    if night in OTHER_RUNS:
        logs.append(_run(OTHER_RUNS[night], OTHER_SUITE_ID, T0 + night * DAY, 0, ("t1",)))
    return logs


def _grade(root: Path, name: str, logs: list[RunLog], timestamp: str | None = "iso") -> Path:
    rows = [row for log in logs for row in log.rows]
    events = write_events(root / "events" / f"{name}.parquet", rows, timestamp=timestamp)
    out = root / "out" / name
    api.write_outputs([events], out, [root / "suites"])
    return out


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One output directory per night; one holding every night (a nightly directory); one run
    whose log has no timestamps; a copy of night 1's run graded from other scores."""
    root = tmp_path_factory.mktemp("history")
    trials = {"count": TRIALS, "k": TRIALS, "passRule": "all"}
    write_json(root / "suites" / "basic.json", make_suite(task_ids=("t1", "t2"), trials=trials))
    write_json(
        root / "suites" / "other.json",
        make_suite(OTHER_SUITE_ID, task_ids=("t1",), trials=trials),
    )
    per_night = [_grade(root, f"night-{n}", _night_logs(n)) for n in range(NIGHTS)]
    every = [log for n in range(NIGHTS) for log in _night_logs(n)]
    untimed = _run(UNTIMED_RUN, SUITE_ID, T0, TRIALS, ("t1", "t2"))
    regraded = _run(NIGHT_RUNS[1], SUITE_ID, T0 + DAY, 0, ("t1", "t2"))
    return {
        "root": root,
        "nights": per_night,
        "nightly": _grade(root, "nightly", every),
        "untimed": _grade(root, "untimed", [untimed], timestamp=None),
        "regraded": _grade(root, "regraded", [regraded]),
    }


def _task(frame: pl.DataFrame, suite_id: str, task_id: str) -> pl.DataFrame:
    return frame.filter(pl.col("suite_id") == suite_id, pl.col("task_id") == task_id)


# --------------------------------------------------------------------------------------------
# The series frame


def test_series_has_the_shared_columns_and_hand_computed_values(nights: dict[str, Any]) -> None:
    """E-96: one row per (suite, task, run), the shared interface's columns and types,
    in time order (the eval's start, not the run id); n, c, c/n, pass^k at k = n, cost and
    tokens as the generator made them."""
    found = series(nights["nights"])
    assert found.schema == SERIES_SCHEMA
    assert found.columns == list(SERIES_SCHEMA)
    t2 = _task(found, SUITE_ID, "t2")
    assert t2["run_id"].to_list() == list(NIGHT_RUNS)  # time order, not id order
    assert t2["night"].to_list() == [0, 1, 2, 3]
    assert t2["started_at"].to_list() == [
        (T0 + n * DAY).astimezone(UTC) + timedelta(milliseconds=100) for n in range(NIGHTS)
    ]
    assert t2["trials"].to_list() == [3, 3, 3, 3]
    assert t2["passed_trials"].to_list() == [3, 2, 1, 0]
    assert t2["pass_rate"].to_list() == pytest.approx([1, 2 / 3, 1 / 3, 0])
    assert t2["score"].to_list() == pytest.approx([1, 2 / 3, 1 / 3, 0])
    assert t2["gating_score"].to_list() == pytest.approx([1, 2 / 3, 1 / 3, 0])
    assert t2["pass_hat_k"].to_list() == [1.0, 0.0, 0.0, 0.0]  # pass^3 of 3: all or nothing
    assert t2["cost_usd"].to_list() == pytest.approx([0.003] * 4)
    assert t2["input_tokens"].to_list() == [300] * 4
    assert t2["output_tokens"].to_list() == [30] * 4
    other = _task(found, OTHER_SUITE_ID, "t1")
    assert other["run_id"].to_list() == [OTHER_RUNS[1], OTHER_RUNS[2]]
    assert other["night"].to_list() == [0, 1]  # numbered within its own series
    assert found.height == 2 * NIGHTS + len(OTHER_RUNS)
    keys = ["suite_id", "suite_version", "task_id", "night"]
    assert found.equals(found.sort(keys))


def test_one_directory_of_many_nights_gives_the_same_series(nights: dict[str, Any]) -> None:
    """E-96, E-151: several directories, one per night, or one holding every night's runs
    (its nights are then its days): the same series, but for what names each night."""
    nightly, per_night = series(nights["nightly"]), series(nights["nights"])
    assert nightly.drop("night_label").equals(per_night.drop("night_label"))
    assert set(nightly["night_label"]) == {f"2026-11-0{2 + n}" for n in range(NIGHTS)}
    assert set(per_night["night_label"]) == {str(path) for path in nights["nights"]}


def test_a_run_without_a_start_time_comes_last(nights: dict[str, Any]) -> None:
    """Shared interface: a null `eval_started_at` is ordered after the runs with one (its id
    sorts first, so id order would put it first)."""
    found = _task(series([nights["untimed"], *nights["nights"]]), SUITE_ID, "t1")
    assert found["run_id"].to_list() == [*NIGHT_RUNS, UNTIMED_RUN]
    assert found["started_at"].to_list()[-1] is None
    assert found["night"].to_list() == [0, 1, 2, 3, 4]


def test_a_run_in_several_directories_counts_once(nights: dict[str, Any]) -> None:
    """E-96: the same run_id in two directories counts once, the copy of the first
    directory given kept; a copy graded otherwise is reported as such."""
    history = read_history([nights["nightly"], *nights["nights"]])
    assert history.series.drop("night_label").equals(series(nights["nights"]).drop("night_label"))
    assert len(history.duplicates) == NIGHTS + len(OTHER_RUNS)
    assert {d.kept for d in history.duplicates} == {nights["nightly"]}
    assert history.disagreeing == []

    history = read_history([nights["nights"][1], nights["regraded"]])
    (duplicate,) = history.disagreeing
    assert (duplicate.run_id, duplicate.kept, duplicate.left_out) == (
        NIGHT_RUNS[1],
        nights["nights"][1],
        nights["regraded"],
    )
    assert _task(history.series, SUITE_ID, "t2")["passed_trials"].to_list() == [2]  # the first
    history = read_history([nights["regraded"], nights["nights"][1]])
    assert _task(history.series, SUITE_ID, "t2")["passed_trials"].to_list() == [0]


def test_the_same_directory_given_twice_is_read_once(nights: dict[str, Any]) -> None:
    night = nights["nights"][0]
    history = read_history([night, night.parent / "." / night.name])
    assert history.read == [night]
    assert history.duplicates == []


def test_filters_choose_runs_as_the_run_filters_do(nights: dict[str, Any]) -> None:
    """E-63 on the series: suiteId, start time in [since, until) (a run without one is then
    left out), run-id globs."""
    given = [*nights["nights"], nights["untimed"]]
    other = series(given, OTHER_SUITE_ID)
    assert set(other["suite_id"]) == {OTHER_SUITE_ID}
    window = series(given, SUITE_ID, since=T0 + DAY, until=T0 + 3 * DAY)
    assert window["run_id"].unique(maintain_order=True).to_list() == list(NIGHT_RUNS[1:3])
    assert _task(window, SUITE_ID, "t1")["night"].to_list() == [0, 1]
    by_id = series(given, run_ids=["acme/run-[ab]", "acme/other-*"])
    assert set(by_id["run_id"]) == {"acme/run-a", "acme/run-b", *OTHER_RUNS.values()}
    assert series(given, [SUITE_ID, OTHER_SUITE_ID]).equals(series(given))


def test_a_directory_of_another_schema_version_is_refused(
    nights: dict[str, Any], tmp_path: Path
) -> None:
    """E-96 (as connect, E-38): a directory written by another schema version is
    refused by `series` with one line naming the file and the versions."""
    old = tmp_path / "old"
    shutil.copytree(nights["nights"][0], old)
    runs = pq.read_table(old / "runs.parquet").drop_columns(["eval_started_at"])
    pq.write_table(
        runs.replace_schema_metadata({"evalbatch.schema_version": "3"}), old / "runs.parquet"
    )
    with pytest.raises(InputError) as caught:
        series([nights["nights"][1], old])
    message = str(caught.value)
    assert "runs.parquet: written with schema version 3" in message
    assert f"reads version {output_format.SCHEMA_VERSION}" in message
    assert "\n" not in message


# --------------------------------------------------------------------------------------------
# evalbatch history


def test_history_table(
    nights: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-96, E-151: a line on what was lined up, one row per series (suite, agent, model) with
    its runs, nights and tasks and how many are broken or flaky, then the tasks that matter;
    with --points, per series a heading, then per task its nights in time order with score,
    gating score, passed of n, pass rate, pass^k, cost and tokens; exit 0; nothing on stderr."""
    code, out, err = run_main(monkeypatch, capsys, "history", *nights["nights"], "--points")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("history: 4 nights (one per output directory")
    assert "2 series (by suite, agent and model), 6 runs" in lines[0]
    assert lines[1].split() == ["series", "runs", "nights", "tasks", "broken", "flaky"]
    series_name = f"{SUITE_ID} · acme.agents.tester · general"
    assert lines[2].split() == [*series_name.split(), "4", "4", "2", "0", "1"]
    heading = f"series {series_name}: 4 nights, 2 tasks, 2026-11-02T10:00Z to 2026-11-05T10:00Z"
    at = lines.index(heading)
    assert lines[at + 1].split() == [
        "task", "night", "runs", "run", "started", "score", "gating", "passed", "pass", "rate",
        "pass^k", "cost", "tokens", "in", "tokens", "out",
    ]  # fmt: skip
    t2 = [line.split() for line in lines[at:] if line.startswith("t2 ")][:NIGHTS]
    assert [row[:4] for row in t2] == [["t2", str(n), "1", NIGHT_RUNS[n]] for n in range(NIGHTS)]
    assert t2[1][4:] == [
        "2026-11-03T10:00Z", "0.667", "0.667", "2/3", "0.667", "0.000", "$0.0030", "300", "30",
    ]  # fmt: skip
    assert f"series {OTHER_SUITE_ID} · acme.agents.tester · general: 2 nights, 1 task, " in out
    code, plain, _ = run_main(monkeypatch, capsys, "history", *nights["nights"])
    assert code == 0 and heading not in plain and plain.splitlines()[:3] == lines[:3]


def test_history_json(
    nights: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-96, E-151, the documented --json shape: directories read and skipped, duplicates,
    runs not graded, how series and nights are told apart, a summary per series, the trends;
    with --points every point, one entry per series, task and night in time order."""
    given = [nights["nightly"], *nights["nights"][:2]]
    code, out, err = run_main(monkeypatch, capsys, "history", *given, "--json", "--points")
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == [
        "outDirs",
        "skipped",
        "duplicates",
        "notGraded",
        "seriesBy",
        "nightsBy",
        "nights",
        "series",
        "flakyTasks",
        "changePoints",
        "points",
    ]
    assert doc["outDirs"] == [str(path) for path in given]
    assert doc["skipped"] == [] and doc["notGraded"] == 0
    assert (doc["seriesBy"], doc["nightsBy"], doc["nights"]) == ("agent-model", "auto", NIGHTS)
    assert {(d["runId"], d["keptFrom"], d["sameRows"]) for d in doc["duplicates"]} == {
        (NIGHT_RUNS[0], str(nights["nightly"]), True),
        (NIGHT_RUNS[1], str(nights["nightly"]), True),
        (OTHER_RUNS[1], str(nights["nightly"]), True),
    }
    assert [s["suiteId"] for s in doc["series"]] == [SUITE_ID, OTHER_SUITE_ID]
    basic = doc["series"][0]
    assert basic == {
        "suiteId": SUITE_ID,
        "agentId": "acme.agents.tester",
        "model": "general",
        "runs": NIGHTS,
        "nights": NIGHTS,
        "tasks": 2,
        "broken": 0,
        "flaky": 1,
        "stable": 1,
        "noTrials": 0,
    }
    t2 = [p for p in doc["points"] if p["suiteId"] == SUITE_ID and p["taskId"] == "t2"]
    assert [p["night"] for p in t2] == list(range(NIGHTS))
    assert t2[2] == {
        "suiteId": SUITE_ID,
        "agentId": "acme.agents.tester",
        "model": "general",
        "taskId": "t2",
        "night": 2,
        "nightLabel": "2026-11-04",
        "runs": 1,
        "runId": NIGHT_RUNS[2],
        "suiteVersion": "1.0.0",
        "startedAt": "2026-11-04T10:00:00.100000Z",
        "trials": 3,
        "passedTrials": 1,
        "passRate": pytest.approx(1 / 3),
        "score": pytest.approx(1 / 3),
        "gatingScore": pytest.approx(1 / 3),
        "passHatK": 0.0,
        "costUsd": pytest.approx(0.003),
        "inputTokens": 300,
        "outputTokens": 30,
    }
    assert "found in more than one directory" in err
    for marker in LEAK_MARKERS:  # RFC 0244 §H: ids and numbers only
        assert marker not in out and marker not in err
    code, out, _ = run_main(monkeypatch, capsys, "history", *given, "--json")
    assert code == 0 and "points" not in json.loads(out)


def test_history_names_a_skipped_directory_and_exits_3(
    nights: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Fail closed: a directory that cannot be read is named on stderr and the others shown;
    the exit code says something was skipped (3), never 0."""
    missing = tmp_path / "missing"
    code, out, err = run_main(monkeypatch, capsys, "history", nights["nights"][0], missing)
    assert code == 3
    assert out.startswith("history: 1 night (")
    assert err == f"warning: skipped: {missing}: {NO_SUCH_DIRECTORY}\n"


def test_history_with_no_usable_directory_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fail closed: no directory usable is exit 2 and one line naming each directory."""
    (tmp_path / "empty").mkdir()
    code, out, err = run_main(
        monkeypatch, capsys, "history", tmp_path / "missing", tmp_path / "empty"
    )
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("evalbatch: no output directory usable: ")
    assert str(tmp_path / "missing") in err and str(tmp_path / "empty") in err


def test_history_with_nothing_in_the_window_exits_2(
    nights: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-96: filters that leave no graded run are a clear message and exit 2, not
    an empty table and 0 as if something had been shown."""
    code, out, err = run_main(
        monkeypatch, capsys, "history", *nights["nights"], "--since", "2030-01-01"
    )
    assert (code, out) == (2, "")
    assert err == "evalbatch: no graded run in 4 output directories matches --since\n"
    code, out, err = run_main(
        monkeypatch, capsys, "history", *nights["nights"], "--suite-id", "acme.none.evals.x",
        "--until", "2026-11-03",
    )  # fmt: skip
    assert (code, out) == (2, "")
    assert err.endswith("matches --suite-id, --until\n")


def test_history_filters_and_quiet(
    nights: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run filters (E-63) narrow what is shown; -q prints no series, the exit code stays."""
    code, out, _ = run_main(
        monkeypatch, capsys, "history", *nights["nights"], "--suite-id", OTHER_SUITE_ID,
        "--since", "2026-11-03T10:00Z", "--json",
    )  # fmt: skip
    assert code == 0
    (suite,) = json.loads(out)["series"]
    assert suite["suiteId"] == OTHER_SUITE_ID
    code, out, _ = run_main(
        monkeypatch, capsys, "history", *nights["nights"], "--suite-id", OTHER_SUITE_ID,
        "--since", "2026-11-03T10:00Z", "--json", "--points",
    )  # fmt: skip
    points = json.loads(out)["points"]
    assert [e["runId"] for e in points] == [OTHER_RUNS[1], OTHER_RUNS[2]]
    code, out, err = run_main(monkeypatch, capsys, "history", *nights["nights"], "-q")
    assert (code, out, err) == (0, "", "")


# --------------------------------------------------------------------------------------------
# connect and the report


def test_connect_holds_the_history(nights: dict[str, Any]) -> None:
    """E-96: `connect(out_dir)` holds the series of its runs as `history`, listed in
    `evalbatch_tables`, with the series' rows."""
    con = evalbatch.connect(nights["nightly"])
    try:
        held = con.sql("SELECT * FROM history").pl()
        kinds = dict(con.execute("SELECT name, kind FROM evalbatch_tables").fetchall())
    finally:
        con.close()
    assert kinds["history"] == "derived"
    assert held.equals(series(nights["nightly"]))


def test_report_draws_a_trend_chart_per_suite_with_several_nights(
    nights: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """E-96, E-151: `report OUT_DIR --history DIR...` adds a trend chart per series (suite,
    agent, model) of several nights; without --history the page is as before (no trend
    chart)."""
    last, earlier = nights["nights"][-1], nights["nights"][:-1]
    history_args = [arg for path in earlier for arg in ("--history", path)]
    page = tmp_path / "trend.html"
    code, out, err = run_main(monkeypatch, capsys, "report", last, *history_args, "-o", page)
    assert (code, out, err) == (0, f"wrote a report of 8 charts to {page}\n", "")  # 6 + 2 trends
    text = page.read_text(encoding="utf-8")
    basic = f"{SUITE_ID} · acme.agents.tester · general"
    assert f'<h2 id="trend-1-h">Trend: {basic}</h2>' in text
    assert f'<h2 id="trend-2-h">Trend: {OTHER_SUITE_ID} · acme.agents.tester · general</h2>' in text
    assert f"Line chart of suite {basic} over 4 nights from 2026-11-02 to 2026-11-05" in text
    assert "mean task score 1 on the first night, 0.5 on the last" in text
    assert "trend-3" not in text
    plain = tmp_path / "plain.html"
    code, _, err = run_main(monkeypatch, capsys, "report", last, "-o", plain)
    assert code == 0 and "trend-1" not in plain.read_text(encoding="utf-8")


def test_report_refuses_an_unusable_history_directory(
    nights: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Fail closed: a trend drawn without one of the nights asked for would mislead: exit 2,
    one line naming the directory, no page."""
    page = tmp_path / "page.html"
    missing = tmp_path / "missing"
    code, _, err = run_main(
        monkeypatch, capsys, "report", nights["nights"][0], "--history", missing, "-o", page
    )
    assert code == 2 and not page.exists()
    assert err == f"evalbatch: {missing}: {NO_SUCH_DIRECTORY}\n"


def test_a_file_given_as_an_output_directory_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CONTRACT §6: the one line says what is wrong with the path: a file that exists is not a
    directory, not a missing one."""
    given = tmp_path / "summaries.jsonl"
    given.write_text("{}\n")
    code, _, err = run_main(monkeypatch, capsys, "history", given)
    assert code == 2
    assert err == (
        f"evalbatch: no output directory usable: {given}: not a directory "
        "(give the --out directory of evalbatch run)\n"
    )


def test_history_reports_the_night_a_task_broke_and_which_tasks_are_flaky(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E-97 through the command: twelve nights in one directory, t2 passing
    every trial for six nights and none after, t1 always passing. `history` names t2's change at
    night 6 with its shift and calls t2 broken; t1, whose nights are identical, is stable and
    never flagged (table and --json)."""
    trials = {"count": TRIALS, "k": TRIALS, "passRule": "all"}
    write_json(tmp_path / "suites" / "basic.json", make_suite(task_ids=("t1", "t2"), trials=trials))
    logs = [
        _run(f"acme/night-{n:02d}", SUITE_ID, T0 + n * DAY, TRIALS if n < 6 else 0, ("t1", "t2"))
        for n in range(12)
    ]
    out = _grade(tmp_path, "nightly", logs)
    code, text, _ = run_main(monkeypatch, capsys, "history", str(out), "--json")
    assert code == 0
    doc = json.loads(text)
    changes = {c["taskId"]: c for c in doc["changePoints"]}
    assert changes["t2"]["changed"] is True
    assert (changes["t2"]["night"], changes["t2"]["runId"]) == (6, "acme/night-06")
    assert (changes["t2"]["rateBefore"], changes["t2"]["rateAfter"]) == (1.0, 0.0)
    assert changes["t2"]["pValue"] <= 0.05
    assert changes["t1"]["changed"] is False and changes["t1"]["pValue"] == 1.0
    status = {f["taskId"]: f["status"] for f in doc["flakyTasks"]}
    assert status == {"t1": "stable", "t2": "broken"}
    code, text, _ = run_main(monkeypatch, capsys, "history", str(out))
    assert code == 0
    assert "changes (p <= 0.05" in text
    (line,) = [row for row in text.splitlines() if "acme/night-06" in row and "-1.000" in row]
    assert line.split()[5:7] == ["t2", "6"]  # after the series' three names
