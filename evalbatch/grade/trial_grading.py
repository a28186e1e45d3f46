"""The grading stage at trial level: one row per eval.scored in, one graded trial out (§2.1, §3).

Which trials count (D-5), the trajectory block and match (§3.1-§3.2, D-18), fixture misses and
fail-closed trials (§3.3, D-9), trial score, pass and gating score (§3.4, D-10, D-11) — all as
Polars expressions over the per-trial table. Task and suite reductions live in
`evalbatch.reduce.task_reductions`.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from evalbatch.extract import inspect_names
from evalbatch.extract.trial_tables import Extraction
from evalbatch.grade import match
from evalbatch.grade.suite_tables import SuiteTables
from evalbatch.options import GradeOptions, OnMissDefault


def place_trials(segments: pl.DataFrame, plan: pl.DataFrame, tables: SuiteTables) -> pl.DataFrame:
    """Give every eval.scored its trial index and decide whether it counts (D-5, E-8, D-13).

    `plan` has one row per graded run: run_id, suite_key (null without a suite), trial_cap (the
    suite's trials.count, or a no-suite run's trialCount; null means no cap).
    """
    trials = (
        segments.join(plan, on="run_id", how="inner")
        .sort("run_id", "scored_seq")
        .with_columns(
            pl.int_range(pl.len()).over("run_id", "task_id").cast(pl.Int64).alias("position"),
        )
        .with_columns(
            pl.when(pl.col("trial_index").is_not_null())
            .then(pl.col("trial_index"))
            .otherwise(pl.col("position"))
            .alias("trial_index"),
            (pl.col("trial_index_present") & pl.col("trial_index").is_null()).alias(
                "trial_index_invalid"
            ),
        )
        .join(tables.tasks, on=["suite_key", "task_id"], how="left")
        .with_columns(
            pl.when(pl.col("suite_key").is_null())
            .then(pl.col("task_id").is_not_null())
            .otherwise(pl.col("task_pos").is_not_null())
            .alias("known_task"),
            pl.col("kind").fill_null("golden"),
            pl.col("has_trajectory").fill_null(False),
            pl.col("has_fixtures").fill_null(False),
            pl.col("include_delegates").fill_null(False),
            pl.col("expected_count").fill_null(0),
        )
        .with_columns(
            pl.when(~pl.col("known_task"))
            .then(pl.lit("task-unknown"))
            .when(
                pl.col("trial_cap").is_not_null() & (pl.col("trial_index") >= pl.col("trial_cap"))
            )
            .then(pl.lit("trial-extra"))
            .alias("left_out")
        )
        .with_columns(
            # not the first counted trial of its (run, task, trial index) in sequence order
            pl.when(
                pl.col("left_out").is_null()
                & ~pl.struct("run_id", "task_id", "trial_index", "left_out").is_first_distinct()
            )
            .then(pl.lit("trial-duplicate"))
            .otherwise(pl.col("left_out"))
            .alias("left_out")
        )
        .drop("position")
    )
    return trials.with_columns(
        pl.col("left_out").is_null().alias("counted"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("trial_key"),
    )


def with_delegate_faults(trials: pl.DataFrame, ext: Extraction) -> pl.DataFrame:
    """`delegates_unseen`: whether a trial includes delegates and a child run its bracket names
    cannot be read (E-102: missing, not whole, on its own path, or of another suite)."""
    faults = ext.delegates.faults
    if faults.is_empty():
        return trials.with_columns(delegates_unseen=pl.lit(False))
    faulted = faults.select("run_id", "segment_no").unique().with_columns(fault=pl.lit(True))
    return (
        trials.join(faulted, on=["run_id", "segment_no"], how="left", maintain_order="left")
        .with_columns(
            delegates_unseen=pl.col("include_delegates") & pl.col("fault").fill_null(False)
        )
        .drop("fault")
    )


def keyed_calls(
    trials: pl.DataFrame, calls: pl.DataFrame, delegate_calls: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The calls (`Extraction.trial_calls`) of every counted trial, with its `trial_key`: the one
    join on run ids; the trajectory and the fixture replay then select trials by integer key.

    With `delegate_calls` (`DelegateFrames.calls`, E-102), the counted trials whose task
    includes delegates also get their child runs' calls (`delegated`, each with the run it came
    from), and every call its `call_order` in the widened trajectory; without any, the frame is
    exactly the trials' own calls."""
    counted = trials.filter("counted").select("run_id", "segment_no", "trial_key")
    own = calls.join(counted, on=["run_id", "segment_no"], how="inner")
    if delegate_calls is None or delegate_calls.is_empty():
        return own
    widened = trials.filter(pl.col("counted") & pl.col("include_delegates")).select(
        "run_id", "segment_no", "trial_key"
    )
    theirs = delegate_calls.join(widened, on=["run_id", "segment_no"], how="inner").with_columns(
        by_target=pl.lit(False), delegated=pl.lit(True)
    )
    own = own.with_columns(
        call_order=pl.concat_list("sequence"),
        from_run_id=pl.lit(None, pl.String),
        delegated=pl.lit(False),
    )
    return pl.concat([own, theirs], how="diagonal_relaxed")


def _own(calls: pl.DataFrame) -> pl.DataFrame:
    """The calls of the trials' own brackets: the fixture replay walks only these (§3.3; a
    child run is not the trial's fixtured invocation, E-102)."""
    return calls.filter(~pl.col("delegated")) if "delegated" in calls.columns else calls


def _place_in_trial() -> pl.Expr:
    """Each row's place among its trial's rows, on rows sorted by `trial_key`: the row number
    less that of the trial's first row (no window: the rows of a trial are adjacent)."""
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    first = pl.col("trial_key") != pl.col("trial_key").shift(1, fill_value=-1)
    return row - pl.when(first).then(row).forward_fill()


def _observed(
    trials: pl.DataFrame, calls: pl.DataFrame, extra: tuple[str, ...] = ()
) -> pl.DataFrame:
    """The observed trajectory of each counted trial with an expectation (§2.2); `calls` are
    `keyed_calls`; `extra` names more of their columns to keep (for `explain`)."""
    wanted = trials.filter(pl.col("counted") & pl.col("has_trajectory")).select(
        "trial_key", "include_delegates"
    )
    # a trial's own calls are in call_pos order; with delegates, every call has its call_order
    order = "call_order" if "call_order" in calls.columns else "call_pos"
    return (
        calls.join(wanted, on="trial_key", how="inner")
        .filter(pl.col("by_target") | pl.col("include_delegates"))
        .sort("trial_key", order)
        .with_columns(_place_in_trial().alias("o_idx"))
        .select("trial_key", "o_idx", "tool_name", "inputs", "exact_payload", *extra)
    )


def _candidate_pairs(expected: pl.DataFrame, observed: pl.DataFrame) -> pl.DataFrame:
    """Every (expected, observed) call pair of one trial and one tool, with `ok`: whether the
    arguments match (§3.1). The pairs carry integer ids, never the JSON texts (`match.Arguments`).

    `expected` holds trial_key, pos, tool, args_mode, args; `observed` trial_key, o_idx,
    tool_name, inputs, exact_payload. Returns (trial_key, pos, o_idx, args_id, input_id, ok).
    """
    expected, observed, arguments = match.Arguments.number(expected, observed)
    pairs = expected.select("trial_key", "pos", "tool", "args_id").join(
        observed.select("trial_key", "o_idx", "tool_name", "input_id"),
        left_on=["trial_key", "tool"],
        right_on=["trial_key", "tool_name"],
        how="inner",
    )
    return match.with_args_match(pairs.drop("tool"), arguments)


@dataclass(frozen=True)
class _TrajectoryPairs:
    """What grading a trajectory compares, built once for the grade and for `explain`."""

    graded: pl.DataFrame  # trial_key, suite_key, task_id, mode, expected_count, has_bracket
    observed: pl.DataFrame  # trial_key, o_idx, tool_name, inputs, exact_payload, *extra
    expected: pl.DataFrame  # trial_key, suite_key, task_id, pos, tool, args_mode, args, ...
    pairs: pl.DataFrame  # every (expected, observed) pair of one tool: e_pos, o_idx, ids, `ok`
    forbidden: pl.DataFrame  # trial_key, o_idx of each call to a forbidden tool


def _trajectory_pairs(
    trials: pl.DataFrame, calls: pl.DataFrame, tables: SuiteTables, extra: tuple[str, ...] = ()
) -> _TrajectoryPairs:
    graded = trials.filter(pl.col("counted") & pl.col("has_trajectory")).select(
        "trial_key",
        "suite_key",
        "task_id",
        "mode",
        "expected_count",
        "has_bracket",
        "delegates_unseen",
    )
    observed = _observed(trials, calls, extra)
    expected = graded.select("trial_key", "suite_key", "task_id").join(
        tables.expected, on=["suite_key", "task_id"], how="inner"
    )
    pairs = _candidate_pairs(expected, observed).rename({"pos": "e_pos"})
    forbidden = (
        observed.join(graded.select("trial_key", "suite_key", "task_id"), on="trial_key")
        .join(
            tables.forbidden,
            left_on=["suite_key", "task_id", "tool_name"],
            right_on=["suite_key", "task_id", "tool"],
            how="semi",
        )
        .select("trial_key", "o_idx")
        .sort("trial_key", "o_idx")
    )
    return _TrajectoryPairs(graded, observed, expected, pairs, forbidden)


def _trajectory_block(built: _TrajectoryPairs) -> pl.DataFrame:
    """The counts of the §3.2 block for every graded trial, and `mode_ok`: whether the observed
    trajectory passes its match mode (before `forbidden` and the bracket are looked at)."""
    graded, observed, pairs = built.graded, built.observed, built.pairs
    forbidden = built.forbidden.group_by("trial_key").agg(
        pl.len().cast(pl.Int64).alias("forbidden_count")
    )
    observed_count = observed.group_by("trial_key").agg(
        pl.len().cast(pl.Int64).alias("observed_count")
    )
    covered = (
        pairs.filter("ok").group_by("trial_key").agg(pl.col("o_idx").n_unique().alias("covered"))
    )
    diagonal = (
        pairs.filter(pl.col("ok") & (pl.col("e_pos") == pl.col("o_idx")))
        .group_by("trial_key")
        .agg(pl.col("e_pos").n_unique().alias("diagonal"))
    )
    in_order = match.in_order_found(graded.filter(pl.col("mode") == "in-order"), pairs)
    block = (
        graded.join(observed_count, on="trial_key", how="left")
        .join(forbidden, on="trial_key", how="left")
        .join(match.maximum_matching(pairs), on="trial_key", how="left")
        .join(covered, on="trial_key", how="left")
        .join(diagonal, on="trial_key", how="left")
        .join(in_order, on="trial_key", how="left")
        .with_columns(
            pl.col("observed_count", "forbidden_count", "matched_count").fill_null(0),
            pl.col("covered", "diagonal").fill_null(0),
        )
    )
    mode_ok = (
        pl.when(pl.col("mode") == "exact")
        .then(
            (pl.col("observed_count") == pl.col("expected_count"))
            & (pl.col("diagonal") == pl.col("expected_count"))
        )
        .when(pl.col("mode") == "in-order")
        .then(pl.col("in_order").fill_null(False))
        .when(pl.col("mode") == "any-order")
        .then(pl.col("matched_count") == pl.col("expected_count"))
        .otherwise(pl.col("covered") == pl.col("observed_count"))  # subset
    )
    return block.with_columns(mode_ok.alias("mode_ok"))


@dataclass(frozen=True, eq=False)
class TrajectoryCheck:
    """One check of a trial's trajectory (§3.2, D-18), as `TRAJECTORY_CHECKS` orders them.

    reason: the content-free code the trials table's `trajectory_reason` holds when this is the
        first check that fails (two checks may share a code);
    rule: the rule that decides it (what `verify` cites);
    fails: over a trajectory block's columns (`_trajectory_block`): true when the check fails;
    last: a failure here is the last one reported (`explain` lists the failures up to it).
    """

    reason: str
    rule: str
    fails: pl.Expr
    last: bool


_MODE_FAILS = ~pl.col("mode_ok")

#: why a trajectory is unmatched, in the order a reason is named: the trials table's
#: `trajectory_reason` is the first check that fails; `explain` shows every failed check up to
#: the first `last` one, and `verify` cites each reason's rule
TRAJECTORY_CHECKS: tuple[TrajectoryCheck, ...] = (
    # no bracket, no path: nothing else can be shown (D-18)
    TrajectoryCheck("no-bracket", "D-18", ~pl.col("has_bracket"), last=True),
    # a child run the path went through cannot be read: no evidence, no pass (E-102)
    TrajectoryCheck("delegates-unseen", "E-102", pl.col("delegates_unseen"), last=True),
    TrajectoryCheck("forbidden", "§3.2", pl.col("forbidden_count") > 0, last=False),
    # subset fails only on an observed call no expected call allows (§3.2)
    TrajectoryCheck("extra", "§3.2", _MODE_FAILS & (pl.col("mode") == "subset"), last=True),
    TrajectoryCheck(
        "missing",
        "§3.2",
        _MODE_FAILS & (pl.col("matched_count") < pl.col("expected_count")),
        last=True,
    ),
    TrajectoryCheck(
        "extra",
        "§3.2",
        _MODE_FAILS
        & (pl.col("mode") == "exact")
        & (pl.col("observed_count") != pl.col("expected_count")),
        last=True,
    ),
    TrajectoryCheck("order", "§3.2", _MODE_FAILS, last=True),
)


def trajectory_reason() -> pl.Expr:
    """The first check of `TRAJECTORY_CHECKS` that fails (null: the trajectory matched)."""
    return pl.coalesce(
        pl.when(check.fails).then(pl.lit(check.reason)) for check in TRAJECTORY_CHECKS
    ).alias("trajectory_reason")


def trajectory_rule(reason: str | None) -> str:
    """The rule behind a `trajectory_reason` code; §3.2, the trajectory's own, when it is null."""
    return next((check.rule for check in TRAJECTORY_CHECKS if check.reason == reason), "§3.2")


def grade_trajectories(
    trials: pl.DataFrame, calls: pl.DataFrame, tables: SuiteTables
) -> pl.DataFrame:
    """The §3.2 block for every counted trial whose task has a trajectory expectation (`calls`:
    `keyed_calls`)."""
    block = _trajectory_block(_trajectory_pairs(trials, calls, tables))
    return block.select(
        "trial_key",
        (
            pl.col("mode_ok")
            & (pl.col("forbidden_count") == 0)
            & pl.col("has_bracket")
            & ~pl.col("delegates_unseen")
        ).alias("matched"),
        "observed_count",
        "matched_count",
        "forbidden_count",
        trajectory_reason(),  # why a trajectory failed, for the trials table
    )


def _fixture_pairs(
    trials: pl.DataFrame, calls: pl.DataFrame, tables: SuiteTables
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """For each fixtured trial (§3.3: task has toolResponses, run is not live-shadow): the
    trials, their calls (of `keyed_calls`, with sequence), their fixture entries, and every
    (entry, call) pair of one tool with whether the arguments match."""
    fixtured = trials.filter(
        pl.col("counted") & pl.col("has_fixtures") & ~pl.col("live_shadow")
    ).select("trial_key", "suite_key", "task_id")
    trial_calls = (
        _own(calls)
        .join(fixtured.select("trial_key"), on="trial_key", how="inner")
        .select(
            "trial_key",
            pl.col("call_pos").cast(pl.Int64).alias("o_idx"),
            "tool_name",
            "inputs",
            "exact_payload",
            "sequence",
        )
    )
    entries = fixtured.select("trial_key", "suite_key", "task_id").join(
        tables.fixtures, on=["suite_key", "task_id"], how="inner"
    )
    pairs = _candidate_pairs(entries, trial_calls).rename({"pos": "f_pos"})
    return fixtured, trial_calls, entries, pairs


def count_fixture_misses(
    trials: pl.DataFrame, calls: pl.DataFrame, tables: SuiteTables
) -> pl.DataFrame:
    """Misses per fixtured trial (§3.3; `calls`: `keyed_calls`)."""
    fixtured, trial_calls, _, pairs = _fixture_pairs(trials, calls, tables)
    misses = match.replay_fixtures(trial_calls.select("trial_key", "o_idx"), pairs)
    return (
        fixtured.select("trial_key")
        .join(misses, on="trial_key", how="left")
        .with_columns(pl.col("misses").fill_null(0))
    )


#: the reason code and rule of a trial that failed closed: a fixture miss under onMiss `fail`
FIXTURE_MISS_REASON, FIXTURE_MISS_RULE = "fixture-miss", "D-9"


def on_miss_applied(declared: str | None, options: GradeOptions) -> str:
    """What a task's `fixtures.onMiss` means (D-9): as declared (`fail` or `live`); absent, as
    `options` reads it (`count` by default: misses are only counted, as RFC 0081 did)."""
    return declared if declared is not None else options.on_miss_default


def fails_on_miss(options: GradeOptions) -> pl.Expr:
    """Whether a trial's onMiss, read as `on_miss_applied` reads it, is `fail` (D-9): true or
    false, never null (the trials table's `failed_closed` is false for a miss only counted)."""
    return (
        (pl.col("on_miss") == "fail")
        | (pl.col("on_miss").is_null() & pl.lit(options.on_miss_default == "fail"))
    ).fill_null(False)


def absent_on_miss_decides() -> pl.Expr:
    """The trials whose failing closed turns on how an absent onMiss is read (D-9): counted,
    fixtured (§3.3), with a miss, and no onMiss declared."""
    return (
        pl.col("counted")
        & pl.col("has_fixtures")
        & pl.col("on_miss").is_null()
        & pl.col("has_miss").fill_null(False)
        & ~pl.col("live_shadow").fill_null(False)
    )


def other_on_miss_reading(options: GradeOptions) -> GradeOptions:
    """`options` with an absent onMiss read the other way (D-9: `count` and `fail` are both
    readings of the RFC; `verify` accepts either, CONTRACT §8)."""
    flipped: OnMissDefault = "count" if options.on_miss_default == "fail" else "fail"
    return GradeOptions(options.default_pass_score, flipped)


def grade_trials(
    ext: Extraction, plan: pl.DataFrame, tables: SuiteTables, options: GradeOptions
) -> pl.DataFrame:
    """Every eval.scored of the graded runs, placed (D-5) and, when counted, graded (§3.4)."""
    trials = with_delegate_faults(place_trials(ext.trial_segments, plan, tables), ext)
    trials = inspect_names.with_errored(trials, ext.trial_names)
    calls = keyed_calls(trials, ext.trial_calls, ext.delegates.calls)
    trajectories = grade_trajectories(trials, calls, tables)
    misses = count_fixture_misses(trials, calls, tables)
    trials = (
        trials.join(trajectories, on="trial_key", how="left")
        .join(misses, on="trial_key", how="left")
        .join(ext.trial_usage, on=["run_id", "segment_no"], how="left")
        .with_columns(
            pl.col("matched").fill_null(True),
            (pl.col("misses").fill_null(0) > 0).alias("has_miss"),
        )
        .with_columns((pl.col("has_miss") & fails_on_miss(options)).alias("failed_closed"))
    )
    host_kind = pl.col("kind") != "trajectory"
    score = (
        pl.when(~host_kind)
        .then(pl.col("matched").cast(pl.Float64))
        .otherwise(pl.col("host_score").fill_null(0.0))
    )
    passed = (
        pl.when(~host_kind)
        .then(pl.col("matched"))
        .otherwise(
            pl.col("host_passed").fill_null(False)
            & pl.col("host_score").is_not_null()
            & pl.col("matched")
        )
    )
    # a fixture miss that fails closed (D-9), or a sample that errored (E-147), fails the trial
    # whatever its path or the host's record
    failed = pl.col("failed_closed") | pl.col("errored")
    trials = trials.with_columns(
        pl.when(failed).then(0.0).otherwise(score).alias("score"),
        pl.when(failed).then(False).otherwise(passed).alias("passed"),
        # an errored sample has no score by nature: named `sample-errored`, not D-11's codes
        (host_kind & pl.col("host_score").is_null() & ~pl.col("errored")).alias("score_invalid"),
        (host_kind & pl.col("host_passed").is_null() & ~pl.col("errored")).alias("passed_invalid"),
    ).with_columns(
        pl.when(failed | (pl.col("has_trajectory") & ~pl.col("matched")))
        .then(0.0)
        .otherwise(pl.col("score"))
        .alias("gating_score"),
        pl.when(pl.col("host_latency_ms").is_not_null())
        .then(pl.col("host_latency_ms"))
        .when(pl.col("bracket_span_ms") >= 0)
        .then(pl.col("bracket_span_ms"))
        .alias("latency_ms"),
    )
    return trials


# --------------------------------------------------------------------------------------------
# Per-call detail for `evalbatch explain`: the tables `grade_trajectories` and
# `count_fixture_misses` reduce to counts, kept call by call. Built from the same joins and the
# same `match` functions, so an explanation agrees with the grade.


@dataclass(frozen=True)
class TrajectoryDetail:
    """The §3.2 grading of every counted trial with a trajectory expectation, call by call.

    observed: trial_key, o_idx, tool_name, inputs, exact_payload, call_pos, sequence (the
        observed trajectory, §2.2; with child runs' calls also from_run_id and agent_id, and
        call_pos null for those, E-102); expected: trial_key, e_pos, tool, args_mode, args;
    pairs: trial_key, e_pos, o_idx, ok (every same-tool pair, `ok` when the arguments match);
    matching: trial_key, e_pos, o_idx (the maximum one-to-one matching: `matched_count` rows);
    in_order: trial_key, e_pos, o_idx (the in-order walk; null o_idx: no call after the last);
    forbidden: trial_key, o_idx (observed calls to a forbidden tool);
    failures: trial_key, check, reason (the checks of `TRAJECTORY_CHECKS` that fail, by their
        place in it, up to the first `last` one: the first is the trial's `trajectory_reason`).
    """

    observed: pl.DataFrame
    expected: pl.DataFrame
    pairs: pl.DataFrame
    matching: pl.DataFrame
    in_order: pl.DataFrame
    forbidden: pl.DataFrame
    failures: pl.DataFrame


def _reported_failures(block: pl.DataFrame) -> pl.DataFrame:
    """Per trial, the checks of `TRAJECTORY_CHECKS` that fail, in order, up to the first that
    is `last`."""
    failed = pl.concat(
        [
            block.filter(check.fails).select(
                "trial_key",
                pl.lit(number, pl.Int64).alias("check"),
                pl.lit(check.reason).alias("reason"),
                pl.lit(check.last).alias("last"),
            )
            for number, check in enumerate(TRAJECTORY_CHECKS)
        ]
    )
    stop = failed.filter("last").group_by("trial_key").agg(pl.col("check").min().alias("stop"))
    return (
        failed.join(stop, on="trial_key", how="left")
        .filter(pl.col("stop").is_null() | (pl.col("check") <= pl.col("stop")))
        .select("trial_key", "check", "reason")
        .sort("trial_key", "check")
    )


def trajectory_detail(
    trials: pl.DataFrame,
    calls: pl.DataFrame,
    tables: SuiteTables,
    delegate_calls: pl.DataFrame | None = None,
) -> TrajectoryDetail:
    """What `grade_trajectories` counts, kept per call (for `explain`); a child run's call
    (E-102) also says which run it came from and its agent."""
    keyed = keyed_calls(trials, calls, delegate_calls)
    extra: tuple[str, ...] = ("call_pos", "sequence")
    if "from_run_id" in keyed.columns:
        extra += ("from_run_id", "agent_id")
    built = _trajectory_pairs(trials, keyed, tables, extra=extra)
    graded, observed, expected, pairs = built.graded, built.observed, built.expected, built.pairs
    forbidden = built.forbidden
    return TrajectoryDetail(
        observed=observed,
        expected=expected.select(
            "trial_key", pl.col("pos").alias("e_pos"), "tool", "args_mode", "args"
        ).sort("trial_key", "e_pos"),
        pairs=pairs.select("trial_key", "e_pos", "o_idx", "ok").sort("trial_key", "e_pos", "o_idx"),
        matching=match.matching_pairs(pairs),
        in_order=match.in_order_pairs(graded.filter(pl.col("mode") == "in-order"), pairs),
        forbidden=forbidden,
        failures=_reported_failures(_trajectory_block(built)),
    )


@dataclass(frozen=True)
class FixtureDetail:
    """The §3.3 replay of every fixtured trial, call by call.

    calls: trial_key, o_idx, sequence, tool_name, inputs, exact_payload (every call in the
    bracket, all agents); entries: trial_key, f_pos, tool, args_mode, args; pairs: trial_key,
    f_pos, o_idx, ok; served: trial_key, f_pos, o_idx (a call without a row is a miss).
    """

    calls: pl.DataFrame
    entries: pl.DataFrame
    pairs: pl.DataFrame
    served: pl.DataFrame


def fixture_detail(trials: pl.DataFrame, calls: pl.DataFrame, tables: SuiteTables) -> FixtureDetail:
    """What `count_fixture_misses` counts, kept per call (for `explain`)."""
    _, trial_calls, entries, pairs = _fixture_pairs(trials, keyed_calls(trials, calls), tables)
    return FixtureDetail(
        calls=trial_calls.sort("trial_key", "o_idx"),
        entries=entries.select(
            "trial_key", pl.col("pos").alias("f_pos"), "tool", "args_mode", "args"
        ).sort("trial_key", "f_pos"),
        pairs=pairs.select("trial_key", "f_pos", "o_idx", "ok").sort("trial_key", "f_pos", "o_idx"),
        served=match.fixture_assignment(pairs),
    )
