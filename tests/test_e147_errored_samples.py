"""E-147 and E-148: an Inspect sample that errored is named errored wherever a trial is shown,
fails (fail closed), and the mean Inspect would report without it is said beside the mean; and
`verify` on an Inspect log holds Inspect's own record to the recomputation without counting
against it what Inspect never writes.

The logs are written by Inspect's own mock model and log writer (examples/inspect/
make_errored_logs.py: two evals of five epochs whose adder fails on chosen samples and epochs);
which samples errored and Inspect's own figures are read back with Inspect's reader, never
restated here.
"""

from __future__ import annotations

import json
import math
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from evalbatch import reference
from evalbatch.cli import cli
from evalbatch.options import GradeOptions
from tests.helpers import ROOT, write_events, written_by_inspect
from tests.logbuilder import LogBuilder, grade, suite, traj, trajectory_task
from tests.test_inspect_logs import inspect_log, logs  # noqa: F401  (fixture)
from tests.test_properties import assert_same
from tests.test_report import _element, _rows, _runs_data

MAKE_ERRORED_LOGS = ROOT / "examples" / "inspect" / "make_errored_logs.py"


@pytest.fixture(scope="module")
def errored(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Path:
    """`base.eval` and `cand.eval`, as Inspect wrote them (a copy no test can change)."""
    cache = getattr(pytestconfig, "cache", None)
    cache_dir = cache.mkdir("inspect-errored-logs") if cache else tmp_path_factory.mktemp("e")
    out = tmp_path_factory.mktemp("errored") / "logs"
    shutil.copytree(written_by_inspect(MAKE_ERRORED_LOGS, cache_dir), out)
    return out


def _invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


class _Inspect:
    """What Inspect's own reader says of a log: the errored (sample, epoch) pairs, its accuracy
    (which leaves them out), and the mean counting each errored epoch as 0."""

    def __init__(self, path: Path) -> None:
        log = inspect_log().read_eval_log(str(path))
        self.run_id = log.eval.eval_id
        self.errored = {(str(s.id), s.epoch) for s in log.samples if s.error is not None}
        (score,) = log.results.scores
        self.accuracy = score.metrics["accuracy"].value
        values: dict[str, list[float]] = defaultdict(list)
        for s in log.samples:
            value = 0.0 if s.error is not None else float(s.scores["match"].value == "C")
            values[str(s.id)].append(value)
        self.failed_mean = sum(sum(v) / len(v) for v in values.values()) / len(values)


def _graded(tmp: Path, log: Path) -> Path:
    out = tmp / "out"
    result = _invoke("run", log, "--out", out, "--quiet")
    assert result.exit_code == 0, result.output
    return out


def test_e147_an_errored_sample_is_named_errored_and_fails(tmp_path: Path, errored: Path) -> None:
    """Each trial whose sample errored is marked `errored`, fails with score 0, and is the one
    problem `sample-errored` (not D-11's `score-invalid`/`passed-invalid`); the run counts them
    and states the mean without them, which is Inspect's own accuracy."""
    inspect = _Inspect(errored / "base.eval")
    assert len(inspect.errored) == 7  # the script's plan, read back from the log
    out = _graded(tmp_path, errored / "base.eval")
    trials = pl.read_parquet(out / "trials.parquet")
    marked = trials.filter("errored")
    assert {(r["task_id"], r["epoch"]) for r in marked.to_dicts()} == inspect.errored
    assert set(marked["score"]) == {0.0} and not any(marked["passed"])
    assert not any(trials.filter(~pl.col("errored"))["errored"])
    problems = pl.read_parquet(out / "problems.parquet")
    codes = problems.group_by("code").len()
    assert dict(codes.iter_rows()).get("sample-errored") == len(inspect.errored)
    assert not {"score-invalid", "passed-invalid"} & set(problems["code"])
    errored_at = set(problems.filter(pl.col("code") == "sample-errored")["sequence"])
    assert errored_at == set(marked["sequence"])
    (run,) = pl.read_parquet(out / "runs.parquet").to_dicts()
    assert run["errored_trials"] == len(inspect.errored)
    assert math.isclose(run["mean_without_errored"], inspect.accuracy, rel_tol=1e-9)
    assert math.isclose(run["aggregate_score"], inspect.failed_mean, rel_tol=1e-9)
    assert run["errored_left_out"] is None


def test_e147_run_and_regress_say_how_many_errored_and_the_mean_without(
    errored: Path, tmp_path: Path
) -> None:
    """`run`'s totals and each `regress` side say how many samples errored and the mean
    Inspect reports without them; `--json` carries both numbers."""
    base, cand = _Inspect(errored / "base.eval"), _Inspect(errored / "cand.eval")
    ran = _invoke("run", errored / "base.eval", "--out", tmp_path / "out")
    assert ran.exit_code == 0, ran.output
    assert (
        f"7 errored samples counted as failed (score 0); mean {base.accuracy:.3f} leaving "
        "them out, as Inspect does (E-147)"
    ) in ran.output.splitlines()
    result = _invoke("regress", errored / "base.eval", errored / "cand.eval")
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert (
        f"7 errored samples counted as failed (score 0); mean {base.accuracy:.4f} leaving them "
        "out, as Inspect does"
    ) in lines
    assert (
        f"1 errored sample counted as failed (score 0); mean {cand.accuracy:.4f} leaving it "
        "out, as Inspect does"
    ) in lines
    doc = json.loads(
        _invoke("regress", errored / "base.eval", errored / "cand.eval", "--json").stdout
    )
    (suite_doc,) = doc["comparisons"]
    for side, inspect in (("baseline", base), ("candidate", cand)):
        shown = suite_doc[side]
        assert shown["erroredTrials"] == len(inspect.errored)
        assert math.isclose(shown["meanScoreWithoutErrored"], inspect.accuracy, rel_tol=1e-9)
        assert math.isclose(shown["meanScore"], inspect.failed_mean, rel_tol=1e-9)


def test_e147_verify_agrees_on_the_errored_sample_logs(
    errored: Path,
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """Inspect writes no score for an errored sample and leaves it out of its mean: `verify`
    compares the aggregate with the recomputed mean without them, counts the scores as not
    written, and agrees, on the five-epoch log and on the one-epoch `sample-error` log."""
    for path in (errored / "base.eval", logs["sample-error.json"]):
        read = inspect_log().read_eval_log(str(path))
        failed = sum(1 for s in read.samples if s.error is not None)
        result = _invoke("verify", path, "--json")
        report = json.loads(result.stdout)
        assert (result.exit_code, report["verdict"], report["findings"]) == (0, "agrees", [])
        (run,) = report["runs"]
        assert run["erroredLeftOut"] == failed
        assert run["notWritten"] == {"eval.scored.passed": failed, "eval.scored.score": failed}
        assert report["fields"]["eval.completed.aggregateScore"] == {"compared": 1, "disagree": 0}


@pytest.mark.slow
def test_e147_verify_still_finds_a_wrong_inspect_mean(errored: Path, tmp_path: Path) -> None:
    """Leaving errored samples out is how the mean is compared, not a pass: an aggregateScore
    that is neither Inspect's mean nor the recomputed one is still a finding."""
    events = tmp_path / "events"
    assert _invoke("ingest", errored / "base.eval", "--out", events, "-q").exit_code == 3
    for path in sorted(events.rglob("*.parquet")):
        frame = pl.read_parquet(path)
        frame = frame.with_columns(
            pl.when(pl.col("type") == "eval.completed")
            .then(
                pl.col("payload").str.replace(
                    r'"aggregateScore":\s*[0-9.]+', '"aggregateScore": 0.5'
                )
            )
            .otherwise(pl.col("payload"))
            .alias("payload")
        )
        frame.write_parquet(path)
    report = json.loads(_invoke("verify", events, "--json").stdout)
    assert [(f["field"], f["host"]) for f in report["findings"]] == [
        ("eval.completed.aggregateScore", 0.5)
    ]


def test_e147_explain_and_report_name_the_errored_trials(errored: Path, tmp_path: Path) -> None:
    """`explain` tags an errored trial `errored` and says why it failed; the report's run
    section and runs table say how many errored and the mean without them, and lists each such
    failed trial with the reason `sample-errored` (read back from the HTML)."""
    inspect = _Inspect(errored / "base.eval")
    result = _invoke(
        "explain",
        errored / "base.eval",
        "--run-id",
        inspect.run_id,
        "--task-id",
        "sum-2",
        "--epoch",
        "2",
    )
    assert result.exit_code == 0, result.output
    assert "  trial 1  FAIL  errored  (" in result.output
    assert "the Inspect sample errored: score 0, passed false, gating 0" in result.output
    out = _graded(tmp_path, errored / "base.eval")
    assert _invoke("report", out).exit_code == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    note = (
        f"7 errored samples counted as failed (score 0); mean {inspect.accuracy:.3f} leaving "
        "them out, as Inspect does"
    )
    (record,) = _runs_data(page)
    assert record[-1].endswith(note)
    section = _element(page, f"run-{inspect.run_id}")
    assert note in section
    reasons = [(row[0].split("sample")[0], row[2]) for row in _rows(section)]
    assert sorted(r for r in reasons if r[1] == "sample-errored") == sorted(
        (sample, "sample-errored") for sample, _ in inspect.errored
    )


def _with_errored_flag(log: LogBuilder, task_id: str, index: int, errored: Any) -> None:
    log.add(
        "evalbatch.inspect.sample",
        {
            "taskId": task_id,
            "trialIndex": index,
            "sampleId": task_id,
            "epoch": index + 1,
            "errored": errored,
        },
    )


@pytest.mark.parametrize("errored", [True, False, "true", None])
def test_e147_a_claimed_errored_sample_only_ever_fails_a_trial(errored: Any) -> None:
    """The flag is read only to fail: a trajectory task whose path matched passes unless the
    trial is marked errored with JSON `true` (anything else is no mark), and then fails with
    score and gating 0 and `sample-errored`; the reference grader agrees."""
    log = LogBuilder()
    log.eval_started(task_count=1)
    log.trial("t1", calls=["kv:get"], score=None, passed=None)
    log.eval_completed()
    _with_errored_flag(log, "t1", 0, errored)
    suites = [suite(trajectory_task("t1", traj("exact", ["kv:get"])))]
    result = grade(log, suites)
    (trial,) = result.trials.to_dicts()
    marked = errored is True
    assert (trial["errored"], trial["passed"], trial["score"]) == (
        marked,
        not marked,
        0.0 if marked else 1.0,
    )
    codes = set(result.problems["code"])
    assert ("sample-errored" in codes) is marked
    ref = reference.grade_reference(log.events, suites, GradeOptions())
    for run_id, summary in ref.summaries.items():
        assert_same(result.summaries[run_id], summary, run_id)
    assert ("sample-errored" in {p["code"] for p in ref.problems}) is marked


def test_e148_verify_with_a_suite_does_not_count_fields_inspect_never_writes(
    tmp_path: Path,
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """Graded with its starting suite, an Inspect log's eval.completed lacks passed and
    passedCount (Inspect records no pass decision): not compared, named, and `verify` agrees.
    The same absence in a log that is not an Inspect log's mapping is still a finding."""
    suites = tmp_path / "suites"
    events = tmp_path / "events"
    path = logs["arithmetic.eval"]
    assert _invoke("ingest", path, "--out", events, "-q", "--write-suites", suites).exit_code == 0
    result = _invoke("verify", path, "--suites", suites, "--json")
    report = json.loads(result.stdout)
    assert (result.exit_code, report["verdict"], report["findings"]) == (0, "agrees", [])
    (run,) = report["runs"]
    assert run["notWritten"] == {"eval.completed.passed": 1, "eval.completed.passedCount": 1}
    printed = _invoke("verify", path, "--suites", suites).output
    assert "Inspect writes no passed, passedCount: not compared (E-148)" in printed
    log = LogBuilder()
    log.eval_started(suite_id="inspect.evals.arithmetic", task_count=1)
    log.trial("t1")
    log.add("eval.completed", {"aggregateScore": 1, "taskCount": 1})
    own = write_events(tmp_path / "own.parquet", log.events)
    other = suite(
        {"taskId": "t1", "input": {}, "expected": {"kind": "golden"}},
        suite_id="inspect.evals.arithmetic",
    )
    (tmp_path / "s2").mkdir()
    (tmp_path / "s2" / "suite.json").write_text(json.dumps(other))
    doc = json.loads(_invoke("verify", own, "--suites", tmp_path / "s2", "--json").stdout)
    assert doc["verdict"] == "disagrees"
    assert {f["field"] for f in doc["findings"]} == {
        "eval.completed.passed",
        "eval.completed.passedCount",
    }


def test_e147_leave_out_grades_as_inspect_counts(errored: Path, tmp_path: Path) -> None:
    """`ingest --inspect-errored leave-out`: the errored samples' trials are not written, a
    sample all of whose epochs errored is no task, and the mean is Inspect's own accuracy;
    ingest says how many it left out (exit 3: something was left out), the run's table and
    terminal say so too, and `verify` agrees."""
    inspect = _Inspect(errored / "base.eval")
    events = tmp_path / "events"
    ingested = _invoke(
        "ingest", errored / "base.eval", "--out", events, "--inspect-errored", "leave-out", "--json"
    )
    assert ingested.exit_code == 3, ingested.output
    (problem,) = json.loads(ingested.stdout)["problems"]
    assert problem["code"] == "inspect-sample-left-out"
    assert f": {len(inspect.errored)} errored sample(s) left out" in problem["message"]
    ran = _invoke("run", events, "--out", tmp_path / "out")
    assert ran.exit_code == 0, ran.output
    assert f"{len(inspect.errored)} errored samples left out, as Inspect does (E-147)" in ran.output
    (run,) = pl.read_parquet(tmp_path / "out" / "runs.parquet").to_dicts()
    assert math.isclose(run["aggregate_score"], inspect.accuracy, rel_tol=1e-9)
    lost = defaultdict(int)
    for sample, _ in inspect.errored:
        lost[sample] += 1
    whole = [sample for sample, epochs in lost.items() if epochs == 5]
    assert whole  # the script errs one sample in every epoch
    assert run["task_count"] == 6 - len(whole)
    assert (run["errored_trials"], run["errored_left_out"]) == (0, len(inspect.errored))
    trials = pl.read_parquet(tmp_path / "out" / "trials.parquet")
    assert trials.height == 6 * 5 - len(inspect.errored)
    assert not set(zip(trials["task_id"], trials["epoch"], strict=True)) & inspect.errored
    report = json.loads(_invoke("verify", events, "--json").stdout)
    assert (report["verdict"], report["findings"]) == ("agrees", [])
