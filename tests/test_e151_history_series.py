"""E-151: `history` keeps a series per suite, target agent and evaluated model, and a night is a
night: the runs of one series in one night are one point, their trials summed.

Nights are graded with `evalbatch run` into a directory each, from logs written here with the
shared log builder: two agents running one suite, several runs each a night.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from evalbatch import api
from evalbatch.history.series import read_history, series
from evalbatch.history.trends import trends
from tests.helpers import run_main, write_events, write_json
from tests.logbuilder import EPOCH, LogBuilder, golden, suite
from tests.test_e147_errored_samples import errored  # noqa: F401  (fixture)
from tests.test_report import _runs_data

SUITE = "acme.team.evals.nightly"
AGENTS = ("acme.agents.steady", "acme.agents.shaky")
TRIALS = 3
DAY = timedelta(days=1)


def _run(run_id: str, agent: str, night: int, passes: dict[str, int], model: str) -> LogBuilder:
    """One run of the suite by `agent` on night `night`: per task, `passes[task]` of its
    trials pass (the first ones), the others score 0."""
    log = LogBuilder(run_id, EPOCH + night * DAY + timedelta(minutes=len(run_id)))
    log.eval_started(SUITE, task_count=len(passes), trialCount=TRIALS)
    for task, passing in passes.items():
        for index in range(TRIALS):
            ok = index < passing
            log.trial(
                task,
                agent=agent,
                model_class=model,
                score=1.0 if ok else 0.0,
                passed=ok,
                trial_index=index,
            )
    log.eval_completed()
    return log


def _nights(
    root: Path, nights: int, passes: Any, runs_a_night: int = 3, models: Any = None
) -> list[Path]:
    """One output directory per night: `runs_a_night` runs of each agent, each passing
    `passes(agent, night)` trials of each task (a dict by task)."""
    tasks = ("task-x", "task-y")
    suites = root / "suites"
    write_json(
        suites / "nightly.json",
        suite(
            *(golden(task) for task in tasks),
            suite_id=SUITE,
            trials={"count": TRIALS, "k": TRIALS, "passRule": "all"},
        ),
    )
    out_dirs = []
    for night in range(nights):
        logs = [
            _run(
                f"acme/{agent.rsplit('.', 1)[1]}-{night:02d}-{n}",
                agent,
                night,
                passes(agent, night),
                models(agent, n) if models else "general",
            )
            for agent in AGENTS
            for n in range(runs_a_night)
        ]
        events = write_events(
            root / "events" / f"n{night:02d}.parquet", [r for log in logs for r in log.rows]
        )
        out = root / "out" / f"n{night:02d}"
        api.write_outputs([events], out, [suites])
        out_dirs.append(out)
    return out_dirs


@pytest.fixture(scope="module")
def opposite(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Fourteen nights, three runs of each agent a night: task-x always passes for the steady
    agent and always fails for the shaky one; task-y always passes for both."""

    def passes(agent: str, night: int) -> dict[str, int]:
        return {"task-x": TRIALS if agent == AGENTS[0] else 0, "task-y": TRIALS}

    return _nights(tmp_path_factory.mktemp("opposite"), 14, passes)


def test_e151_two_agents_are_two_series_and_neither_is_flaky_or_broken(
    opposite: list[Path],
) -> None:
    """One agent always passing task-x and the other always failing it: by agent they are two
    stable series; a night's three runs are one point of nine trials, so each series has 14
    nights, not 42. Lined up as one series per suite (as before), the same runs interleave and
    the task looks flaky."""
    history = read_history(opposite)
    points = history.series
    assert set(points["agent_id"]) == set(AGENTS)
    x = points.filter(points["task_id"] == "task-x")
    for agent in AGENTS:
        mine = x.filter(x["agent_id"] == agent)
        assert mine["night"].to_list() == list(range(14))
        assert set(mine["runs"]) == {3} and set(mine["trials"]) == {3 * TRIALS}
    flaky, changes = trends(points)
    assert set(flaky["status"]) == {"stable"}
    assert not any(changes["changed"])
    together, _ = trends(series(opposite, series_by="suite"))
    x_together = together.filter(together["task_id"] == "task-x")
    assert x_together["status"].to_list() == ["flaky"]


def test_e151_a_break_in_one_agent_is_found_at_its_night_and_the_other_unchanged(
    tmp_path: Path,
) -> None:
    """The shaky agent's task-x passes every trial until night 8 and a fifth of them after
    (one trial in three on some runs): the change is found in its series at night 8, with the
    rates of its own runs; the steady agent's series shows no change."""

    def passes(agent: str, night: int) -> dict[str, int]:
        if agent == AGENTS[1] and night >= 8:
            return {"task-x": 1 if night % 2 else 0, "task-y": TRIALS}
        return {"task-x": TRIALS, "task-y": TRIALS}

    flaky, changes = trends(read_history(_nights(tmp_path, 14, passes)).series)
    found = changes.filter(changes["changed"])
    assert found.select("agent_id", "task_id", "night").rows() == [(AGENTS[1], "task-x", 8)]
    (row,) = found.to_dicts()
    assert row["rate_before"] == 1.0
    assert row["rate_after"] == pytest.approx((3 * 1 + 3 * 0) * 3 / (6 * 3 * TRIALS))
    steady = flaky.filter(flaky["agent_id"] == AGENTS[0])
    assert set(steady["status"]) == {"stable"}
    assert flaky.filter(flaky["agent_id"] == AGENTS[1], flaky["task_id"] == "task-x")[
        "status"
    ].to_list() == ["broken"]


def test_e151_models_split_a_series_only_where_they_vary(tmp_path: Path) -> None:
    """By default a series is split by model where the model varies (here the shaky agent's
    runs alternate two model classes); by agent alone they are one series again."""

    def passes(agent: str, night: int) -> dict[str, int]:
        return {"task-x": TRIALS, "task-y": TRIALS}

    def models(agent: str, n: int) -> str:
        return "coding" if agent == AGENTS[1] and n % 2 else "general"

    dirs = _nights(tmp_path, 3, passes, runs_a_night=2, models=models)
    by_model = series(dirs)
    keys = set(by_model.select("agent_id", "model").unique().rows())
    assert keys == {(AGENTS[0], "general"), (AGENTS[1], "general"), (AGENTS[1], "coding")}
    by_agent = series(dirs, series_by="agent")
    assert set(by_agent.select("agent_id", "model").unique().rows()) == {
        (AGENTS[0], None),
        (AGENTS[1], None),
    }
    assert set(by_agent["runs"]) == {2}


def test_e151_terminal_and_json_are_bounded_and_put_what_matters_first(
    opposite: list[Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The terminal names the series and the tasks that matter, not every point; --json holds
    a summary per series and the trends, every point only with --points."""
    code, out, err = run_main(monkeypatch, capsys, "history", *opposite)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("history: 14 nights (one per output directory")
    assert "2 series (by suite, agent and model), 84 runs" in lines[0]
    assert "broken or flaky tasks: none" in lines
    assert "stable: 4 task series; without a counted trial: 0" in lines
    assert len(lines) < 12
    code, out, _ = run_main(monkeypatch, capsys, "history", *opposite, "--json")
    doc = json.loads(out)
    assert "points" not in doc and doc["nights"] == 14
    assert sorted((s["agentId"], s["runs"], s["nights"]) for s in doc["series"]) == [
        (AGENTS[1], 42, 14),
        (AGENTS[0], 42, 14),
    ]
    assert len(doc["flakyTasks"]) == len(doc["changePoints"]) == 4
    code, out, _ = run_main(monkeypatch, capsys, "history", *opposite, "--json", "--points")
    assert len(json.loads(out)["points"]) == 2 * 2 * 14


def test_e151_nights_by_run_is_a_point_per_run(opposite: list[Path]) -> None:
    """`--nights-by run` gives a point per run (as before E-151); `day` pools one UTC day."""
    per_run = series(opposite[:2], nights_by="run")
    assert per_run.height == 2 * 2 * 2 * 3  # agents x tasks x nights x runs
    assert set(per_run["runs"]) == {1}
    per_day = series(opposite[:2], nights_by="day")
    assert set(per_day["night_label"]) == {f"{EPOCH + n * DAY:%Y-%m-%d}" for n in range(2)}
    assert set(per_day["runs"]) == {3}


def test_e151_history_and_report_take_inspect_logs_as_nights(
    errored: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A night may be its event logs: two Inspect logs given to `history` are two nights whose
    points are those of the same logs graded by `run` first (the night labels aside), the model
    Inspect names in the series; `report LOG` writes the page `report` writes of `run`'s
    outputs, here into report.html."""
    logs = [errored / "base.eval", errored / "cand.eval"]
    outs = []
    for log in logs:
        out = tmp_path / log.stem
        api.write_outputs([log], out)
        outs.append(out)
    direct = series(logs)
    assert direct.drop("night_label").equals(series(outs).drop("night_label"))
    assert set(direct["model"]) == {"mockllm/model"}
    assert set(direct["night_label"]) == {str(log) for log in logs}
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(monkeypatch, capsys, "report", logs[0])
    assert (code, err) == (0, ""), err
    assert out == "wrote a report of 6 charts to report.html\n"
    code, _, _ = run_main(monkeypatch, capsys, "report", outs[0], "-o", tmp_path / "ran.html")
    assert code == 0
    from_log = _runs_data((tmp_path / "report.html").read_text(encoding="utf-8"))
    from_run = _runs_data((tmp_path / "ran.html").read_text(encoding="utf-8"))
    assert from_log == from_run
