"""What an Inspect sample said, for `explain --sample-text` (E-150): the answer, the target, the
scorer's explanation and the error of each explained trial's sample, read from the run's log
when asked.

The mapping keeps none of them (E-111, "what is lost"), and RFC 0244 §H keeps them out of every
artefact: an explanation is for the team's own eyes, so it may show them, and only when asked.
Nothing here is written anywhere. The log is found among the events (E-144: the log itself was
given) or where `--inspect-log` says; it must be the run's (its eval id is the run id), and it is
read by Inspect's own reader after the checks an ingest makes (E-115, E-116), only the samples
of the trials explained. Each text is cut to `TEXT_CHARS` characters.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalbatch.errors import InputError, os_reason
from evalbatch.explain.explanation import Cut, Explanation, SampleText, TrialExplanation
from evalbatch.inputs import event_files, inspect_cache
from evalbatch.inputs.inspect_logs import (
    OtherEval,
    SomeSamples,
    UnknownVersion,
    read_some_samples,
    scorer_used,
)
from evalbatch.inputs.limits import DEFAULT_LIMITS, InputLimits, TooDeep, TooLarge
from evalbatch.inputs.path_forms import Paths, as_paths

if TYPE_CHECKING:
    from inspect_ai.log import EvalSample

#: the characters of each text shown (answer, target, explanation, error); the rest is cut
TEXT_CHARS = 500


class NoSampleText(InputError):
    """The sample text asked for cannot be read: the run is not from an Inspect log, its log is
    not among the events and no `--inspect-log` names it, the log named is another run's, or the
    log cannot be read."""


def _cut(text: str) -> Cut:
    return Cut(text[:TEXT_CHARS], len(text))


def _target(target: str | list[str]) -> str:
    """A sample's target as text: as it is, or a list of targets as a JSON array."""
    return target if isinstance(target, str) else json.dumps(target, ensure_ascii=False)


def text_of(sample: EvalSample, scorer: str | None) -> SampleText:
    """What `sample` said, its answer and explanation those of `scorer`'s score."""
    score = (sample.scores or {}).get(scorer) if scorer is not None else None
    answer, answer_from = None, None
    if score is not None and score.answer is not None:
        answer, answer_from = score.answer, "score"
    elif sample.output is not None:
        answer, answer_from = sample.output.completion, "output"
    explanation = score.explanation if score is not None else None
    return SampleText(
        scorer=scorer,
        answer=_cut(answer) if answer is not None else None,
        answer_from=answer_from,
        target=_cut(_target(sample.target)),
        explanation=_cut(explanation) if explanation is not None else None,
        error=_cut(sample.error.message) if sample.error is not None else None,
    )


def _log_files(expl: Explanation, events: Paths, inspect_log: str | Path | None) -> list[str]:
    """The files that may be the run's log: `inspect_log` (a file, or those below a directory
    named as the run's log file), else the Inspect logs among `events` of that name."""
    run_id, log_file = expl.run_id, expl.names.get("log_file")
    if inspect_log is not None:
        given = Path(inspect_log)
        if given.is_file():
            return [str(given)]
        if not given.is_dir():
            raise NoSampleText(f"--inspect-log {given}: no such file or directory")
        found = sorted(str(p) for p in given.rglob("*") if p.name == log_file and p.is_file())
        if not found:
            named = f"no file named {log_file}" if log_file else "the log's name is not known"
            raise NoSampleText(
                f"--inspect-log {given}: {named} below it (the log of run {run_id}): give the "
                "log itself"
            )
        return found
    found = [
        path
        for path in event_files.expand_paths(as_paths(events))
        if Path(path).name == log_file
        and not path.endswith(".parquet")
        and inspect_cache.is_inspect_log(path)
    ]
    if not found:
        named = log_file or "its file name is not known"
        raise NoSampleText(
            f"--sample-text: the Inspect log of run {run_id} ({named}) is not among the events: "
            "give it with --inspect-log PATH (the log, or a directory holding it)"
        )
    return found


def _read(
    files: list[str],
    run_id: str,
    wanted: frozenset[tuple[str, int]],
    given: bool,
    limits: InputLimits,
) -> tuple[str, SomeSamples]:
    """The first of `files` that is the run's log, and its `wanted` samples; `given`: the files
    are `--inspect-log`'s."""
    try:
        import inspect_ai.log  # noqa: F401  (Inspect's log reader: the extra evalbatch[inspect])
    except ImportError:
        raise NoSampleText(
            "--sample-text: the sample text is read with Inspect's log reader: install "
            "evalbatch[inspect]"
        ) from None
    for path in files:
        try:
            return path, read_some_samples(path, run_id, wanted, limits)
        except OtherEval:
            continue
        except (TooLarge, TooDeep, UnknownVersion) as exc:
            raise NoSampleText(
                f"--sample-text: the Inspect log {path} is not read: {exc}"
            ) from None
        except OSError as exc:
            raise NoSampleText(
                f"--sample-text: the Inspect log {path} cannot be read ({os_reason(exc)})"
            ) from None
        except Exception as exc:  # whatever Inspect's reader meets in a damaged log
            raise NoSampleText(
                f"--sample-text: {path} is not a readable Inspect log ({type(exc).__name__})"
            ) from None
    named = files[0] if len(files) == 1 else f"{files[0]} (and {len(files) - 1} more of its name)"
    fix = "" if given else "; give the run's log with --inspect-log"
    raise NoSampleText(
        f"{'--inspect-log' if given else '--sample-text:'} {named} is not the log of run "
        f"{run_id}: its eval id is another{fix}"
    )


def with_sample_text(
    expl: Explanation,
    events: Paths,
    inspect_log: str | Path | None = None,
    scorer: str | None = None,
    limits: InputLimits = DEFAULT_LIMITS,
) -> Explanation:
    """`expl` with each trial of an Inspect sample given what the sample said (E-150), read from
    the run's log: `inspect_log` (the log, or a directory holding it under its file name), else
    the log among `events`. `scorer` names the scorer whose answer and explanation are shown
    (`NAME` or `NAME/KEY`, as `ingest --inspect-scorer` takes it), by default the log's first.
    The log is read within `limits` (the default caps, as a log among the events is converted,
    E-144): a sample past one is not read, and says so.

    Raises:
        NoSampleText: the run is not from an Inspect log, its log is not found or is another
            run's, the log or a member other than a sample is past a cap, `scorer` is none of
            the log's, or the log cannot be read.
    """
    if not expl.names:
        raise NoSampleText(
            f"--sample-text: run {expl.run_id} is not from an Inspect log, so its trials have "
            "no sample (a log ingested before E-146 has its names once ingested again)"
        )
    trials = [t for task in expl.tasks for t in task.trials]
    wanted = frozenset(
        (t.sample_id, t.epoch) for t in trials if t.sample_id is not None and t.epoch is not None
    )
    if not wanted:
        return expl
    files = _log_files(expl, events, inspect_log)
    path, read = _read(files, expl.run_id, wanted, inspect_log is not None, limits)
    name, _ = scorer_used(read.log, scorer)
    known = [s.name for s in read.log.eval.scorers or []]
    if scorer is not None and name not in known:
        raise NoSampleText(
            f"--inspect-scorer {name}: the log of run {expl.run_id} has no such scorer "
            f"(its scorers: {', '.join(known) or 'none'})"
        )

    def given(trial: TrialExplanation) -> TrialExplanation:
        if trial.sample_id is None or trial.epoch is None:
            return trial
        key = (trial.sample_id, trial.epoch)
        if key in read.samples:
            text = text_of(read.samples[key], name)
        elif key in read.refused:
            text = SampleText(name, unread=f"not read: its archive member {read.refused[key]}")
        else:
            text = SampleText(name, unread="not read: the log holds no such sample and epoch")
        return replace(trial, sample_text=text)

    tasks = [replace(task, trials=[given(t) for t in task.trials]) for task in expl.tasks]
    return replace(expl, tasks=tasks, sample_log=path)
