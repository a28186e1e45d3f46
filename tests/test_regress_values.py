"""E-141: the values behind each changed argument path (`other-args`), kept beside the changes
only when asked, bounded, and never in their JSON; the Markdown shows them for its open rows."""

from __future__ import annotations

import json

import polars as pl

from evalbatch.pairing.sides import RegressionReport
from evalbatch.publish.regress_markdown import markdown_summary
from evalbatch.reduce import behaviour_changes, paired_verdict
from tests.test_regress_markdown import tables

LOOKUP = "crm:lookup"
#: what a secret looks like; no id, tool or path of these logs holds it
MARKER = "sk-live-SECRET"


def _frames(n: int, values: dict[str, list[str]]) -> tuple[pl.DataFrame, ...]:
    """Tasks, trials and calls of two runs of `n` tasks that all drop, each task calling one tool
    with the `values` (JSON texts of `inputs`, or text that is not JSON) its side sends."""
    ids = [f"t{i:04d}" for i in range(n)]
    rows = [
        pl.DataFrame(
            {
                "run_id": run,
                "suite_id": "acme.team.evals.support",
                "suite_version": "1.0.0",
                "task_id": ids,
                "score": [score] * n,
                "gating_score": [score] * n,
                "passed": [score == 1.0] * n,
            }
        )
        for run, score in (("acme/base", 1.0), ("acme/cand", 0.0))
    ]
    trials = pl.concat(
        [
            r.select("run_id", "task_id").with_columns(
                counted=True,
                trajectory_matched=pl.lit(None, pl.Boolean),
                trajectory_reason=pl.lit(None, pl.String),
                forbidden_count=0,
                fixture_misses=0,
                failed_closed=False,
                tool_call_count=1,
                model_call_count=1,
                input_tokens=10,
                output_tokens=5,
                usage_cost_usd=0.0,
                latency_ms=1000.0,
            )
            for r in rows
        ]
    )
    calls = pl.DataFrame(
        [
            {"run_id": f"acme/{side}", "task_id": task, "trial": t, "call_pos": 0}
            | {"tool_name": LOOKUP, "inputs": inputs}
            for side, sent in values.items()
            for task in ids
            for t, inputs in enumerate(sent)
        ]
    )
    return rows[0], rows[1], trials, calls


def _changes(n: int, values: dict[str, list[str]], kept: bool) -> behaviour_changes.Changes:
    base, cand, trials, calls = _frames(n, values)
    return behaviour_changes.behaviour_changes(
        paired_verdict.paired_tasks(base, cand),
        "gating_score",
        trials,
        "acme/base",
        trials,
        "acme/cand",
        (calls, calls),
        argument_values=kept,
    )


def test_e141_each_side_shows_a_few_values_each_cut_and_counts_the_rest() -> None:
    long = json.dumps({"orderId": "x" * 200})
    sent = {
        "base": [json.dumps({"orderId": f"o{i}", "note": "n"}) for i in range(5)],
        "cand": [json.dumps({"orderId": "o9"}), long, "not json {"],
    }
    changes = _changes(4, sent, kept=True)
    assert changes.report() == _changes(4, sent, kept=False).report()  # --json: no value
    assert _changes(4, sent, kept=False).argument_values == {}
    by_key = {c.key: c for c in changes.dropped}
    order = changes.examples(by_key["other-args:crm:lookup:orderId"])
    assert [task for task, _ in order] == ["t0000", "t0001", "t0002"]  # VALUE_TASKS of them
    values = order[0][1]
    assert values.baseline == '"o0", "o1", "o2" and 2 more'
    cut = '"' + "x" * (behaviour_changes.VALUE_CHARS - 2) + "…"
    assert values.candidate == f'"o9", {cut}'
    # the note only the baseline sends; the input that is not JSON, quoted as a JSON string
    (_, note), *_ = changes.examples(by_key["other-args:crm:lookup:note"])
    assert (note.baseline, note.candidate) == ('"n"', "not sent")
    (_, whole), *_ = changes.examples(by_key["other-args:crm:lookup:"])
    assert (whole.baseline, whole.candidate) == ("not sent", '"not json {"')


def test_e141_many_tasks_keep_the_markdown_bounded() -> None:
    """1,000 dropped tasks, each sending long values of its own: three tasks per open change
    row, every value cut; the summary stays the size of a pull-request comment."""
    sent = {
        side: [json.dumps({"orderId": f"{side}-{MARKER}-" + "v" * 500, f"k-{side}": 1})]
        for side in ("base", "cand")
    }
    changes = _changes(1_000, sent, kept=True)
    assert len(changes.argument_values) == 3_000
    comparison = paired_verdict.Comparison(
        suite_id="acme.team.evals.support",
        suite_version="1.0.0",
        baseline_run_id="acme/base",
        candidate_run_id="acme/cand",
        paired_task_count=1_000,
        score_delta=-1.0,
        verdict="regressed",
        method="paired-t",
        alpha=0.05,
        changes=changes,
    )
    text = markdown_summary(RegressionReport(comparisons=[comparison], unpaired=[]))
    values = tables(text)[2]
    assert len(values) == 1 + 3 * 3  # three changes open, three tasks each
    assert len(text) < 5_000
