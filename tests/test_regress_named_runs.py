"""E-140: a side of `regress` whose run is named (--base-run-id/--cand-run-id) reads that run and
the runs that may hold another suite, never the other runs of its suite; the answer is the one
the whole log gives (§5, E-65, E-66).

"The whole log" is the same command with the narrowing turned off (`runs_to_read` answering
None: every run the filters kept is graded, as before E-140), so each test holds every output,
the terminal's, --json, --markdown, --junit and the exit code, to it byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from evalbatch.inputs import event_files
from evalbatch.pairing import named_runs, sides
from evalbatch.pipeline import collect
from tests.helpers import run_main, write_json
from tests.logbuilder import LogBuilder, golden, suite, traj, write_raw_events

SUITE = "acme.team.evals.support"
OTHER = "acme.team.evals.billing"
TASKS = ("refund", "lookup", "escalate", "close", "greet", "survey")
CHILD = "acme/run-child-0000000001"


def eval_run(
    run_id: str, suite_id: str = SUITE, *, seed: int = 0, tasks: tuple[str, ...] = TASKS
) -> LogBuilder:
    """A clean eval run: per task two trials, each calling one tool, scored by `seed`."""
    log = LogBuilder(run_id)
    log.eval_started(suite_id, task_count=len(tasks))
    for number, task in enumerate(tasks):
        for trial in range(2):
            score = ((number + trial + seed) % 4) / 3
            tool = "crm:lookup" if (number + seed) % 3 else "kb:search"
            log.trial(
                task,
                calls=[(tool, {"n": number})],
                score=score,
                passed=score == 1,
                trial_index=trial,
            )
    log.eval_completed()
    return log


def chat_run(run_id: str) -> LogBuilder:
    """A run that is no eval run (no eval.started, E-1): an agent's calls alone."""
    log = LogBuilder(run_id)
    log.add("run.started", {"workflowId": "wf"})
    log.bracket(calls=[("crm:lookup", {"n": 1})])
    return log


def write_log(path: Path, *logs: LogBuilder) -> Path:
    return write_raw_events(path, [row for log in logs for row in log.rows])


def suites_dir(root: Path, *docs: dict[str, Any]) -> Path:
    for doc in docs:
        write_json(root / f"{doc['suiteId']}.json", doc)
    return root


def plain_suites(root: Path) -> Path:
    tasks = [golden(task) for task in TASKS]
    doc = suite(*tasks, suite_id=SUITE, trials={"count": 2})
    return suites_dir(root, doc, suite(*tasks, suite_id=OTHER, trials={"count": 2}))


@pytest.fixture
def whole_log(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Turn the narrowing off: every side is graded whole, as before E-140."""
    return lambda: monkeypatch.setattr(named_runs, "runs_to_read", lambda claims, named: None)


@pytest.fixture
def graded_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """The runs each grading of a side graded (one list a pass), in the order graded."""
    passes: list[list[str]] = []
    real = collect.grade_loaded

    def spy(*args: Any, **kwargs: Any) -> collect.GradeResult:
        result = real(*args, **kwargs)
        passes.append(result.runs["run_id"].to_list())
        return result

    monkeypatch.setattr(sides, "grade_loaded", spy)
    yield passes


def regress(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    out: Path,
    *args: str | Path,
) -> dict[str, Any]:
    """`evalbatch regress ARGS` in process, once as a table and once as JSON, each also writing
    --markdown and --junit: every output it gives, by name."""
    out.mkdir(parents=True)
    shown: dict[str, Any] = {}
    for name, extra in (("table", []), ("json", ["--json"])):
        markdown, junit = out / f"{name}.md", out / f"{name}.xml"
        code, stdout, stderr = run_main(
            monkeypatch, capsys, "regress", *args, *extra, "--markdown", markdown, "--junit", junit
        )
        shown[name] = (code, stdout, stderr)
        for path in (markdown, junit):
            shown[path.name] = path.read_bytes() if path.exists() else None
    return shown


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    """A baseline log of three runs of the suite, one of another suite and a run that is no eval
    run; a candidate log of two runs of the suite and one of the other suite."""
    base = write_log(
        tmp_path / "base" / "events.parquet",
        eval_run("acme/base-1", seed=0),
        eval_run("acme/base-2", seed=1),
        eval_run("acme/base-3", seed=2),
        eval_run("acme/base-other", OTHER, seed=0),
        chat_run("acme/base-chat"),
    )
    cand = write_log(
        tmp_path / "cand" / "events.parquet",
        eval_run("acme/cand-1", seed=3),
        eval_run("acme/cand-2", seed=1),
        eval_run("acme/cand-other", OTHER, seed=1),
    )
    return {"base": base, "cand": cand, "suites": plain_suites(tmp_path / "suites")}


def naming(logs: dict[str, Path], base_run: str, cand_run: str | None = None) -> list[Any]:
    """`regress`'s arguments over `logs` with the baseline run (and the candidate's) named."""
    args: list[Any] = [logs["base"], logs["cand"], "--suites", logs["suites"]]
    args += ["--base-run-id", base_run]
    return args + (["--cand-run-id", cand_run] if cand_run is not None else [])


@pytest.mark.slow
def test_e140_a_named_run_gives_the_whole_logs_answer(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    logs: dict[str, Path],
    whole_log: Callable[[], None],
) -> None:
    """E-140: both runs named out of logs of several runs and two suites: the terminal, --json,
    --markdown, --junit and the exit code are the whole logs' byte for byte (the other suite,
    one run a side, is compared too, and the two are gated as a family, E-98)."""
    args = naming(logs, "acme/base-2", "acme/cand-1")
    named = regress(monkeypatch, capsys, tmp_path / "named", *args)
    whole_log()
    whole = regress(monkeypatch, capsys, tmp_path / "whole", *args)
    assert named == whole
    comparisons = json.loads(named["json"][1])["comparisons"]
    assert [c["suiteId"] for c in comparisons] == [OTHER, SUITE]
    assert named["table"][0] in (0, 1)


def test_e140_the_other_runs_of_the_named_suite_are_not_read(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    logs: dict[str, Path],
    graded_runs: list[list[str]],
) -> None:
    """E-140: each side grades its named run and the run of the other suite, not the other runs
    of the named one's suite (nor the run that is no eval run), and reads only their rows: the
    batches planned hold those runs' events and no others."""
    planned: list[int] = []
    real_plan = event_files.plan_batches

    def counting(*args: Any, **kwargs: Any) -> event_files.BatchPlan:
        plan = real_plan(*args, **kwargs)
        planned.append(sum(plan.events))
        return plan

    monkeypatch.setattr(event_files, "plan_batches", counting)
    code, _, err = run_main(
        monkeypatch, capsys, "regress", *naming(logs, "acme/base-2", "acme/cand-1")
    )
    assert code in (0, 1), err
    assert graded_runs == [["acme/base-2", "acme/base-other"], ["acme/cand-1", "acme/cand-other"]]
    one_run = len(eval_run("acme/x").rows)  # every eval run here holds as many events
    assert planned == [2 * one_run, 2 * one_run]


def test_e140_a_broken_run_of_the_named_suite_is_not_read(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    graded_runs: list[list[str]],
) -> None:
    """E-140: a run of the named run's suite that could not be graded (two events under one
    sequence, D-3) is left unread: its problems are found by no pass, and the comparison is
    the one of the named runs."""
    broken = eval_run("acme/base-broken", seed=1)
    clash = dict(broken.rows[3])
    clash["payload"] = clash["payload"].replace("crm:lookup", "crm:other")
    broken.rows.append(clash)
    base = write_log(tmp_path / "base.parquet", eval_run("acme/base-1"), broken)
    cand = write_log(tmp_path / "cand.parquet", eval_run("acme/cand-1", seed=3))
    suites = plain_suites(tmp_path / "suites")
    problems: list[pl.DataFrame] = []
    real = collect.collect

    def keep(*args: Any, **kwargs: Any) -> collect.GradeResult:
        result = real(*args, **kwargs)
        problems.append(result.problems)
        return result

    monkeypatch.setattr(collect, "collect", keep)
    code, out, err = run_main(
        monkeypatch,
        capsys,
        "regress",
        base,
        cand,
        "--suites",
        suites,
        "--base-run-id",
        "acme/base-1",
        "--json",
    )
    assert code in (0, 1), err
    assert graded_runs == [["acme/base-1"], ["acme/cand-1"]]
    assert all(
        frame.filter(pl.col("run_id") == "acme/base-broken").is_empty() for frame in problems
    )
    assert json.loads(out)["comparisons"][0]["baseline"]["runId"] == "acme/base-1"


def delegating_run(run_id: str, child: str, *, seed: int = 0) -> LogBuilder:
    """An eval run of one task per trial whose bracket calls t:before, dispatches `child` and
    calls t:after (E-102)."""
    log = LogBuilder(run_id)
    log.eval_started(SUITE, task_count=1)
    for trial in range(2):
        invocation = log.started()
        log.call("t:before", {})
        log.add("node.dispatched", {"childRunId": child, "childWorkflowId": "wf"})
        log.call("t:after", {})
        log.completed(invocation)
        log.scored("task", score=(trial + seed) % 2, passed=True, trialIndex=trial)
    log.eval_completed()
    return log


def child_run(run_id: str, *tools: str) -> LogBuilder:
    """A child run (no eval run): calls of `tools` by a helper agent."""
    log = LogBuilder(run_id)
    log.add("run.started", {"workflowId": "wf"})
    for tool in tools:
        log.call(tool, {"q": 1}, agent="acme.agents.search")
    return log


@pytest.mark.slow
def test_e140_a_named_run_that_includes_delegates_still_reads_its_children(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    whole_log: Callable[[], None],
    graded_runs: list[list[str]],
) -> None:
    """E-140, E-102: the child runs a named run's trials dispatch are read from every file, as
    for any chosen run: the baseline's trajectory matches only with its child's calls (the
    candidate's child calls another tool), and every output is the whole logs'."""
    expected = ["t:before", "t:child", "t:after"]
    suites = suites_dir(
        tmp_path / "suites",
        suite(
            golden("task", traj("exact", expected, include_delegates=True)),
            suite_id=SUITE,
            trials={"count": 2},
        ),
    )
    base = tmp_path / "base"
    write_log(
        base / "runs.parquet",
        delegating_run("acme/base-1", "acme/child-b1"),
        delegating_run("acme/base-2", "acme/child-b2"),
    )
    write_log(
        base / "children.parquet",
        child_run("acme/child-b1", "t:child"),
        child_run("acme/child-b2", "t:child"),
    )
    cand = write_log(
        tmp_path / "cand.parquet",
        delegating_run("acme/cand-1", "acme/child-c1"),
        delegating_run("acme/cand-2", "acme/child-c2"),
        child_run("acme/child-c1", "t:child"),
        child_run("acme/child-c2", "t:elsewhere"),
    )
    args = [base, cand, "--suites", suites]
    args += ["--base-run-id", "acme/base-2", "--cand-run-id", "acme/cand-2"]
    named = regress(monkeypatch, capsys, tmp_path / "named", *args)
    assert graded_runs[:2] == [["acme/base-2"], ["acme/cand-2"]]
    comparison = json.loads(named["json"][1])["comparisons"][0]
    assert comparison["baseline"]["meanGatingScore"] == 0.5  # the child's call matched
    assert comparison["candidate"]["meanGatingScore"] == 0.0  # t:elsewhere did not
    whole_log()
    assert regress(monkeypatch, capsys, tmp_path / "whole", *args) == named


@pytest.mark.slow
def test_e140_a_named_run_not_on_its_side_is_said_as_before(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    logs: dict[str, Path],
    whole_log: Callable[[], None],
) -> None:
    """E-65, E-140: a named run that is not on its side (a typo, or a run that is no eval run)
    is exit 2 with the message listing every run the side holds, as the whole log gives it."""
    said = {}
    for way in ("named", "whole"):
        if way == "whole":
            whole_log()
        for run in ("acme/typo", "acme/base-chat"):
            said[way, run] = run_main(monkeypatch, capsys, "regress", *naming(logs, run))
    for run in ("acme/typo", "acme/base-chat"):
        assert said["named", run] == said["whole", run]
        code, out, err = said["named", run]
        assert (code, out) == (2, "")
        assert (
            f"--base-run-id {run}: no such run on the baseline side ({logs['base']}) (it holds "
            "4: acme/base-1, acme/base-2, acme/base-3, acme/base-other)"
        ) in err


@pytest.mark.slow
def test_e140_a_named_run_its_rows_cannot_vouch_for_is_read_with_its_side(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    whole_log: Callable[[], None],
    graded_runs: list[list[str]],
) -> None:
    """E-140: where the named run's eval.started rows do not settle its suite as grading reads it
    (here the row that names it has no usable sequence, so grading reads the suite of the one
    that does, which names none), the narrowed read does not hold, and the side is graded whole:
    the answer is the whole log's."""
    odd = LogBuilder("acme/base-odd")
    odd.add("eval.started", {"suiteVersion": "1.0.0", "taskCount": 1, "modes": ["golden"]})
    odd.trial("refund", calls=[("crm:lookup", {})], score=1, passed=True)
    odd.eval_completed()
    odd.add("eval.started", {"suiteId": SUITE, "suiteVersion": "1.0.0"}, sequence=-1)
    base = write_log(
        tmp_path / "base.parquet", eval_run("acme/base-1"), odd, eval_run("acme/base-other", OTHER)
    )
    cand = write_log(tmp_path / "cand.parquet", eval_run("acme/cand-1", seed=3))
    args = [
        base,
        cand,
        "--suites",
        plain_suites(tmp_path / "suites"),
        "--base-run-id",
        "acme/base-odd",
    ]
    named = regress(monkeypatch, capsys, tmp_path / "named", *args)
    assert graded_runs[0] == ["acme/base-odd", "acme/base-other"]
    assert graded_runs[1] == ["acme/base-1", "acme/base-odd", "acme/base-other"]
    whole_log()
    assert regress(monkeypatch, capsys, tmp_path / "whole", *args) == named
    assert named["table"][0] == 2


@pytest.mark.parametrize(
    ("payload", "claim"),
    [
        ('{"suiteId": "a"}', "a"),
        ('{"suiteId": "a", "suiteId": "b"}', "b"),  # D-7: the last value of a repeated key
        ('{"suiteId": 7}', None),
        ('{"suiteVersion": "1"}', None),
        ('{"suiteId": "a\\u0062"}', named_runs.UNKNOWN),  # an escape: never read apart
        ('{"suiteId": NaN}', named_runs.UNKNOWN),  # not JSON (D-7)
        ('["a"]', named_runs.UNKNOWN),
        ("not json", named_runs.UNKNOWN),
        (None, named_runs.UNKNOWN),
    ],
)
def test_e140_an_eval_started_payload_claims_a_suite_as_grading_reads_it(
    payload: str | None, claim: object
) -> None:
    """E-140: the suite an eval.started row names, read strictly (D-7); what a strict reader
    might read otherwise than grading is unknown, and its run is read."""
    assert named_runs.claim_of(payload) == claim


def test_e140_the_runs_read_are_the_named_one_and_those_of_other_suites() -> None:
    """E-140: a run whose rows name only the named run's suite, or none, is left unread; one
    naming another suite, or that its rows cannot vouch for, is read. The named run whose rows
    do not name one suite, or that is no eval run, reads the whole side (None)."""
    unknown = named_runs.UNKNOWN
    claims: dict[str, set[named_runs.Claim]] = {
        "named": {"s", None},
        "same": {"s"},
        "same-or-none": {"s", None},
        "none": {None},
        "other": {"t"},
        "both": {"s", "t"},
        "unknown": {"s", unknown},
    }
    assert named_runs.runs_to_read(claims, "named") == (
        frozenset({"named", "other", "both", "unknown"}),
        "s",
    )
    for own in ({"s", "t"}, {None}, {"s", unknown}):
        assert named_runs.runs_to_read({**claims, "named": own}, "named") is None
    assert named_runs.runs_to_read(claims, "absent") is None
