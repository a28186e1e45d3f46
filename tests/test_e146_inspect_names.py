"""E-146: an Inspect log's names carried through, on logs Inspect itself wrote
(examples/inspect/make_logs.py, the machinery of test_inspect_logs.py): the model, task and log
file of a run, the sample id and epoch of each trial, in the tables and in what `regress`,
`report` and `explain` show, and `explain` finding a trial by the names Inspect gave it.

The expected names come from Inspect's own reader of the same log, never from the events.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from evalbatch import api
from evalbatch.cli import cli
from evalbatch.explain.inspect_viewer import VIEW_COMMAND
from evalbatch.inputs import inspect_logs
from evalbatch.inputs.suites import validate_summary
from evalbatch.options import MODEL_CLASSES
from evalbatch.outputs import output_format
from tests.helpers import SAMPLE_EVENTS, SAMPLE_SUITES, SAMPLES, write_events
from tests.logbuilder import LogBuilder
from tests.test_inspect_logs import inspect_log, logs  # noqa: F401  (fixture)
from tests.test_report import _element, _rows, _runs_data, _texts

#: the columns E-146 adds, by table
NAMES = {"runs": ("model", "task_name", "log_file"), "tasks": ("sample_id",)}
NAMES["trials"] = ("sample_id", "epoch")


def _invoke(*args: str | Path) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _ingested(tmp: Path, log: Path, *options: str) -> Path:
    """The events `ingest` writes for `log` (with `options`)."""
    events = tmp / "events"
    result = _invoke("ingest", log, "--out", events, "--quiet", *options)
    assert result.exit_code == 0, result.output
    return events


def _graded(tmp: Path, events: Path) -> Path:
    out = tmp / "out"
    result = _invoke("run", events, "--out", out, "--quiet")
    assert result.exit_code == 0, result.output
    return out


def _samples(log: Path) -> dict[tuple[str, int], tuple[str, int]]:
    """Each trial Inspect recorded, (taskId, trial index) -> (sample id as text, epoch)."""
    read = inspect_log().read_eval_log(str(log))
    return {(inspect_logs.task_id(s.id), s.epoch - 1): (str(s.id), s.epoch) for s in read.samples}


def test_e146_tables_hold_the_model_task_log_file_sample_id_and_epoch(
    tmp_path: Path,
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """The runs row names the model, task and log file as Inspect's reader does; each trial and
    task its sample (`Row 1/B` as given, the number 7 as its text) and epoch; the model class
    the user gave is the summary's evaluatedModelClass (§3.6, E-14), and the summary, which has
    no field for a name, validates and holds none of them (§H)."""
    log = logs["row-ids.eval"]
    header = inspect_log().read_eval_log(str(log), header_only=True)
    out = _graded(tmp_path, _ingested(tmp_path, log, "--inspect-model-class", "coding"))
    (run,) = pl.read_parquet(out / "runs.parquet").to_dicts()
    assert (run["model"], run["task_name"], run["log_file"]) == (
        header.eval.model,
        header.eval.task,
        log.name,
    )
    assert run["evaluated_model_class"] == "coding"
    trials = pl.read_parquet(out / "trials.parquet")
    got = {
        (r["task_id"], r["trial_index"]): (r["sample_id"], r["epoch"]) for r in trials.to_dicts()
    }
    expected = _samples(log)
    assert got == expected and {s for s, _ in expected.values()} == {"Row 1/B", "Row 2/B", "7"}
    tasks = pl.read_parquet(out / "tasks.parquet")
    assert dict(tasks.select("task_id", "sample_id").iter_rows()) == {
        task: sample for (task, _), (sample, _) in expected.items()
    }
    (line,) = (out / "summaries.jsonl").read_text(encoding="utf-8").splitlines()
    summary = json.loads(line)["summary"]
    assert summary["evaluatedModelClass"] == "coding" and validate_summary(summary) == []
    written = json.dumps(summary)
    assert not any(name in written for name in (header.eval.model, log.name, "Row 1/B"))


@pytest.mark.slow
def test_e146_without_a_model_class_none_is_claimed(
    tmp_path: Path,
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """An Inspect log names its model, not its OpenWOP class: without `--inspect-model-class`
    no bracket carries one, so the model is known and the class is not (E-14); a class outside
    the enum is refused before anything is read."""
    out = _graded(tmp_path, _ingested(tmp_path, logs["arithmetic.eval"]))
    (run,) = pl.read_parquet(out / "runs.parquet").to_dicts()
    assert run["model"] == "mockllm/model" and run["evaluated_model_class"] is None
    unknown = ("--inspect-model-class", "large")
    refused = _invoke("ingest", logs["arithmetic.eval"], "--out", tmp_path / "x", *unknown)
    assert refused.exit_code == 2 and not (tmp_path / "x").exists()
    schema = Path(api.__file__).parent / "schemas" / "eval-summary.schema.json"
    enum = json.loads(schema.read_text())["properties"]["evaluatedModelClass"]["enum"]
    assert set(MODEL_CLASSES) == set(enum)


def test_e146_explain_finds_a_trial_by_sample_id_and_epoch_and_names_it(
    tmp_path: Path,
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """`--task-id "Row 1/B"` is the sample's task and `--epoch 2` its trial of index 1; the
    trial's header names the sample, epoch and model and its page in Inspect's viewer, the run's
    the command that serves the log's directory."""
    log = logs["row-ids.eval"]
    events = _ingested(tmp_path, log)
    run_id = inspect_log().read_eval_log(str(log), header_only=True).eval.eval_id
    args = ("explain", events, "--run-id", run_id, "--task-id", "Row 1/B", "--epoch", "2")
    shown = _invoke(*args)
    assert shown.exit_code == 0, shown.output
    url = f"/#/logs/{log.name}/samples/sample/{quote('Row 1/B', safe='')}/2/"
    assert re.search(
        rf"^  trial 1 .*\n    Inspect sample Row 1/B, epoch 2, model mockllm/model: "
        rf"http://127\.0\.0\.1:7575{re.escape(url)}$",
        shown.output,
        re.M,
    ), shown.output
    assert f"Inspect: task row-ids, model mockllm/model, log {log.name}" in shown.output
    assert VIEW_COMMAND in shown.output and shown.output.count("  trial ") == 1
    as_json = json.loads(_invoke(*args, "--json").output)
    (task,) = as_json["tasks"]
    (trial,) = task["trials"]
    assert task["taskId"] == inspect_logs.task_id("Row 1/B") and trial["trialIndex"] == 1
    assert trial["inspect"]["sampleId"] == "Row 1/B" and trial["inspect"]["epoch"] == 2
    assert trial["inspect"]["viewerUrl"].endswith(url)
    assert as_json["inspect"] == {
        "task": "row-ids",
        "model": "mockllm/model",
        "logFile": log.name,
        "viewCommand": VIEW_COMMAND,
    }
    both = _invoke("explain", events, "--run-id", run_id, "--trial", "0", "--epoch", "1")
    assert both.exit_code == 2


def test_e146_a_task_id_that_is_also_a_sample_id_names_both_tasks(tmp_path: Path) -> None:
    """A taskId that is also another task's sample id is refused, naming both by taskId; the
    samples' own runs (not from an Inspect log) take no `--epoch`."""
    log = LogBuilder("run-a")
    log.eval_started(task_count=2)
    for task, sample in (("x-1", "Y"), ("y-2", "x-1")):
        log.scored(task, trial_index=0)
        named = {"taskId": task, "trialIndex": 0, "sampleId": sample, "epoch": 1}
        log.add("evalbatch.inspect.sample", named)
    log.add("evalbatch.inspect.eval", {"task": "t", "model": "m/m", "logFile": "a.eval"})
    events = tmp_path / "events.parquet"
    write_events(events, log.rows)
    chosen = _invoke("explain", events, "--run-id", "run-a", "--task-id", "Y")
    assert chosen.exit_code == 0 and "task x-1 " in chosen.output
    both = _invoke("explain", events, "--run-id", "run-a", "--task-id", "x-1")
    assert both.exit_code == 2 and "x-1, y-2" in both.output, both.output
    run = "acme/run-trajectory-0001"
    samples = _invoke("explain", SAMPLE_EVENTS, "--run-id", run, "--epoch", "1")
    assert samples.exit_code == 2 and "not from an Inspect log" in samples.output


@pytest.mark.slow
def test_e146_regress_names_each_sides_task_and_model(
    tmp_path: Path,
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """Each side's line names its Inspect task and model, from event logs and from a tasks
    table alike; `--json` adds them to each side."""
    base = _ingested(tmp_path / "base", logs["arithmetic.eval"])
    cand = _ingested(tmp_path / "cand", logs["arithmetic.json"])
    for cand_side in (cand, _graded(tmp_path / "cand", cand) / "tasks.parquet"):
        shown = _invoke("regress", base, cand_side)
        assert shown.exit_code == 0, shown.output
        lines = shown.output.splitlines()
        sides = [line for line in lines if re.match(r"  (baseline|candidate):", line)]
        named = "; Inspect task arithmetic, model mockllm/model"
        assert len(sides) == 2 and all(line.endswith(named) for line in sides)
    (comparison,) = json.loads(_invoke("regress", base, cand, "--json").output)["comparisons"]
    for side in ("baseline", "candidate"):
        assert comparison[side]["model"] == "mockllm/model"
        assert comparison[side]["taskName"] == "arithmetic"


@pytest.mark.slow
def test_e146_report_shows_the_names_of_each_run_and_failed_trial(
    tmp_path: Path,
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """The runs table names each run's task and model under its id, its section the task, model
    and log file, and each failed trial its sample and epoch (read back as HTML)."""
    log = logs["row-ids.eval"]
    out = _graded(tmp_path, _ingested(tmp_path, log))
    assert _invoke("report", out).exit_code == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    (record,) = _runs_data(page)
    assert record[-1] == "task row-ids · mockllm/model"
    run_id = record[1]
    (row,) = _rows(_element(page, "runs"))[:1]
    assert row[1] == f"{run_id}task row-ids · mockllm/model"
    section = _element(page, f"run-{run_id}")
    assert _texts(section).codes[1:4] == ["row-ids", "mockllm/model", log.name]
    failed = {(r[0], r[1]) for r in _rows(section)}
    trials = pl.read_parquet(out / "trials.parquet").filter(~pl.col("passed"))
    assert failed == {
        (f"{r['task_id']}sample {r['sample_id']}, epoch {r['epoch']}", str(r["trial_index"]))
        for r in trials.to_dicts()
    }


def test_e146_other_logs_gain_only_empty_columns(tmp_path: Path) -> None:
    """For OpenWOP logs nothing changes but the schema: the new columns are null, the summaries
    are as before, and `explain` and `regress` print no Inspect line."""
    out = tmp_path / "out"
    api.write_outputs([SAMPLE_EVENTS], out, [SAMPLE_SUITES])
    for table, columns in NAMES.items():
        frame = pl.read_parquet(out / f"{table}.parquet")
        assert frame.select(pl.all_horizontal(pl.col(c).is_null().all() for c in columns)).item()
        assert pq.read_schema(out / f"{table}.parquet").names == list(output_format.COLUMNS[table])
    run = "acme/run-trials-k2-0001"
    explained = _invoke("explain", SAMPLE_EVENTS, "--suites", SAMPLE_SUITES, "--run-id", run)
    pair = (SAMPLES / "regress" / "baseline.parquet", SAMPLES / "regress" / "candidate.parquet")
    regressed = _invoke("regress", *pair, "--suites", SAMPLE_SUITES, "--json")
    assert "Inspect" not in explained.output and '"inspect"' not in explained.output
    assert '"model"' not in regressed.output and '"taskName"' not in regressed.output


@pytest.mark.slow
def test_e146_names_follow_the_events_an_earlier_ingest_wrote(
    tmp_path: Path,
    logs: dict[str, Path],  # noqa: F811
) -> None:
    """Every event before the names is the one an ingest without them wrote, so ingesting a log
    again into the directory that holds it adds the names and the run grades as before (D-3,
    E-34), rather than conflicting."""
    log = logs["arithmetic.eval"]
    events = _ingested(tmp_path, log)
    rows = pl.read_parquet(sorted(events.rglob("*.parquet")))
    older = tmp_path / "older"
    (part,) = sorted(events.rglob("*.parquet"))
    target = older / part.relative_to(events)
    target.parent.mkdir(parents=True)
    rows.filter(~pl.col("type").str.starts_with("evalbatch.inspect.")).write_parquet(target)
    before = _graded(tmp_path / "before", older)
    again = _invoke("ingest", log, "--out", older, "--quiet")
    assert again.exit_code == 0, again.output
    after = _graded(tmp_path / "after", older)
    assert (after / "summaries.jsonl").read_bytes() == (before / "summaries.jsonl").read_bytes()
    problems = pl.read_parquet(after / "problems.parquet")
    assert problems.filter(pl.col("severity") == "error").is_empty()
    (run,) = pl.read_parquet(after / "runs.parquet").to_dicts()
    assert run["log_file"] == log.name
