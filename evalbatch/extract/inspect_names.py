"""What an Inspect log calls its run and its trials, read off the vendor events `ingest` ends
the log's events with (E-146; sql/typed/inspect_events.sql): the task, model and log file of a
run, and the sample id and epoch of each trial; and which trials' samples errored (E-147).

The names are not grades: nothing but `errored` changes a score, and that only ever fails a
trial (`with_errored`). A run from any other log has none of these events, and every name is
null for it, `errored` false.
"""

from __future__ import annotations

import polars as pl

#: the runs table's columns of a run's names
RUN_NAMES = ("model", "task_name", "log_file")
#: the trials table's columns of a trial's names
TRIAL_NAMES = ("sample_id", "epoch")
#: the runs table's count of the errored samples left out at ingest (E-147)
LEFT_OUT = "errored_left_out"
#: how a trial's names find it: the taskId and trialIndex of its eval.scored
_TRIAL_KEY = ("run_id", "task_id", "trial_index")


def run_names(events: pl.DataFrame) -> pl.DataFrame:
    """One row per run with names (run_id and `RUN_NAMES`): its first evalbatch.inspect.eval by
    sequence."""
    return (
        events.filter(pl.col("type") == "evalbatch.inspect.eval")
        .sort("run_id", "sequence")
        .unique("run_id", keep="first", maintain_order=True)
        .select("run_id", *RUN_NAMES, LEFT_OUT)
    )


def trial_names(events: pl.DataFrame) -> pl.DataFrame:
    """One row per (run, taskId, trialIndex) named (`TRIAL_NAMES` and `errored`): the first
    evalbatch.inspect.sample by sequence that names it."""
    return (
        events.filter(pl.col("type") == "evalbatch.inspect.sample")
        .drop_nulls(list(_TRIAL_KEY))
        .sort("run_id", "sequence")
        .unique(list(_TRIAL_KEY), keep="first", maintain_order=True)
        .select(*_TRIAL_KEY, *TRIAL_NAMES, "errored")
    )


def with_trial_names(trials: pl.DataFrame, names: pl.DataFrame) -> pl.DataFrame:
    """`trials` (one row per eval.scored, with run_id, task_id, trial_index) with each trial's
    sample id and epoch, null where no event names its taskId and trialIndex."""
    named = names.select(*_TRIAL_KEY, *TRIAL_NAMES)
    return trials.join(named, on=list(_TRIAL_KEY), how="left", maintain_order="left")


def with_errored(trials: pl.DataFrame, names: pl.DataFrame) -> pl.DataFrame:
    """`trials` with `errored`: whether the mapping marked the trial's sample as one that errored
    in Inspect (E-147); false for every other trial. It is read only to fail a trial, never to
    pass one, so a log that claims it gains nothing."""
    if "errored" not in names.columns:  # an extraction without the vendor events' relation
        return trials.with_columns(pl.lit(False).alias("errored"))
    marked = names.filter("errored").select(*_TRIAL_KEY, "errored")
    return trials.join(marked, on=list(_TRIAL_KEY), how="left", maintain_order="left").with_columns(
        pl.col("errored").fill_null(False)
    )


def task_sample_ids(trials: pl.DataFrame) -> pl.DataFrame:
    """Per (run, task) of `trials` (with `TRIAL_NAMES`): the sample id its first named trial
    has (one sample is one task: they all have the same)."""
    return (
        trials.filter(pl.col("sample_id").is_not_null())
        .sort("run_id", "task_id", "scored_seq")
        .unique(["run_id", "task_id"], keep="first", maintain_order=True)
        .select("run_id", "task_id", "sample_id")
    )
