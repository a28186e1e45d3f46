"""`evalbatch regress` fails closed (decisions E-65..E-69).

A CI gate must never pass what it never compared: nothing compared is exit 2, a run named with
--base-run-id/--cand-run-id must exist and be compared, sides graded differently are refused unless
--allow-mixed, a tasks.parquet side is validated before use, bad option values are usage errors,
and every id printed is escaped. Each side's run, grading and mean score are shown beside the
RFC 0244 `regression` block (D-16, §5), which is unchanged.

Most cases run `evalbatch.cli.main` in-process (the entry point that turns errors into exit
codes); one runs the installed script to show the same holds end to end.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalbatch import api
from evalbatch.options import GradeOptions
from evalbatch.reduce import paired_verdict
from tests.helpers import SAMPLE_SUITES, SAMPLES, run_evalbatch, run_main
from tests.test_outputs import BLOCK_FIELDS
from tests.test_regress import task_rows, write_task_table

#: a slow family (regress's refusals, end to end):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

BASE = SAMPLES / "regress" / "baseline.parquet"
CAND = SAMPLES / "regress" / "candidate.parquet"
TRIALS_LOG = SAMPLES / "events" / "trials.parquet"
BASE_RUN = "acme/run-regress-baseline-0001"
CAND_RUN = "acme/run-regress-candidate-0001"
SUITE = "acme.support.evals.regression"
TRIALS_SUITE = "acme.support.evals.trials"
PAIR = ["--base-run-id", BASE_RUN, "--cand-run-id", CAND_RUN]
#: a run id that would clear the screen and forge a line if printed raw
HOSTILE_RUN = "acme/\x1b[2Jrun\nverdict: UNCHANGED\x00"


def invoke(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: Any
) -> tuple[int, str, str]:
    """Run `evalbatch ARGS` through the real entry point; (exit code, stdout, stderr)."""
    code, out, err = run_main(monkeypatch, capsys, *args)
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    return lambda *args: invoke(capsys, monkeypatch, "regress", *args)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The regression pair graded by `evalbatch run` several ways: tasks.parquet paths."""
    root = tmp_path_factory.mktemp("graded")
    respaced = root / "suites-respaced"  # same content, other bytes: another sha256
    respaced.mkdir()
    doc = json.loads((SAMPLE_SUITES / "regression.json").read_text())
    (respaced / "regression.json").write_text(json.dumps(doc, indent=4) + "\n")
    ways: dict[str, tuple[list[Path], GradeOptions]] = {
        "suite": ([SAMPLE_SUITES], GradeOptions()),
        "host": ([], GradeOptions()),
        "respaced": ([respaced], GradeOptions()),
        "pass-score": ([SAMPLE_SUITES], GradeOptions(default_pass_score=0.5)),
        "on-miss": ([SAMPLE_SUITES], GradeOptions(on_miss_default="fail")),
    }
    tables = {}
    for name, (suites, options) in ways.items():
        api.write_outputs([SAMPLES / "regress"], root / name, suites, options=options)
        tables[name] = root / name / "tasks.parquet"
    return tables


def copy_side(source: Path, where: Path) -> Path:
    """A copy of a graded tasks.parquet with its runs.parquet, to edit."""
    where.mkdir(parents=True)
    for name in ("tasks.parquet", "runs.parquet"):
        shutil.copy(source.with_name(name), where / name)
    return where / "tasks.parquet"


def two_suite_side(where: Path, *logs: Path) -> Path:
    """An event-log directory holding the given sample logs (so runs of several suites)."""
    where.mkdir()
    for number, log in enumerate(logs):
        shutil.copy(log, where / f"{number}-{log.name}")
    return where


# --- 1. nothing compared is exit 2 (E-65) ---------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--json"], ["--fail-on", "inconclusive"]])
def test_no_suite_on_both_sides_exits_2(run: Any, extra: list[str]) -> None:
    """E-65: no suite present on both sides means nothing was compared: exit 2 with the reason
    (`no suite is present on both sides`) on stderr and nothing on stdout (no `[]` with --json),
    so a gate never passes what it never compared."""
    code, out, err = run(TRIALS_LOG, CAND, "--suites", SAMPLE_SUITES, *extra)
    assert code == 2
    assert out == ""  # not `[]`, not a table
    assert "no suite is present on both sides" in err
    assert TRIALS_SUITE in err and SUITE in err
    # each side is named by its path, so a reader knows which file held which suites (E-65)
    assert f"the baseline side ({TRIALS_LOG})" in err and f"the candidate side ({CAND})" in err


def test_nothing_compared_exits_2_from_the_installed_script() -> None:
    """E-65, end to end: the `evalbatch` script exits 2 and prints no `[]`."""
    proc = run_evalbatch("regress", TRIALS_LOG, CAND, "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "nothing was compared" in proc.stderr


def _zero_rows(tmp: Path) -> Path:
    pl.read_parquet(CAND).head(0).write_parquet(tmp / "zero.parquet")
    return tmp / "zero.parquet"


def _no_eval_run(tmp: Path) -> Path:
    events = pl.read_parquet(CAND)
    events.filter(~pl.col("type").str.starts_with("eval.")).write_parquet(tmp / "no-eval.parquet")
    return tmp / "no-eval.parquet"


def _zero_task_rows(tmp: Path) -> Path:
    empty = pl.DataFrame(schema=paired_verdict.TASK_COLUMNS)
    return write_task_table(tmp / "empty" / "tasks.parquet", empty)


@pytest.mark.parametrize("make", [_zero_rows, _no_eval_run, _zero_task_rows])
@pytest.mark.parametrize("fail_on", ["regressed", "inconclusive"])
def test_a_side_without_eval_runs_exits_2(
    run: Any, tmp_path: Path, make: Any, fail_on: str
) -> None:
    """E-65: a zero-row event file, one with no eval run, or a zero-row tasks table
    compares nothing: exit 2 naming the side, whatever --fail-on says."""
    empty = make(tmp_path)
    code, out, err = run(BASE, empty, "--suites", SAMPLE_SUITES, "--fail-on", fail_on)
    assert code == 2
    assert out == ""
    assert "the candidate side" in err and "holds no eval run" in err


@pytest.mark.parametrize(
    "chosen",
    [
        ["--suite-id", "no.such.suite"],
        ["--run-id", "acme/nothing-*"],
        ["--since", "2030-01-01"],
        ["--until", "2000-01-01"],
        ["--since", "2026-11-01T12:00Z"],  # the baseline's run only is left out
    ],
)
def test_a_filter_matching_nothing_on_a_side_exits_2(run: Any, chosen: list[str]) -> None:
    """E-65 (with E-63's filters): a side left empty by a filter is exit 2."""
    code, out, err = run(BASE, CAND, "--suites", SAMPLE_SUITES, "--json", *chosen)
    assert code == 2
    assert out == ""
    assert "holds no eval run matching the run filters" in err


def test_a_suite_on_one_side_only_is_shown_and_fails_a_strict_gate(
    run: Any, tmp_path: Path
) -> None:
    """E-66: a suite on one side only is reported on stderr (and in --json's notCompared) while
    the others are compared; it keeps the default exit code but fails --fail-on inconclusive."""
    base = two_suite_side(tmp_path / "base", BASE, TRIALS_LOG)
    same = ["--suites", SAMPLE_SUITES, "--allow-same-run"]  # an unchanged pair (E-114)
    code, out, err = run(base, BASE, *same)
    assert code == 0
    assert "UNCHANGED" in out
    assert f"warning: not compared (one side only): base: {TRIALS_SUITE}" in err
    code, out, err = run(base, BASE, *same, "--json")
    assert code == 0
    assert json.loads(out)["notCompared"] == [{"side": "base", "suiteId": TRIALS_SUITE}]
    code, _, err = run(base, BASE, *same, "--fail-on", "inconclusive")
    assert code == 1
    assert "not compared" in err


def test_a_suite_named_with_suite_must_be_compared(run: Any, tmp_path: Path) -> None:
    """E-66: a suite named with --suite-id that is on one side only is exit 2, even when another
    named suite was compared (naming a suite makes it required)."""
    base = two_suite_side(tmp_path / "base", BASE, TRIALS_LOG)
    code, out, err = run(
        base, CAND, "--suites", SAMPLE_SUITES, "--suite-id", SUITE, "--suite-id", TRIALS_SUITE
    )
    assert code == 2
    assert out == ""
    assert f"--suite-id {TRIALS_SUITE} was not compared" in err
    assert "the candidate side" in err


# --- 2. a named run must be on its side and compared (E-65) ---------------------------------


@pytest.mark.parametrize("option", ["--base-run-id", "--cand-run-id"])
def test_an_unknown_named_run_is_a_usage_error(run: Any, option: str) -> None:
    """E-65: a run named with `--base-run-id` or `--cand-run-id` must exist: `typo` is exit 2
    naming the option and the run (escaped), never silently ignored."""
    code, out, err = run(BASE, CAND, "--suites", SAMPLE_SUITES, option, "typo")
    assert code == 2
    assert out == ""
    assert f"{option} typo: no such run" in err
    code, _, err = run(BASE, CAND, "--suites", SAMPLE_SUITES, option, HOSTILE_RUN)
    assert code == 2
    assert "\x1b" not in err and "\x00" not in err
    assert "acme/\\x1b[2Jrun\\nverdict: UNCHANGED\\x00" in err


def test_a_named_run_that_was_not_compared_is_an_error(run: Any, tmp_path: Path) -> None:
    """E-65: a run named with --base-run-id whose suite is not on the other side was not compared:
    exit 2, even though another suite was."""
    base = two_suite_side(tmp_path / "base", BASE, TRIALS_LOG)
    code, out, err = run(
        base, CAND, "--suites", SAMPLE_SUITES, "--base-run-id", "acme/run-trials-k2-0001"
    )
    assert code == 2
    assert out == ""
    assert (
        "--base-run-id acme/run-trials-k2-0001 (suite acme.support.evals.trials) was not compared"
        in err
    )


# --- 3. sides graded differently are refused (E-67) ------------------------------------------


@pytest.mark.parametrize(
    ("base_way", "cand_way", "says"),
    [
        ("host", "suite", ["graded from host record", "graded from suite sha256 d6476e2ca227"]),
        (
            "suite",
            "respaced",
            ["graded from suite sha256 d6476e2ca227", "graded from suite sha256"],
        ),
        ("suite", "pass-score", ["default pass score 1,", "default pass score 0.5,"]),
        ("suite", "on-miss", ["on-miss default count", "on-miss default fail"]),
    ],
)
def test_sides_graded_differently_are_refused(
    run: Any, graded: dict[str, Path], base_way: str, cand_way: str, says: list[str]
) -> None:
    """D-4 / E-67: only runs graded alike are compared. The same log graded from the host record
    and with a suite would give verdicts such as `score delta +0.0000 … REGRESSED`, so runs
    graded from another source, suite file (sha256) or grading options are refused (exit 2, each
    side's grading said) unless --allow-mixed."""
    code, out, err = run(graded[base_way], graded[cand_way], *PAIR)
    assert code == 2
    assert out == ""
    assert "graded differently" in err and "--allow-mixed" in err
    for fragment in says:
        assert fragment in err
    code, out, _ = run(graded[base_way], graded[cand_way], *PAIR, "--allow-mixed")
    assert code in (0, 1)
    assert "baseline:" in out and "candidate:" in out


def test_an_event_log_side_is_compared_with_a_tasks_table_graded_alike(
    run: Any, graded: dict[str, Path]
) -> None:
    """E-67: an event-log side's grading is known (graded here); a tasks.parquet side's comes
    from its runs.parquet: graded alike, they are compared; graded differently, refused."""
    code, out, _ = run(BASE, graded["suite"], "--suites", SAMPLE_SUITES, "--cand-run-id", CAND_RUN)
    assert code == 1
    assert "REGRESSED" in out
    code, _, err = run(BASE, graded["host"], "--suites", SAMPLE_SUITES, "--cand-run-id", CAND_RUN)
    assert code == 2
    assert "graded from host record" in err


def test_a_tasks_table_without_its_runs_table_has_unknown_grading(
    run: Any, graded: dict[str, Path], tmp_path: Path
) -> None:
    """E-67: without the runs.parquet `evalbatch run` writes beside it, a tasks table's grading
    is unknown and cannot be shown alike (refused, even against itself) unless --allow-mixed."""
    bare = tmp_path / "bare" / "tasks.parquet"
    bare.parent.mkdir()
    shutil.copy(graded["suite"], bare)
    code, _, err = run(bare, bare, *PAIR)
    assert code == 2
    assert "graded unknown (no runs.parquet beside the tasks table)" in err
    code, out, _ = run(bare, bare, *PAIR, "--allow-mixed", "--json")
    assert code == 1
    grading = json.loads(out)["comparisons"][0]["candidate"]["grading"]
    assert grading["source"] == "unknown"


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda runs: runs.write_bytes(b"not parquet"), "cannot be read"),
        (
            lambda runs: pl.read_parquet(runs).drop("on_miss_default").write_parquet(runs),
            "records no grading",
        ),
        (
            lambda runs: (
                pl.read_parquet(runs)
                .with_columns(pl.col("graded").cast(pl.String))
                .write_parquet(runs)
            ),
            "records no grading",
        ),
        (
            lambda runs: (
                pl.read_parquet(runs).filter(pl.col("run_id") != CAND_RUN).write_parquet(runs)
            ),
            "no row in the runs.parquet beside it",
        ),
    ],
)
def test_a_damaged_runs_table_leaves_the_grading_unknown(
    run: Any, graded: dict[str, Path], tmp_path: Path, damage: Any, why: str
) -> None:
    """E-67: a runs.parquet that cannot be read, lacks or mistypes a provenance column, or has
    no row for the run gives an unknown grading (refused), never an internal error."""
    side = copy_side(graded["suite"], tmp_path / "damaged")
    damage(side.with_name("runs.parquet"))
    code, out, err = run(graded["suite"], side, *PAIR)
    assert code == 2
    assert out == ""
    assert f"candidate {CAND_RUN} graded unknown (" in err and why in err


def test_since_cannot_filter_a_tasks_table(run: Any, graded: dict[str, Path]) -> None:
    """E-67: --since/--until on a tasks.parquet side were silently ignored (it has no time);
    they are refused."""
    code, out, err = run(graded["suite"], graded["suite"], *PAIR, "--since", "2026-01-01")
    assert code == 2
    assert out == ""
    assert "--since/--until cannot filter" in err


# --- 4. the output shows each side (E-68) ----------------------------------------------------


def test_text_output_shows_each_sides_run_grading_and_mean_score(run: Any) -> None:
    """E-68: the verdict shows both scores and how each side was graded."""
    code, out, _ = run(BASE, CAND, "--suites", SAMPLE_SUITES)
    assert code == 1
    assert (
        "  baseline:  mean score 0.9333 over 10 task(s), graded from suite sha256 d6476e2ca227, "
        "default pass score 1, on-miss default count" in out
    )
    assert "  candidate: mean score 0.5333 over 10 task(s), graded from suite sha256" in out
    assert "score delta -0.4000" in out


def test_json_output_keeps_the_block_and_adds_each_side(run: Any) -> None:
    """D-16 / §5 / E-68: the `regression` block is unchanged; `baseline` and `candidate` go
    beside it, and `scoreDelta` is the difference of their mean scores."""
    code, out, _ = run(BASE, CAND, "--suites", SAMPLE_SUITES, "--json")
    assert code == 1
    document = json.loads(out)
    assert list(document) == ["comparisons", "notCompared"]
    comparison = document["comparisons"][0]
    assert list(comparison["regression"]) == BLOCK_FIELDS["regression"]
    base, cand = comparison["baseline"], comparison["candidate"]
    assert base["runId"] == BASE_RUN and cand["runId"] == CAND_RUN
    assert base["grading"] == {
        "source": "suite",
        "suiteSha256": cand["grading"]["suiteSha256"],
        "defaultPassScore": 1.0,
        "onMissDefault": "count",
        "unknownBecause": None,
    }
    assert len(base["grading"]["suiteSha256"]) == 64
    assert base["taskCount"] == cand["taskCount"] == 10
    delta = comparison["regression"]["scoreDelta"]
    assert delta == pytest.approx(cand["meanScore"] - base["meanScore"])


# --- 5. a tasks.parquet side is validated (E-69) ---------------------------------------------

NAN, INF = float("nan"), float("inf")


def _set(column: str, value: Any, rows: int = 3) -> Any:
    """Set `column` to `value` in the candidate's first `rows` task rows."""
    first = (pl.col("run_id") == CAND_RUN) & (pl.col("task_pos") < rows)
    dtype = pl.Float64 if column in ("score", "gating_score") else None
    return lambda t: t.with_columns(
        pl.when(first).then(pl.lit(value, dtype=dtype)).otherwise(pl.col(column)).alias(column)
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("gating_score", NAN), "column gating_score: 3 row(s) NaN"),
        (_set("gating_score", None), "column gating_score: 3 row(s) null"),
        (_set("score", INF, 2), "column score: 2 row(s) infinite"),
        (_set("score", 1000.0, 10), "column score: 10 row(s) outside 0..1"),
        (_set("gating_score", -0.5, 1), "column gating_score: 1 row(s) outside 0..1"),
        (_set("passed", None, 4), "column passed: 4 row(s) null"),
        (_set("run_id", None, 1), "column run_id: 1 row(s) null"),
        (
            lambda t: pl.concat([t, t.filter(pl.col("run_id") == CAND_RUN).head(2)]),
            "columns run_id, task_id: 4 row(s) repeat a pair (first: run "
            "acme/run-regress-candidate-0001, task ",
        ),
        (lambda t: t.drop("gating_score"), "column gating_score: missing"),
        (
            lambda t: t.with_columns(pl.col("score").cast(pl.String)),
            "column score: type String, expected Float64",
        ),
    ],
)
def test_a_faulty_tasks_table_is_refused_with_one_message_per_fault(
    run: Any, graded: dict[str, Path], tmp_path: Path, edit: Any, message: str
) -> None:
    """E-69: a hand-edited tasks.parquet is checked before it is trusted (a NaN would give p 0
    with a NaN interval, duplicates would be paired twice, scores of 1000 would be accepted):
    exit 2 with the file, the column, the fault and the count."""
    side = copy_side(graded["suite"], tmp_path / "edited")
    edit(pl.read_parquet(side)).write_parquet(side)
    code, out, err = run(graded["suite"], side, *PAIR)
    assert code == 2
    assert out == ""
    assert f"{side} is not a usable tasks table" in err
    assert f"{side}: {message}" in err


def test_all_nan_scores_are_not_a_sign_test_regression(
    run: Any, graded: dict[str, Path], tmp_path: Path
) -> None:
    """E-69: all-NaN gating scores are refused, never read as `REGRESSED p 0.002` under the
    sign test."""
    side = copy_side(graded["suite"], tmp_path / "nan")
    tasks = pl.read_parquet(side).with_columns(pl.lit(NAN).alias("gating_score"))
    tasks.write_parquet(side)
    code, out, err = run(graded["suite"], side, *PAIR, "--method", "sign-test")
    assert code == 2
    assert "REGRESSED" not in out
    assert "column gating_score: 20 row(s) NaN" in err


def test_task_table_faults_lists_every_fault_once() -> None:
    """E-69: one message per fault, several faults at once, content-free (columns, counts, ids)."""
    suite = pl.lit("acme.team.evals.support").alias("suite_id")
    assert paired_verdict.task_table_faults(task_rows([0.5, 1.0]).with_columns(suite)) == []
    faulty = task_rows([0.5, NAN, 2.0], ids=["a", "a", "b"]).with_columns(suite)
    assert paired_verdict.task_table_faults(faulty) == [
        "column score: 1 row(s) NaN",
        "column score: 1 row(s) outside 0..1",
        "column gating_score: 1 row(s) NaN",
        "column gating_score: 1 row(s) outside 0..1",
        "columns run_id, task_id: 2 row(s) repeat a pair (first: run acme/run, task a)",
    ]


# --- 5b. a run is never compared with itself (E-114) ----------------------------------------


def _renamed_run(source: Path, target: Path, run_id: str) -> Path:
    """The same events under another run id, in another file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    pl.read_parquet(source).with_columns(runId=pl.lit(run_id)).write_parquet(target)
    return target


@pytest.mark.parametrize("form", ["same-path", "copy", "renamed-run", "tasks-table-and-log"])
def test_e114_a_run_compared_with_itself_is_refused(
    run: Any, graded: dict[str, Path], tmp_path: Path, form: str
) -> None:
    """A gate whose two paths name one run (the same file, a copy, the same events under
    another run id, or its tasks table against its log) could only say unchanged: exit 2 with
    the reason, and `--allow-same-run` compares anyway."""
    base: Path | str = BASE
    cand: Path | str = {
        "same-path": BASE,
        "copy": shutil.copy(BASE, tmp_path / "copy.parquet"),
        "renamed-run": _renamed_run(BASE, tmp_path / "renamed.parquet", "acme/run-renamed"),
        "tasks-table-and-log": BASE,
    }[form]
    extra: list[Any] = ["--suites", SAMPLE_SUITES]
    if form == "tasks-table-and-log":
        base = graded["suite"]
        extra += ["--base-run-id", BASE_RUN]
    code, out, err = run(base, cand, *extra)
    assert (code, out) == (2, "")
    assert "the baseline and the candidate are the same run" in err
    assert "--allow-same-run" in err and BASE_RUN in err
    code, out, _ = run(base, cand, *extra, "--allow-same-run")
    assert code == 0 and "UNCHANGED" in out


def test_e114_two_runs_with_other_events_are_compared(run: Any) -> None:
    code, out, err = run(BASE, CAND, "--suites", SAMPLE_SUITES)
    assert code == 1 and "REGRESSED" in out and "same run" not in err


# --- 6. option values (E-82) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--alpha", "nan"),
        ("--margin", "nan"),
        ("--margin", "inf"),
        ("--margin", "1"),
        ("--margin", "5"),
        ("--resamples", "9999"),
        ("--resamples", "1000001"),
        ("--resamples", "100000000000"),
        ("--seed", "-1"),
    ],
)
def test_bad_option_values_are_usage_errors(run: Any, option: str, value: str) -> None:
    """E-82: `--alpha nan`, `--seed -1` and `--margin nan` are click's usage error (exit 2)
    naming the option, never an internal error or an accepted value."""
    code, out, err = run(BASE, CAND, "--suites", SAMPLE_SUITES, option, value)
    assert code == 2
    assert out == ""
    assert f"Invalid value for '{option}'" in err


# --- 7. printed ids are escaped (E-83) ------------------------------------------------------


def test_printed_run_and_suite_ids_are_escaped(
    run: Any, graded: dict[str, Path], tmp_path: Path
) -> None:
    """E-83: run ids with escape codes, newlines or NUL are never printed raw; every run or suite
    id regress prints is escaped (text, the not-compared warning, errors); --json escapes by
    JSON's own rules."""
    hostile_suite = "acme.\x1b]0;title\x07suite"
    side = copy_side(graded["suite"], tmp_path / "hostile")
    for name in ("tasks.parquet", "runs.parquet"):
        table = pl.read_parquet(side.with_name(name))
        table.with_columns(
            pl.col("run_id").replace({CAND_RUN: HOSTILE_RUN}),
        ).write_parquet(side.with_name(name))
    code, out, err = run(
        graded["suite"], side, "--base-run-id", BASE_RUN, "--cand-run-id", HOSTILE_RUN
    )
    assert code == 1
    assert "\x1b" not in out + err and "\x00" not in out + err
    assert "candidate acme/\\x1b[2Jrun\\nverdict: UNCHANGED\\x00" in out
    assert "\nverdict: UNCHANGED" not in out
    code, out, _ = run(
        graded["suite"], side, "--base-run-id", BASE_RUN, "--cand-run-id", HOSTILE_RUN, "--json"
    )
    assert "\x1b" not in out
    assert json.loads(out)["comparisons"][0]["candidateRunId"] == HOSTILE_RUN
    # a suite on one side only (the warning), then no suite on both sides (the error)
    extra = task_rows([1.0, 0.0], run="acme/extra").with_columns(
        pl.lit(hostile_suite).alias("suite_id")
    )
    ours = pl.read_parquet(graded["suite"]).select(list(paired_verdict.TASK_COLUMNS))
    both = write_task_table(
        tmp_path / "both" / "tasks.parquet", pl.concat([ours, extra.select(ours.columns)])
    )
    code, _, err = run(graded["suite"], both, *PAIR, "--allow-mixed")
    assert code == 1
    assert "\x1b" not in err and "\x07" not in err
    assert "warning: not compared (one side only): cand: acme.\\x1b]0;title\\x07suite" in err
    alone = write_task_table(tmp_path / "alone" / "tasks.parquet", extra)
    code, _, err = run(alone, graded["suite"])
    assert code == 2
    assert "\x1b" not in err and "\x07" not in err
    assert f"the baseline side ({alone}): acme.\\x1b]0;title\\x07suite" in err


@pytest.mark.parametrize("damaged_side", ["base", "cand"])
def test_an_unreadable_event_file_on_a_side_refuses_the_comparison(
    run: Any, tmp_path: Path, damaged_side: str
) -> None:
    """E-65: a file of a side that cannot be read may hold that side's run of any suite, and
    comparing the rest would let the lost run pass as a suite "on one side only" (exit 0): the
    comparison is refused (exit 2), naming the file and the problem code, one line each."""
    side = tmp_path / damaged_side
    side.mkdir()
    shutil.copy(BASE if damaged_side == "base" else CAND, side / "events.parquet")
    (side / "lost.parquet").write_bytes(b"PAR1 not parquet PAR1")
    base, cand = (side, CAND) if damaged_side == "base" else (BASE, side)
    code, out, err = run(base, cand, "--suites", SAMPLE_SUITES)
    assert code == 2, err
    assert out == ""
    lines = err.splitlines()
    assert "nothing was compared" in lines[0]
    assert any("lost.parquet" in line and "[file-unreadable]" in line for line in lines[1:])


def test_a_pair_whose_run_was_not_graded_is_exit_2(run: Any, tmp_path: Path) -> None:
    """§5, E-65: a candidate run that could not be graded (here two events with one sequence and
    different content, §6) leaves its suite `inconclusive` with nothing paired. Nothing was
    compared for that suite, so the gate does not pass: exit 2, the reason on stderr, the
    comparison still shown."""
    table = pq.read_table(CAND)
    rows = table.to_pylist()
    clash = dict(next(r for r in rows if r["type"] == "eval.scored"))
    clash["payload"] = clash["payload"].replace('"score"', '"scoreX"', 1)
    broken = tmp_path / "candidate.parquet"
    pq.write_table(pa.Table.from_pylist([*rows, clash], schema=table.schema), broken)
    code, out, err = run(BASE, broken, "--suites", SAMPLE_SUITES, "--json")
    assert code == 2, err
    comparison = json.loads(out)["comparisons"][0]
    assert comparison["regression"]["verdict"] == "inconclusive"
    assert comparison["regression"]["pairedTaskCount"] == 0
    assert "nothing was compared" in err and "not graded" in err


def test_a_run_not_graded_for_an_invalid_suite_names_the_suite_file(
    run: Any, tmp_path: Path
) -> None:
    """The reason a pair compared nothing is the run's own problem message, which names the
    suite file at fault and the JSON path, not only a code."""
    suites = tmp_path / "suites"
    shutil.copytree(SAMPLE_SUITES, suites)
    doc = json.loads((suites / "regression.json").read_text())
    (suites / "regression.json").write_text(json.dumps({**doc, "trials": {"count": 0}}))
    code, _, err = run(BASE, CAND, "--suites", suites)
    assert code == 2
    assert "nothing was compared" in err and "[suite-invalid]" in err
    assert f"$.trials.count in {suites / 'regression.json'}" in err


@pytest.mark.parametrize(
    ("cand_ids", "cand_version", "code", "reason"),
    [
        (["t-0", "t-1", "t-2"], "2.0.0", 2, "suite versions differ"),
        (["u-0", "u-1", "u-2"], "1.0.0", 2, "0 paired task(s)"),
        (["t-0", "u-1", "u-2"], "1.0.0", 0, "1 paired task(s)"),  # compared, too few: no test
    ],
    ids=["other-version", "no-task-in-common", "one-task-in-common"],
)
def test_a_suite_that_compared_no_task_is_exit_2(
    run: Any,
    tmp_path: Path,
    cand_ids: list[str],
    cand_version: str,
    code: int,
    reason: str,
) -> None:
    """E-65 / §5: a suite whose pair shares no task, or whose suite versions differ, is
    `inconclusive` with nothing compared: exit 2, not a passing gate. A pair that shares one
    task compared something and stays inconclusive with the default exit 0."""
    base = write_task_table(tmp_path / "base" / "tasks.parquet", task_rows([1, 1, 0], run="b"))
    cand = write_task_table(
        tmp_path / "cand" / "tasks.parquet",
        task_rows([1, 0, 0], ids=cand_ids, version=cand_version, run="c"),
    )
    got, out, err = run(base, cand, "--json")
    assert got == code, err
    comparison = json.loads(out)["comparisons"][0]
    assert comparison["regression"]["verdict"] == "inconclusive"
    assert reason in comparison["reason"]
    assert ("nothing was compared" in err) == (code == 2)
