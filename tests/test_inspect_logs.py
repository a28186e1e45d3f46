"""Inspect eval logs in (E-111): logs written by Inspect itself (its mock model and log writer,
examples/inspect/make_logs.py), ingested, then graded, verified and compared downstream.

The expected values come from Inspect's own reader and metrics on the same logs, never from this
project's reading of them.
"""

from __future__ import annotations

import gzip
import json
import math
import shutil
import struct
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from evalbatch import verify
from evalbatch.cli import cli
from evalbatch.errors import OptionError
from evalbatch.inputs import inspect_logs
from evalbatch.inputs.event_rows import RowSink
from evalbatch.inputs.ingest import ingest_paths
from evalbatch.inputs.inspect_logs import InspectOptions
from evalbatch.inputs.limits import InputLimits
from evalbatch.inputs.suites import validate_suite
from evalbatch.options import StartingSuiteOptions
from tests.helpers import ROOT, written_by_inspect
from tests.logbuilder import LogBuilder


def inspect_log() -> ModuleType:
    """Inspect's log module (the extra evalbatch[inspect], installed by make test), imported by
    the tests that use it: imported at the top, it cost every test worker seconds to collect."""
    import inspect_ai.log

    return inspect_ai.log


MAKE_LOGS = ROOT / "examples" / "inspect" / "make_logs.py"


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> dict[str, Path]:
    """The example logs by name (`arithmetic.eval`, `arithmetic.json`, ...), as Inspect wrote
    them; a copy of the cached ones, which no test can change."""
    cache = getattr(pytestconfig, "cache", None)  # none under -p no:cacheprovider: this run only
    cache_dir = cache.mkdir("inspect-logs") if cache else tmp_path_factory.mktemp("inspect")
    out = tmp_path_factory.mktemp("inspect-logs") / "logs"
    shutil.copytree(written_by_inspect(MAKE_LOGS, cache_dir), out)
    found: dict[str, Path] = {}
    for path in sorted(out.iterdir()):
        task = path.stem.split("_")[1]
        found[f"{task}{path.suffix}"] = path
    assert set(found) == {
        "arithmetic.eval",
        "arithmetic.json",
        "arithmetic-pass-at-k.eval",
        "mean-scored.eval",
        "best-epoch.eval",
        "two-scorers.eval",
        "judged.eval",
        "interrupted.eval",
        "scored-error.eval",
        "tool-error.eval",
        "sample-error.json",
        "row-ids.eval",
    }
    return found


def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def _ingest(tmp: Path, *paths: Path, extra: tuple[str, ...] = ()) -> tuple[Any, Path]:
    events = tmp / "events"
    result = _invoke("ingest", *map(str, paths), "--out", str(events), "--json", *extra)
    return result, events


def _graded(tmp: Path, *paths: Path, suite: dict[str, Any] | None = None, ingest_args=()) -> Path:
    """Ingest `paths`, grade them (with `suite` when given) and return the output directory."""
    result, events = _ingest(tmp, *paths, extra=tuple(ingest_args))
    assert result.exit_code in (0, 3), result.output
    out = tmp / "out"
    args = ["run", str(events), "--out", str(out), "--quiet"]
    if suite is not None:
        suites = tmp / "suites"
        suites.mkdir(exist_ok=True)
        (suites / "suite.json").write_text(json.dumps(suite))
        args += ["--suites", str(suites)]
    graded = _invoke(*args)
    assert graded.exit_code == 0, graded.output
    return out


def _read(path: Path) -> Any:
    return inspect_log().read_eval_log(str(path))


def _tool_events(sample: Any) -> list[Any]:
    return [event for event in sample.events if event.event == "tool"]


@pytest.mark.slow
def test_e111_every_sample_and_epoch_is_one_graded_trial(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    log = _read(logs["arithmetic.eval"])
    out = _graded(tmp_path, logs["arithmetic.eval"])
    trials = pl.read_parquet(out / "trials.parquet").filter("counted")
    assert trials.height == len(log.samples) == 4 * 3
    got = {(row["task_id"], row["trial_index"]): row for row in trials.iter_rows(named=True)}
    for sample in log.samples:
        row = got[(inspect_logs.task_id(sample.id), sample.epoch - 1)]
        assert row["score"] == (1.0 if sample.scores["match"].value == "C" else 0.0)
        assert row["passed"] is (sample.scores["match"].value == "C")
        assert row["run_id"] == log.eval.eval_id


@pytest.mark.slow
def test_e111_tool_calls_and_usage_equal_what_inspects_reader_reports(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    log = _read(logs["arithmetic.eval"])
    out = _graded(tmp_path, logs["arithmetic.eval"])
    trials = pl.read_parquet(out / "trials.parquet")
    rows = {(r["task_id"], r["trial_index"]): r for r in trials.iter_rows(named=True)}
    events = pl.read_parquet(sorted((tmp_path / "events").rglob("*.parquet")))
    calls = events.filter(pl.col("type") == "agent.tool-called")
    assert calls.height == sum(len(_tool_events(s)) for s in log.samples)
    for sample in log.samples:
        row = rows[(inspect_logs.task_id(sample.id), sample.epoch - 1)]
        usage = sample.model_usage["mockllm/model"]
        assert row["tool_call_count"] == len(_tool_events(sample))
        assert row["input_tokens"] == usage.input_tokens
        assert row["output_tokens"] == usage.output_tokens
        assert row["model_call_count"] == sum(e.event == "model" for e in sample.events)
        model_costs = [e.output.usage.total_cost for e in sample.events if e.event == "model"]
        assert math.isclose(float(row["usage_cost_usd"]), sum(model_costs), rel_tol=1e-12)
    # each call's tool and arguments as Inspect recorded them
    written = [
        (json.loads(p)["toolName"], json.loads(p)["inputs"]) for p in calls["payload"].to_list()
    ]
    recorded = [(e.function, e.arguments) for s in log.samples for e in _tool_events(s)]
    assert sorted(map(json.dumps, written)) == sorted(map(json.dumps, recorded))


@pytest.mark.slow
def test_e111_a_model_graded_scorer_is_a_judge_its_cost_counts_not_its_calls(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    """D-6: the scorer's own model calls (after the bracket) add to the trial's cost, while the
    efficiency counts (in the bracket) are the solver's alone."""
    log = _read(logs["judged.eval"])
    out = _graded(tmp_path, logs["judged.eval"])
    rows = {
        (r["task_id"], r["trial_index"]): r
        for r in pl.read_parquet(out / "trials.parquet").iter_rows(named=True)
    }
    for sample in log.samples:
        row = rows[(inspect_logs.task_id(sample.id), sample.epoch - 1)]
        scoring = next(
            i
            for i, e in enumerate(sample.events)
            if e.event == "span_begin" and e.type == "scorers"
        )
        solver_calls = [e for e in sample.events[:scoring] if e.event == "model"]
        judge_calls = [e for e in sample.events[scoring:] if e.event == "model"]
        assert judge_calls, "the grader is called for every sample"
        assert row["model_call_count"] == len(solver_calls)
        assert row["input_tokens"] == sum(e.output.usage.input_tokens for e in solver_calls)
        total = sample.model_usage["mockllm/model"].total_cost
        assert math.isclose(float(row["usage_cost_usd"]), total, rel_tol=1e-12)
        assert row["score"] == (1.0 if sample.scores["model_graded_qa"].value == "C" else 0.0)


@pytest.mark.slow
def test_e111_stderr_and_mean_equal_inspects_own_metrics(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    log = _read(logs["arithmetic.eval"])
    metrics = log.results.scores[0].metrics
    out = _graded(tmp_path, logs["arithmetic.eval"])
    runs = pl.read_parquet(out / "runs.parquet")
    assert math.isclose(runs["aggregate_score"][0], metrics["accuracy"].value, rel_tol=1e-12)
    assert math.isclose(runs["score_stderr"][0], metrics["stderr"].value, rel_tol=1e-12)


@pytest.mark.slow
def test_e111_pass_at_k_equals_inspects_pass_at_k_reducer(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    path = logs["arithmetic-pass-at-k.eval"]
    log = _read(path)
    reduced = next(r for r in log.reductions if r.reducer == "pass_at_2")
    suite = inspect_logs.starting_suite(str(path))
    assert suite is not None and suite["trials"] == {"count": 4, "passRule": "mean"}
    suite["trials"]["k"] = 2
    out = _graded(tmp_path, path, suite=suite)
    tasks = pl.read_parquet(out / "tasks.parquet")
    by_task = dict(zip(tasks["task_id"], tasks["pass_at_k"], strict=True))
    assert len(reduced.samples) == 4
    for sample in reduced.samples:
        assert math.isclose(
            by_task[inspect_logs.task_id(sample.sample_id)], sample.value, rel_tol=1e-12
        )
    # and the mean reducer's accuracy is the suite's aggregate score
    mean = next(s for s in log.results.scores if s.reducer == "mean")
    runs = pl.read_parquet(out / "runs.parquet")
    assert math.isclose(runs["aggregate_score"][0], mean.metrics["accuracy"].value, rel_tol=1e-12)


@pytest.mark.slow
def test_e111_eval_archive_and_json_log_grade_alike(tmp_path: Path, logs: dict[str, Path]) -> None:
    archive = _graded(tmp_path / "a", logs["arithmetic.eval"])
    document = _graded(tmp_path / "j", logs["arithmetic.json"])
    columns = ["task_id", "trial_index", "score", "passed", "tool_call_count", "input_tokens"]
    left = pl.read_parquet(archive / "trials.parquet").select(columns).sort(columns[:2])
    right = pl.read_parquet(document / "trials.parquet").select(columns).sort(columns[:2])
    assert left.equals(right)


@pytest.mark.slow
def test_e111_the_scorer_option_picks_a_scorer_and_a_key_of_a_dict_score(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    path = logs["two-scorers.eval"]
    log = _read(path)
    for scorer, key, metric in (("match", None, "match"), ("graded", "close", "close")):
        option = scorer if key is None else f"{scorer}/{key}"
        out = _graded(
            tmp_path / option.replace("/", "-"), path, ingest_args=("--inspect-scorer", option)
        )
        runs = pl.read_parquet(out / "runs.parquet")
        expected = next(s for s in log.results.scores if s.name == metric)
        assert math.isclose(runs["aggregate_score"][0], expected.metrics["accuracy"].value)
    # a dict of scores without a key is no number: every trial fails closed (D-11)
    out = _graded(tmp_path / "nokey", path, ingest_args=("--inspect-scorer", "graded"))
    trials = pl.read_parquet(out / "trials.parquet")
    assert trials["score"].to_list() == [0.0] * len(log.samples)
    assert not any(trials["passed"].to_list())
    problems = pl.read_parquet(out / "problems.parquet")
    assert set(problems["code"]) >= {"score-invalid", "passed-invalid"}


def test_e111_a_partial_score_passes_only_at_the_pass_score(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    assert inspect_logs.score_of("P", None) == 0.5
    assert inspect_logs.score_of("C", None) == 1.0
    assert inspect_logs.score_of({"a": "I"}, "a") == 0.0
    assert inspect_logs.score_of("maybe", None) is None
    assert inspect_logs.score_of([1, 0], None) is None
    assert inspect_logs.score_of(float("nan"), None) is None


@pytest.mark.slow
def test_e111_an_eval_that_errored_grades_its_scored_samples_and_fails_the_rest_closed(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    path = logs["tool-error.eval"]
    log = _read(path)
    assert log.status == "error"
    result, _ = _ingest(tmp_path, path)
    report = json.loads(result.stdout)
    assert result.exit_code == 3
    codes = [p["code"] for p in report["problems"]]
    assert codes == ["inspect-sample-unscored", "inspect-eval-unfinished"]
    out = _graded(tmp_path / "g", path)
    trials = pl.read_parquet(out / "trials.parquet")
    unscored = {inspect_logs.task_id(s.id) for s in log.samples if not s.scores}
    assert unscored
    for row in trials.iter_rows(named=True):
        assert row["passed"] is (row["task_id"] not in unscored)
    problems = set(pl.read_parquet(out / "problems.parquet")["code"])
    assert "eval-incomplete" in problems


@pytest.mark.slow
def test_e111_an_interrupted_eval_grades_the_samples_it_finished(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    path = logs["interrupted.eval"]
    log = _read(path)
    assert log.status == "started" and len(log.samples) == 2
    result, _ = _ingest(tmp_path, path)
    report = json.loads(result.stdout)
    assert result.exit_code == 3
    assert [p["code"] for p in report["problems"]] == ["inspect-eval-unfinished"]
    # the starting suite names every sample the eval was to run, so those it never reached are
    # missing tasks (D-13), not tasks left out
    suite = inspect_logs.starting_suite(str(path))
    assert suite is not None
    assert [t["taskId"] for t in suite["tasks"]] == [f"sum-{i}" for i in range(1, 5)]
    out = _graded(tmp_path / "g", path, suite=suite)
    trials = pl.read_parquet(out / "trials.parquet")
    assert sorted(trials["task_id"]) == sorted(inspect_logs.task_id(s.id) for s in log.samples)
    assert all(trials["passed"])
    tasks = pl.read_parquet(out / "tasks.parquet")
    assert dict(zip(tasks["task_id"], tasks["passed"], strict=True)) == {
        "sum-1": True,
        "sum-2": True,
        "sum-3": False,
        "sum-4": False,
    }
    assert not pl.read_parquet(out / "runs.parquet")["passed"][0]
    problems = set(pl.read_parquet(out / "problems.parquet")["code"])
    assert "eval-incomplete" in problems


@pytest.mark.slow
def test_e111_a_sample_without_scores_is_one_problem_and_fails_closed(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    path = logs["sample-error.json"]
    log = _read(path)
    failed = [s for s in log.samples if s.error is not None]
    assert len(failed) == 1 and not failed[0].scores
    result, _ = _ingest(tmp_path, path)
    report = json.loads(result.stdout)
    assert [p["code"] for p in report["problems"]] == ["inspect-sample-unscored"]
    assert report["events"] > 0
    out = _graded(tmp_path / "g", path)
    trials = pl.read_parquet(out / "trials.parquet")
    row = trials.filter(pl.col("task_id") == inspect_logs.task_id(failed[0].id)).row(0, named=True)
    assert row["score"] == 0.0 and row["passed"] is False


def test_e111_a_truncated_archive_is_one_problem_and_the_other_logs_are_ingested(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    whole = logs["arithmetic.eval"].read_bytes()
    damaged = tmp_path / "in" / "damaged.eval"
    damaged.parent.mkdir()
    damaged.write_bytes(whole[: len(whole) // 2])
    shutil.copy(logs["arithmetic.json"], tmp_path / "in" / "whole.json")
    result, _ = _ingest(tmp_path, tmp_path / "in")
    report = json.loads(result.stdout)
    assert result.exit_code == 3
    assert [(Path(p["path"]).name, p["code"]) for p in report["problems"]] == [
        ("damaged.eval", "input-unreadable")
    ]
    assert report["runs"] == 1 and report["events"] > 0


def _archive_with(path: Path, out: Path, change: Any) -> Path:
    """A copy of the Inspect archive `path` with `change` applied to each JSON member's value
    (Inspect's own zip module reads and writes the members, zstd included)."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename in ("header.json", "_journal/start.json"):
                data = json.dumps(change(json.loads(data))).encode()
            target.writestr(item, data)
    return out


def _version(document: dict[str, Any], version: int) -> dict[str, Any]:
    document["version"] = version
    return document


@pytest.mark.parametrize("form", ["json", "eval"])
def test_e111_an_unknown_log_version_is_a_clear_problem(
    tmp_path: Path, logs: dict[str, Path], form: str
) -> None:
    if form == "json":
        future = tmp_path / "future.json"
        future.write_text(json.dumps(_version(json.loads(logs["arithmetic.json"].read_text()), 99)))
    else:
        future = _archive_with(
            logs["arithmetic.eval"], tmp_path / "future.eval", lambda d: _version(d, 99)
        )
    result, _ = _ingest(tmp_path, future)
    report = json.loads(result.stdout)
    assert result.exit_code == 2  # nothing usable
    assert [p["code"] for p in report["problems"]] == ["inspect-log-version"]


def test_e111_a_damaged_sample_keeps_the_samples_before_it(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    """A member of the archive damaged in place (not cut short): the samples Inspect's reader
    gives before it are kept, the run has no eval.completed, and one problem says so."""
    raw = bytearray(logs["arithmetic.eval"].read_bytes())
    with zipfile.ZipFile(logs["arithmetic.eval"]) as archive:
        member = next(i for i in archive.infolist() if i.filename == "samples/sum-2_epoch_2.json")
    start = member.header_offset + 30 + len(member.filename) + len(member.extra)
    for at in range(start, start + member.compress_size):
        raw[at] ^= 0x5A
    damaged = tmp_path / "damaged.eval"
    damaged.write_bytes(bytes(raw))
    result, events = _ingest(tmp_path, damaged)
    report = json.loads(result.stdout)
    assert result.exit_code == 3
    assert [p["code"] for p in report["problems"]] == ["inspect-samples-unreadable"]
    written = pl.read_parquet(sorted(events.rglob("*.parquet")))
    scored = written.filter(pl.col("type") == "eval.scored").height
    assert 0 < scored < 12
    assert written.filter(pl.col("type") == "eval.completed").is_empty()


def test_e111_without_inspects_reader_an_inspect_log_is_a_problem(
    tmp_path: Path, logs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    result, _ = _ingest(tmp_path, logs["arithmetic.eval"])
    report = json.loads(result.stdout)
    assert result.exit_code == 2
    assert [p["code"] for p in report["problems"]] == ["inspect-unavailable"]


@pytest.mark.slow
def test_e111_a_starting_suite_is_written_and_validates(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    path = logs["arithmetic.eval"]
    log = _read(path)
    suites = tmp_path / "suites"
    result, events = _ingest(tmp_path, path, extra=("--write-suites", str(suites)))
    assert result.exit_code == 0, result.output
    (written,) = json.loads(result.stdout)["suitesWritten"]
    suite = json.loads(Path(written).read_text())
    assert suite["trials"] == {"count": log.eval.config.epochs, "passRule": "mean"}
    assert suite["thresholds"] == {"passScore": 1.0}
    assert [t["taskId"] for t in suite["tasks"]] == sorted({s.id for s in log.samples})
    assert _invoke("validate", written).exit_code == 0
    graded = _invoke(
        "run", str(events), "--suites", str(suites), "--out", str(tmp_path / "o"), "--quiet"
    )
    assert graded.exit_code == 0


def test_e149_the_starting_suite_takes_the_bar_its_samples_were_graded_with(
    logs: dict[str, Path],
) -> None:
    """The starting suite's passScore is the pass score the log was read with, never a fixed
    1.0, and its passRule the one chosen, `mean` unless chosen; either way it validates. Both
    options check what they are given when made (E-130)."""
    path = str(logs["arithmetic.eval"])
    half = inspect_logs.starting_suite(path, options=InspectOptions(pass_score=0.5))
    assert half is not None
    assert half["thresholds"] == {"passScore": 0.5}
    assert half["trials"] == {"count": 3, "passRule": "mean"}
    chosen = inspect_logs.starting_suite(path, suite_options=StartingSuiteOptions("any"))
    assert chosen is not None
    assert chosen["thresholds"] == {"passScore": 1.0}
    assert chosen["trials"] == {"count": 3, "passRule": "any"}
    for suite in (half, chosen):
        assert [fault for fault in validate_suite(suite) if fault.severity == "error"] == []
    with pytest.raises(OptionError, match=r"InspectOptions\.pass_score = 1\.5"):
        InspectOptions(pass_score=1.5)
    with pytest.raises(OptionError, match=r"StartingSuiteOptions\.pass_rule = 'most'"):
        StartingSuiteOptions("most")  # type: ignore[arg-type]


def test_e149_a_pass_rule_without_write_suites_is_a_usage_error(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    """`--pass-rule` only says how the starting suites are made: without `--write-suites` it
    would change nothing, so it is refused (exit 2) before anything is read or written, and
    from the library too."""
    events = tmp_path / "events"
    refused = _invoke(
        "ingest", str(logs["arithmetic.eval"]), "--out", str(events), "--pass-rule", "any"
    )
    assert refused.exit_code == 2
    assert "--pass-rule" in refused.output and "--write-suites" in refused.output
    assert not events.exists()
    with pytest.raises(OptionError, match="give suites_dir"):
        ingest_paths(logs["arithmetic.eval"], events, suite_options=StartingSuiteOptions("any"))
    assert not events.exists()
    bad = _invoke("ingest", "x", "--out", str(events), "--write-suites", "s", "--pass-rule", "most")
    assert bad.exit_code == 2 and "Invalid value for '--pass-rule'" in bad.output


def _passing_samples(log: Any, bar: float, rule: str) -> set[str]:
    """The samples that pass over their epochs under `rule` at `bar`, as Inspect's own epoch
    reducers read the log's scores: `mean` reaching the bar, or `at_least` k scores at it
    (every epoch for `all`, one for `any`)."""
    from inspect_ai.scorer import at_least, mean_score

    epochs: dict[str, list[Any]] = {}
    for sample in log.samples:
        epochs.setdefault(inspect_logs.task_id(sample.id), []).append(sample.scores["match"])
    passing = set()
    for task, scores in epochs.items():
        if rule == "mean":
            passed = mean_score()(scores).value >= bar
        else:
            passed = at_least(len(scores) if rule == "all" else 1, bar)(scores).value == 1
        if passed:
            passing.add(task)
    return passing


@pytest.mark.slow
@pytest.mark.parametrize(("bar", "rule"), [(0.5, None), (1.0, None), (1.0, "any"), (0.5, "all")])
def test_e149_ingest_writes_the_bar_and_rule_and_run_grades_by_them(
    tmp_path: Path, logs: dict[str, Path], bar: float, rule: str | None
) -> None:
    """`ingest --inspect-pass-score X --write-suites` writes passScore X and the rule chosen
    (`mean` unless chosen); the suite validates, and graded with it each task (sample) passes
    as Inspect's epoch reducers say under that rule, and the suite as Inspect's accuracy meets
    the bar (§3.6: the rule decides only the tasks)."""
    path = logs["arithmetic.eval"]
    log = _read(path)
    suites = tmp_path / "suites"
    chosen = ("--pass-rule", rule) if rule else ()
    options = ("--inspect-pass-score", str(bar), "--write-suites", str(suites), *chosen)
    result, events = _ingest(tmp_path, path, extra=options)
    assert result.exit_code == 0, result.output
    (written,) = json.loads(result.stdout)["suitesWritten"]
    suite = json.loads(Path(written).read_text(encoding="utf-8"))
    assert suite["thresholds"] == {"passScore": bar}
    assert suite["trials"] == {"count": log.eval.config.epochs, "passRule": rule or "mean"}
    validated = _invoke("validate", written)
    assert validated.exit_code == 0, validated.output
    out = tmp_path / "out"
    graded = _invoke("run", str(events), "--suites", str(suites), "--out", str(out), "--quiet")
    assert graded.exit_code == 0, graded.output
    tasks = pl.read_parquet(out / "tasks.parquet").filter("passed")
    assert set(tasks["task_id"]) == _passing_samples(log, bar, rule or "mean")
    accuracy = log.results.scores[0].metrics["accuracy"].value
    assert pl.read_parquet(out / "runs.parquet")["passed"][0] is (accuracy >= bar)


@pytest.mark.slow
def test_e145_ingest_infer_and_run_an_inspect_log(tmp_path: Path, logs: dict[str, Path]) -> None:
    """E-145 where it is meant to help: an Inspect log, its starting suite, and the
    expectations `suite infer` proposes. Each sample gets the tool calls Inspect's reader
    records in every epoch it scored correct, with their arguments; the sample no epoch got
    right gets none; graded again with the suite proposed, every epoch keeps Inspect's verdict
    and matches the calls proposed (the wrong answers called `add` as the right ones did)."""
    path = logs["arithmetic.eval"]
    log = _read(path)
    suites = tmp_path / "suites"
    result, events = _ingest(tmp_path, path, extra=("--write-suites", str(suites)))
    assert result.exit_code == 0, result.output
    proposed = tmp_path / "proposed.json"
    inferred = _invoke("suite", "infer", str(events), "--suites", str(suites), "-o", str(proposed))
    assert inferred.exit_code == 0, inferred.output
    passing: dict[str, list[list[dict[str, Any]]]] = {}
    for sample in log.samples:
        calls = [{"tool": e.function, "args": e.arguments} for e in _tool_events(sample)]
        if sample.scores["match"].value == "C":
            passing.setdefault(inspect_logs.task_id(sample.id), []).append(calls)
    suite = json.loads(proposed.read_text(encoding="utf-8"))
    for task in suite["tasks"]:
        epochs = passing.get(task["taskId"], [])
        if not epochs:
            assert "trajectory" not in task["expected"], task
            assert "none (no-passing-trial)" in inferred.output
            continue
        assert all(calls == epochs[0] for calls in epochs)  # they agree
        expected = [{**call, "argsMatch": "subset"} for call in epochs[0]]
        assert task["expected"]["trajectory"] == {"match": "in-order", "calls": expected}
    assert sorted(passing) != sorted(t["taskId"] for t in suite["tasks"])  # one never passed
    assert _invoke("validate", str(proposed)).exit_code == 0
    out = tmp_path / "out"
    graded = _invoke("run", str(events), "--suites", str(proposed), "--out", str(out), "--quiet")
    assert graded.exit_code == 0, graded.output
    rows = {
        (r["task_id"], r["trial_index"]): r
        for r in pl.read_parquet(out / "trials.parquet").iter_rows(named=True)
    }
    for sample in log.samples:
        row = rows[(inspect_logs.task_id(sample.id), sample.epoch - 1)]
        assert row["passed"] is (sample.scores["match"].value == "C")
        has_expectation = inspect_logs.task_id(sample.id) in passing
        assert row["trajectory_matched"] is (True if has_expectation else None)


def test_e111_task_ids_are_valid_and_never_shared() -> None:
    ids = ["sum-1", 7, "Q_12", "q-12", "Q 12", "é", "A", "a-559aead0"]
    names = [inspect_logs.task_id(i) for i in ids]
    assert names[:2] == ["sum-1", "7"]
    assert len(set(names)) == len(names)
    assert all(inspect_logs._TASK_ID.match(name) for name in names)
    assert inspect_logs.suite_id("my_task/Hard Math") == "inspect.evals.hard-math"
    assert inspect_logs.suite_version(2) == "2.0.0"
    assert inspect_logs.suite_version("1.2.3") == "1.2.3"
    assert inspect_logs.suite_version("beta") == "0.0.0"


@pytest.fixture
def two_nights(tmp_path: Path, logs: dict[str, Path]) -> Iterator[tuple[Path, Path]]:
    """The two arithmetic logs (the same task run twice) ingested as base and candidate."""
    sides = []
    for name in ("arithmetic.eval", "arithmetic.json"):
        side = tmp_path / name.replace(".", "-")
        result, events = _ingest(side, logs[name])
        assert result.exit_code == 0
        sides.append(events)
    yield sides[0], sides[1]


@pytest.mark.slow
def test_e111_downstream_commands_work_on_ingested_logs(
    tmp_path: Path, two_nights: tuple[Path, Path]
) -> None:
    base, cand = two_nights
    assert _invoke("verify", str(base)).exit_code == 0
    regress = _invoke("regress", str(base), str(cand))
    assert regress.exit_code == 0, regress.output
    out = tmp_path / "graded"
    assert _invoke("run", str(base), str(cand), "--out", str(out), "--quiet").exit_code == 0
    assert _invoke("history", str(out)).exit_code == 0
    run_id = pl.read_parquet(out / "runs.parquet")["run_id"][0]
    explained = _invoke("explain", str(base), str(cand), "--run-id", run_id, "--task-id", "sum-3")
    assert explained.exit_code == 0, explained.output
    assert _invoke("report", str(out), "--out", str(tmp_path / "report.html")).exit_code == 0


@pytest.mark.slow
def test_e111_an_errored_sample_fails_closed_even_when_inspect_scored_it(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    path = logs["scored-error.eval"]
    log = _read(path)
    (failed,) = [s for s in log.samples if s.error is not None]
    assert failed.scores["lenient"].value == "C"  # Inspect scored it (score_on_error)
    result, _ = _ingest(tmp_path, path)
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem["code"] == "inspect-sample-unscored" and "1 errored" in problem["message"]
    out = _graded(tmp_path / "g", path)
    trials = pl.read_parquet(out / "trials.parquet")
    row = trials.filter(pl.col("task_id") == failed.id).row(0, named=True)
    assert (row["score"], row["passed"]) == (0.0, False)
    assert trials.filter(pl.col("task_id") != failed.id)["passed"].all()


@pytest.mark.slow
def test_e111_an_invalidated_sample_fails_closed(tmp_path: Path, logs: dict[str, Path]) -> None:
    """Samples invalidated with Inspect's own `invalidate_samples` never count as passes."""
    from inspect_ai.log import ProvenanceData, invalidate_samples, write_eval_log

    log = _read(logs["arithmetic.eval"])
    chosen = [s.uuid for s in log.samples if s.id == "sum-1"]
    marked = invalidate_samples(log, chosen, ProvenanceData(author="a reviewer", reason="leak"))
    path = tmp_path / "invalidated.eval"
    write_eval_log(marked, str(path))
    result, _ = _ingest(tmp_path, path)
    (problem,) = json.loads(result.stdout)["problems"]
    assert "3 invalidated" in problem["message"]
    out = _graded(tmp_path / "g", path)
    trials = pl.read_parquet(out / "trials.parquet").filter(pl.col("task_id") == "sum-1")
    assert trials.height == 3 and not trials["passed"].any()


def _sample_with(events: list[Any], sample: Any) -> Any:
    return sample.model_copy(update={"events": events})


def test_e111_sub_agent_calls_are_theirs_and_unwritable_arguments_are_null(
    logs: dict[str, Path],
) -> None:
    """A call made inside an agent span nested in another is that agent's (not the target's);
    arguments JSON cannot hold (NaN) are written as null, which matches no expected args
    (D-2), rather than left out (read as `{}`)."""
    from inspect_ai.event import SpanBeginEvent, ToolEvent

    from evalbatch.inputs.event_rows import RowSink

    sample = _read(logs["arithmetic.eval"]).samples[0]
    events = [
        SpanBeginEvent(id="outer", type="agent", name="react"),
        ToolEvent(span_id="outer", id="c1", function="add", arguments={"a": 1, "b": 2}),
        SpanBeginEvent(id="inner", parent_id="outer", type="agent", name="Helper Bot"),
        ToolEvent(span_id="inner", id="c2", function="add", arguments={"a": float("nan")}),
    ]
    sink = RowSink("made-in-test")
    writer = inspect_logs._RunWriter(sink, "run-1")
    inspect_logs._trial(writer, _sample_with(events, sample), "match", None, 1.0)
    calls = [json.loads(row[3]) for row in sink.rows if row[2] == "agent.tool-called"]
    assert [(c["agentId"], c["callId"], c["inputs"]) for c in calls] == [
        ("inspect.agent", "c1", {"a": 1, "b": 2}),
        ("inspect.agent:helper-bot", "c2", None),
    ]


def test_e111_a_log_is_read_off_its_content_whatever_its_name(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    shutil.copy(logs["arithmetic.eval"], inputs / "NIGHTLY.EVAL")
    shutil.copy(logs["arithmetic.eval"], tmp_path / "archive.zip")
    with gzip.open(inputs / "log.json.gz", "wb") as target:
        target.write(logs["arithmetic.json"].read_bytes())
    result, _ = _ingest(tmp_path, inputs, tmp_path / "archive.zip")
    report = json.loads(result.stdout)
    assert result.exit_code == 0, report["problems"]
    assert report["files"] == 3 and report["runs"] == 2  # the archive twice: one run


# -- E-117: Inspect's own mean is the aggregate verify holds the recomputed one to ----------------


def _events_of(events: Path, kind: str) -> list[dict[str, Any]]:
    written = pl.read_parquet(sorted(events.rglob("*.parquet")))
    return [json.loads(p) for p in written.filter(pl.col("type") == kind)["payload"].to_list()]


def _verified(events: Path) -> tuple[int, dict[str, Any]]:
    result = _invoke("verify", str(events), "--json")
    return result.exit_code, json.loads(result.stdout)


def _rewrite_completed(events: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """The ingested eval.completed of `events` changed by `change`, in place."""
    for path in sorted(events.rglob("*.parquet")):
        table = pq.read_table(path)
        payloads = [
            json.dumps(change(json.loads(p))) if t == "eval.completed" else p
            for t, p in zip(table["type"].to_pylist(), table["payload"].to_pylist(), strict=True)
        ]
        column = table.schema.get_field_index("payload")
        table = table.set_column(column, "payload", pa.array(payloads, pa.string()))
        pq.write_table(table, path)


def test_e117_inspects_mean_metric_is_the_aggregate_and_verify_agrees(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    """A numeric scorer whose metric is Inspect's `mean` (not `accuracy`): that mean is the
    host's aggregateScore, equal to the recomputed one; a different aggregate still disagrees."""
    path = logs["mean-scored.eval"]
    log = _read(path)
    (score,) = log.results.scores
    assert "accuracy" not in score.metrics
    mean = score.metrics["mean"].value
    values = {s.scores["closeness"].value for s in log.samples}
    assert values == {1.0, 1 / 3}  # scores that are not 0 or 1
    result, events = _ingest(tmp_path, path)
    assert result.exit_code == 0, result.output
    (completed,) = _events_of(events, "eval.completed")
    assert completed["aggregateScore"] == mean
    code, report = _verified(events)
    assert (code, report["verdict"]) == (0, "agrees"), report["findings"]
    assert report["fields"]["eval.completed.aggregateScore"] == {"compared": 1, "disagree": 0}

    _rewrite_completed(events, lambda done: {**done, "aggregateScore": mean + 0.01})
    code, report = _verified(events)
    assert (code, report["verdict"]) == (1, "disagrees")
    (finding,) = report["findings"]
    assert finding["field"] == "eval.completed.aggregateScore"
    assert finding["host"] == mean + 0.01
    assert math.isclose(finding["recomputed"], mean, rel_tol=1e-9)


def test_e148_without_a_mean_from_inspect_there_is_no_aggregate_and_verify_does_not_compare_it(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    """Epochs reduced by `max`: Inspect's accuracy is not the mean of the epochs the recomputed
    aggregate is, so no aggregateScore is written (E-117). Inspect wrote no such figure, so
    `verify` does not hold its absence against the log (E-148): it names the field as not
    written, compares everything else, and agrees."""
    path = logs["best-epoch.eval"]
    log = _read(path)
    assert {s.reducer for s in log.results.scores} == {"max"}
    result, events = _ingest(tmp_path, path)
    assert result.exit_code == 0, result.output
    (completed,) = _events_of(events, "eval.completed")
    assert "aggregateScore" not in completed
    code, report = _verified(events)
    assert (code, report["verdict"], report["findings"]) == (0, "agrees", [])
    (run,) = report["runs"]
    assert run["notWritten"] == {"eval.completed.aggregateScore": 1}
    assert "eval.completed.aggregateScore" not in report["fields"]
    assert report["fields"]["eval.scored.score"]["compared"] == len(log.samples)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suite_id", "completed"),
    [
        ("acme.team.evals.support", {"taskCount": 1, "passed": True, "passedCount": 1}),
        ("acme.team.evals.support", {"taskCount": 1}),
        ("inspect.evals.arithmetic", {"taskCount": 1}),
    ],
    ids=["openwop", "openwop-bare", "inspect-namespace"],
)
def test_e117_any_eval_completed_without_an_aggregate_disagrees(
    suite_id: str, completed: dict[str, Any]
) -> None:
    """An absent aggregateScore is a finding whatever the suite's name (§2.1, §3.6): a name
    in the log cannot excuse a record the log lacks."""
    log = LogBuilder()
    log.eval_started(suite_id)
    log.trial("task-0", score=1, passed=True)
    log.add("eval.completed", completed)
    report = verify.verify_events(log.rows)
    fields = {(f.field, f.host) for f in report.findings}
    assert ("eval.completed.aggregateScore", "<absent>") in fields


# -- E-115, E-116: nothing Inspect's reader would hold past the caps is read --------------------

#: what a problem says of a member past SMALL's size cap
CAP = "past the cap of 1,048,576 bytes (--max-member-bytes)"
#: the member padded in the archives below (index 7 of the arithmetic archive)
MEMBER = "samples/sum-2_epoch_2.json"
#: caps small enough for the test's files: 1 MiB a member, the ratio checked past 256 KiB
SMALL = InputLimits(max_member_bytes=1 << 20, ratio_floor_bytes=256 << 10)
#: the same cap a member, the ratio never checked
SIZE_ONLY = InputLimits(max_member_bytes=1 << 20, max_ratio=1 << 30)
#: the same caps, at most 50 decompressed bytes per compressed byte
RATIO = InputLimits(max_member_bytes=1 << 20, max_ratio=50, ratio_floor_bytes=256 << 10)


def _padded(path: Path, out: Path, size: int, member: str = MEMBER, method: int = -1) -> Path:
    """A copy of the Inspect archive `path` whose `member` is the same JSON followed by spaces up
    to `size` bytes (JSON Inspect reads as before, compressing very well), written with
    `method` (-1: as Inspect wrote it)."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == member:
                data = data.ljust(size)
                item.compress_type = item.compress_type if method < 0 else method
            target.writestr(item, data)
    return out


def _understated(path: Path, member: str, size: int) -> None:
    """Make the archive at `path` declare `size` bytes for `member`, in its central directory
    and its local header, whatever its data inflates to."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        offset = archive.getinfo(member).header_offset
    struct.pack_into("<I", raw, offset + 22, size)
    at = 0
    while (at := raw.find(b"PK\x01\x02", at + 1)) >= 0:
        length = struct.unpack_from("<H", raw, at + 28)[0]
        if raw[at + 46 : at + 46 + length] == member.encode():
            struct.pack_into("<I", raw, at + 24, size)
    path.write_bytes(bytes(raw))


def _member_index(path: Path, member: str) -> int:
    with zipfile.ZipFile(path) as archive:
        return [i.filename for i in archive.infolist()].index(member)


def _read_log(path: Path, limits: InputLimits) -> RowSink:
    sink = RowSink(str(path))
    inspect_logs.read_inspect_log(sink, inspect_logs.InspectOptions(), limits)
    return sink


def _written(sink: RowSink, kind: str) -> list[dict[str, Any]]:
    return [json.loads(row[3]) for row in sink.rows if row[2] == kind]


STORED, DEFLATED, ZSTD = zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, 93


@pytest.mark.slow
@pytest.mark.parametrize(
    ("breach", "method", "size", "limits", "cap"),
    [
        ("declared", ZSTD, 2 << 20, SMALL, CAP),
        ("declared", DEFLATED, 2 << 20, SMALL, CAP),
        ("declared", STORED, 2 << 20, SMALL, CAP),
        ("understated", ZSTD, 2 << 20, SIZE_ONLY, CAP),
        ("understated", DEFLATED, 2 << 20, SIZE_ONLY, CAP),
        ("understated", ZSTD, 2 << 20, SMALL, "past the cap of 200 decompressed bytes per"),
        ("understated", DEFLATED, 2 << 20, SMALL, "past the cap of 200 decompressed bytes per"),
        ("ratio", ZSTD, 600 << 10, RATIO, "past the cap of 50 decompressed bytes per"),
        ("ratio", DEFLATED, 600 << 10, RATIO, "past the cap of 50 decompressed bytes per"),
    ],
)
def test_e116_a_sample_member_past_a_cap_is_not_read_and_the_other_samples_are(
    tmp_path: Path,
    logs: dict[str, Path],
    breach: str,
    method: int,
    size: int,
    limits: InputLimits,
    cap: str,
) -> None:
    """A sample member that declares more than the cap, inflates past it while declaring less
    (Inspect's reader inflates all the data whatever the header says), or inflates past the
    ratio: never read. Its trial fails closed, the other samples are read, the eval is left
    without eval.completed, and the problem names the member and the cap, not its content."""
    path = _padded(logs["arithmetic.eval"], tmp_path / "padded.eval", size, method=method)
    index = _member_index(path, MEMBER)
    if breach == "understated":
        _understated(path, MEMBER, 11_000)
        with zipfile.ZipFile(path) as archive:
            assert archive.getinfo(MEMBER).file_size == 11_000
        # Inspect's reader reads it, all of it, and the sample is as it was
        sample = inspect_log().read_eval_log_sample(str(path), id="sum-2", epoch=2)
        assert sample.scores is not None
    sink = _read_log(path, limits)
    problems = [(p.where, p.code, p.reason) for p in sink.problems]
    assert [(where, code) for where, code, _ in problems] == [
        (f"member {index}", "input-unreadable"),
        (None, "inspect-sample-unscored"),
    ]
    reason = problems[0][2]
    assert cap in reason and "samples/*.json" in reason and "sum-2" not in reason
    assert ("inflates" if breach == "understated" else "declares") in reason
    assert "1 past a cap" in problems[1][2]
    scored = {(s["taskId"], s["trialIndex"]): s for s in _written(sink, "eval.scored")}
    assert len(scored) == 12
    refused = scored.pop(("sum-2", 1))
    assert "score" not in refused and "passed" not in refused
    expected = {
        (s.id, s.epoch - 1): s.scores["match"].value == "C"
        for s in _read(logs["arithmetic.eval"]).samples
    }
    assert {key: s["passed"] for key, s in scored.items()} == {
        key: passed for key, passed in expected.items() if key != ("sum-2", 1)
    }
    assert _written(sink, "eval.completed") == []
    # under the default caps the same archive is read whole, as Inspect wrote it
    if breach != "understated":
        whole = _read_log(path, InputLimits())
        assert whole.problems == [] and len(_written(whole, "eval.completed")) == 1


@pytest.mark.parametrize("member", ["header.json", "summaries.json"])
def test_e116_another_member_past_the_cap_leaves_the_log_unread(
    tmp_path: Path, logs: dict[str, Path], member: str
) -> None:
    path = _padded(logs["arithmetic.eval"], tmp_path / "padded.eval", 2 << 20, member=member)
    sink = _read_log(path, SMALL)
    (problem,) = sink.problems
    index = _member_index(path, member)
    assert (problem.where, problem.code) == (None, "input-unreadable")
    assert problem.reason == (
        f"not read: archive member {index} ({member}) declares a size past the cap of "
        "1,048,576 bytes (--max-member-bytes)"
    )
    assert sink.rows == []


def test_e116_a_log_past_a_cap_is_one_problem_and_the_other_files_are_ingested(
    tmp_path: Path, logs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    _padded(logs["arithmetic.eval"], inputs / "big.eval", 2 << 20, member="header.json")
    shutil.copy(logs["arithmetic.json"], inputs / "whole.json")
    result, _ = _ingest(tmp_path, inputs, extra=("--max-member-bytes", "1MiB"))
    report = json.loads(result.stdout)
    assert result.exit_code == 3
    assert [(Path(p["path"]).name, p["code"]) for p in report["problems"]] == [
        ("big.eval", "input-unreadable")
    ]
    assert report["runs"] == 1 and report["events"] > 0


@pytest.mark.parametrize("name", ["arithmetic.json", "arithmetic.eval"])
def test_e116_a_gzip_compressed_log_is_decompressed_against_the_caps(
    tmp_path: Path, logs: dict[str, Path], name: str
) -> None:
    if name.endswith(".json"):  # the log followed by spaces: JSON Inspect reads as before
        data = logs[name].read_bytes().ljust(2 << 20)
    else:
        stored = _padded(logs[name], tmp_path / "padded.eval", 2 << 20, method=STORED)
        data = stored.read_bytes()
    packed = tmp_path / f"{name}.gz"
    with gzip.open(packed, "wb") as target:
        target.write(data)
    (problem,) = _read_log(packed, SMALL).problems
    assert problem.code == "input-unreadable"
    assert problem.reason == (
        "not read: it decompresses past the cap of 1,048,576 bytes (--max-member-bytes)"
    )
    # the ratio too: well compressed, and past the floor
    ratio = InputLimits(max_member_bytes=8 << 20, max_ratio=20, ratio_floor_bytes=256 << 10)
    (problem,) = _read_log(packed, ratio).problems
    assert "past the cap of 20 decompressed bytes per compressed byte" in problem.reason
    assert _read_log(packed, InputLimits(max_member_bytes=8 << 20)).problems == []


def test_e116_a_json_log_is_read_whole_only_within_the_cap(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    path = logs["arithmetic.json"]
    size = path.stat().st_size
    (problem,) = _read_log(path, InputLimits(max_member_bytes=size - 1)).problems
    assert (problem.code, problem.reason) == (
        "input-unreadable",
        f"not read: a JSON log is read whole: {size:,} bytes, past the cap of {size - 1:,} bytes",
    )
    assert _read_log(path, InputLimits(max_member_bytes=size)).problems == []


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_e115_a_json_log_nested_past_the_depth_cap_is_not_read(
    tmp_path: Path, logs: dict[str, Path]
) -> None:
    """Inspect's reader streams a `.json` log's header with a parser that nests as deep as the
    file does: a log nested deeper than the cap is refused before that reader sees it."""
    document = json.loads(logs["arithmetic.json"].read_text())
    document["eval"]["metadata"] = {"deep": _nested(100)}
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(document))
    assert inspect_log().read_eval_log(str(deep), header_only=True).eval.metadata is not None
    sink = _read_log(deep, InputLimits())
    assert [(p.code, p.reason) for p in sink.problems] == [
        (
            "input-unreadable",
            "not read: nested deeper than 64 levels, the limit on JSON input (E-115)",
        )
    ]
    assert sink.rows == []
    assert _read_log(deep, InputLimits(max_depth=128)).problems == []


def test_e116_samples_are_read_in_groups_of_bounded_size(
    logs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inspect holds a group's samples until the group is read: a group holds at most
    GROUP_BYTES of them (a sample is about 11 KB here), in the log's order."""
    groups: list[int] = []
    by_id = inspect_log().read_eval_log_samples_by_id

    def counted(source: str, group: list[Any], **options: Any) -> Any:
        groups.append(len(group))
        return by_id(source, group, **options)

    monkeypatch.setattr(inspect_log(), "read_eval_log_samples_by_id", counted)
    monkeypatch.setattr(inspect_logs, "GROUP_BYTES", 30_000)
    sink = _read_log(logs["arithmetic.eval"], InputLimits())
    assert groups == [2] * 6
    order = [(s.id, s.epoch - 1) for s in _read(logs["arithmetic.eval"]).samples]
    scored = [(s["taskId"], s["trialIndex"]) for s in _written(sink, "eval.scored")]
    assert sorted(scored) == sorted(order) and len(_written(sink, "eval.completed")) == 1
