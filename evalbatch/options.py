"""Options that change how runs are graded, and the resources a command may use: shared by the
engine, the reference, the library surface and the CLI, and passed explicitly.

Every range and choice an option allows is declared here once (E-130): the option objects check
their fields against it when they are made, and the CLI builds its parameter types from it, so a
library user gets the CLI's protection and the two cannot drift. Nothing here reads the
environment: `EVALBATCH_EXTRACTOR` is read where a command starts."""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from evalbatch.errors import OptionError

if TYPE_CHECKING:
    import duckdb


@dataclass(frozen=True)
class Bounds:
    """The numbers an option allows: from `low` to `high` (None: unbounded), each end open or
    closed, finite, whole numbers only when `integer`; a bool is never a number (E-130)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False

    def describe(self) -> str:
        """The range as a message names it: `a number in (0, 1)`, `a whole number >= 1`."""
        kind = "a whole number" if self.integer else "a finite number"
        low, high = (_shown(end) for end in (self.low, self.high))
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"{kind} in {left}{low}, {high}{right}"
        if self.low is not None:
            return f"{kind} {'>' if self.low_open else '>='} {low}"
        if self.high is not None:
            return f"{kind} {'<' if self.high_open else '<='} {high}"
        return kind

    def allows(self, value: object) -> bool:
        """Whether `value` is a number of this range (ints and floats, numpy's too; no bool)."""
        kind = numbers.Integral if self.integer else numbers.Real
        if isinstance(value, bool) or not isinstance(value, kind):
            return False
        number = float(value)
        if not math.isfinite(number):
            return False
        if self.low is not None and (number <= self.low if self.low_open else number < self.low):
            return False
        return self.high is None or (number < self.high if self.high_open else number <= self.high)

    def check(self, owner: str, name: str, value: object) -> None:
        """Raise `OptionError` naming the field, the value and the range unless it allows it."""
        if not self.allows(value):
            raise OptionError(f"{owner}.{name} = {value!r}: must be {self.describe()}")


def _shown(end: float | None) -> str:
    """A range's end as a message writes it: 1, 0.5, 1000000."""
    return "" if end is None else str(int(end)) if float(end).is_integer() else str(end)


def check_choice(owner: str, name: str, value: object, choices: Sequence[object]) -> None:
    """Raise `OptionError` naming the field, the value and the choices unless it is one."""
    if isinstance(value, str) and value in choices:
        return
    allowed = ", ".join(repr(choice) for choice in choices)
    raise OptionError(f"{owner}.{name} = {value!r}: must be one of {allowed}")


def check_flag(owner: str, name: str, value: object) -> None:
    """Raise `OptionError` unless `value` is True or False."""
    if not isinstance(value, bool):
        raise OptionError(f"{owner}.{name} = {value!r}: must be True or False")


#: a suite bar: a score (D-15)
PASS_SCORE = Bounds(0, 1)
OnMissDefault = Literal["count", "fail"]
ON_MISS_DEFAULTS: tuple[OnMissDefault, ...] = ("count", "fail")
#: the paired tests `regress` and the regression block may use (§5, D-16)
Method = Literal["paired-bootstrap", "paired-t", "sign-test", "mcnemar"]
METHODS: tuple[Method, ...] = ("paired-bootstrap", "paired-t", "sign-test", "mcnemar")
#: bootstrap resamples: at least §5's 10,000, at most a million (a float per resample is kept,
#: and the draws take time in proportion: past this a gate would hang, not decide better)
MIN_RESAMPLES, MAX_RESAMPLES = 10_000, 1_000_000
RESAMPLES = Bounds(MIN_RESAMPLES, MAX_RESAMPLES, integer=True)
#: the two-sided significance level, and a plan's chance of detecting its effect
ALPHA = POWER = Bounds(0, 1, low_open=True, high_open=True)
#: the equivalence margin in score points: below 1, which would call every change unchanged (E-114)
MARGIN = Bounds(0, 1, high_open=True)
#: the smallest drop in score points a regressed suite must show to fail the gate (E-137)
MIN_DROP = Bounds(0, 1, high_open=True)
#: the change in score points a plan sizes a comparison to detect
EFFECT = Bounds(0, 1, low_open=True)
#: the bootstrap's random seed (numpy's generators take no negative one)
SEED = Bounds(0, integer=True)
#: what a comparison reads: task gating scores (D-19) or meanScore
Score = Literal["gating", "output"]
SCORES: tuple[Score, ...] = ("gating", "output")
#: how the p-values of several suites gated at once are adjusted
Correction = Literal["holm", "bh", "none"]
CORRECTIONS: tuple[Correction, ...] = ("holm", "bh", "none")
#: OpenWOP's model classes: `evaluatedModelClass` and a bracket's `modelClass` (§3.6, E-14);
#: what `ingest --inspect-model-class` may say of an Inspect log's model (E-146)
MODEL_CLASSES: tuple[str, ...] = (
    "reasoning",
    "writing",
    "coding",
    "research",
    "classification",
    "general",
)

#: what a series is kept apart by, besides its suite and task (E-151): `agent-model`, one
#: series per target agent and evaluated model (the default: a series per agent, split by model
#: only where the model varies, since a constant model splits nothing); `agent`, per agent;
#: `suite`, one per suite (every agent and model together, as before E-151)
SeriesBy = Literal["agent-model", "agent", "suite"]
SERIES_BY: tuple[SeriesBy, ...] = ("agent-model", "agent", "suite")
#: what a night is (E-151): `dir`, each output directory given; `day`, each UTC calendar day of
#: the eval's start; `run`, each run (a point per run, as before E-151); `auto`, each directory,
#: or its days where its runs started on more than one UTC day
NightsBy = Literal["auto", "dir", "day", "run"]
NIGHTS_BY: tuple[NightsBy, ...] = ("auto", "dir", "day", "run")

#: what becomes of an Inspect sample that errored (E-147): written and failed, or left out of
#: the run as Inspect leaves it out of its figures
ErroredSamples = Literal["fail", "leave-out"]
ERRORED_CHOICES: tuple[ErroredSamples, ...] = ("fail", "leave-out")


@dataclass(frozen=True)
class GradeOptions:
    """Grading knobs a user can set.

    Attributes:
        default_pass_score: the suite bar when `thresholds.passScore` is absent (D-15).
        on_miss_default: what an absent `fixtures.onMiss` means (D-9): `count` only counts
            misses (the RFC's "unchanged" reading), `fail` fails the trial closed.
    """

    default_pass_score: float = 1.0
    on_miss_default: OnMissDefault = "count"

    def __post_init__(self) -> None:
        PASS_SCORE.check("GradeOptions", "default_pass_score", self.default_pass_score)
        check_choice("GradeOptions", "on_miss_default", self.on_miss_default, ON_MISS_DEFAULTS)


#: a task's pass rule, `trials.passRule` (§3.5): every trial passed, one did, or the mean gating
#: score (D-10) reaches passScore
PassRule = Literal["all", "any", "mean"]
PASS_RULES: tuple[PassRule, ...] = ("all", "any", "mean")
#: the rule of a starting suite made from a log unless one is chosen (E-149): an Inspect user's
#: headline figure is the mean over samples of each sample's mean over epochs, and `mean` reads a
#: task as that figure and the suite's own `passed` (§3.6) read it
STARTING_PASS_RULE: PassRule = "mean"


@dataclass(frozen=True)
class StartingSuiteOptions:
    """What a starting suite made from a log says that the log does not (E-149): `ingest
    --write-suites` makes one per Inspect log, `suite infer` one for runs without a suite given.
    Its `thresholds.passScore` is never chosen here: it is the bar the log was graded with.

    Attributes:
        pass_rule: the suite's `trials.passRule` (§3.5). None: not chosen, so `mean`
            (`STARTING_PASS_RULE`) wherever the suite has a trials block; `suite infer` writes
            none for runs with one trial per task unless a rule is chosen.
    """

    pass_rule: PassRule | None = None

    def __post_init__(self) -> None:
        if self.pass_rule is not None:
            check_choice("StartingSuiteOptions", "pass_rule", self.pass_rule, PASS_RULES)

    @property
    def rule(self) -> PassRule:
        """The rule written: the one chosen, else `mean`."""
        return self.pass_rule or STARTING_PASS_RULE


#: the trajectory match modes (§3.2); `suite infer` writes the one chosen (E-145)
MatchMode = Literal["exact", "in-order", "any-order", "subset"]
MATCH_MODES: tuple[MatchMode, ...] = ("exact", "in-order", "any-order", "subset")


@dataclass(frozen=True)
class InferOptions:
    """How `suite infer` writes the expectations it proposes (E-145).

    Attributes:
        mode: the `trajectory.match` of every expectation written. `in-order` by default: it
            requires every call the passing trials agreed on, in their order, and lets a later
            run add a call (a retry, one more lookup) without failing; `exact` fails on any
            added call, `any-order` drops the order they all kept, and `subset` is met by a
            trial that makes no call at all.
    """

    mode: MatchMode = "in-order"

    def __post_init__(self) -> None:
        check_choice("InferOptions", "mode", self.mode, MATCH_MODES)


#: how the events pass parses payloads (E-108): "auto" takes the native extractor where it is
#: built, "native" requires it, "duckdb" is the reference query alone; one answer either way
Extractor = Literal["auto", "native", "duckdb"]
EXTRACTORS: tuple[Extractor, ...] = ("auto", "native", "duckdb")
#: the DuckDB variable that holds a connection's extractor
EXTRACTOR_VARIABLE = "evalbatch_extractor"


#: events per batch of whole runs: below this everything is graded in one pass
DEFAULT_BATCH_EVENTS = 1_000_000
BATCH_EVENTS = Bounds(1, integer=True)
#: the most DuckDB threads a command asks for: far past any machine's cores, well short of the
#: count that makes DuckDB spend minutes starting threads (E-82)
MAX_THREADS = 1024
THREADS = Bounds(1, MAX_THREADS, integer=True)


@dataclass(frozen=True)
class Resources:
    """What DuckDB may use, for every connection a call makes (E-64); None is DuckDB's default.

    They change how fast and in how much memory a result is made, never the result.

    Attributes:
        threads: DuckDB threads (default: all cores).
        memory_limit: DuckDB's memory limit, e.g. `4GB` or `80%`; past it, work spills.
        spill_dir: where DuckDB spills past the memory limit.
        batch_events: events per batch of whole runs for the local engine: memory grows with
            a batch, not with the input.
        extractor: which extractor parses payloads in the events pass (E-108): "auto" unless
            named; the environment is never read here (`EVALBATCH_EXTRACTOR` is the CLI's, read
            where a command starts, E-130).
    """

    threads: int | None = None
    memory_limit: str | None = None
    spill_dir: str | None = None
    batch_events: int = DEFAULT_BATCH_EVENTS
    extractor: Extractor = "auto"

    def __post_init__(self) -> None:
        if self.threads is not None:
            THREADS.check("Resources", "threads", self.threads)
        BATCH_EVENTS.check("Resources", "batch_events", self.batch_events)
        check_choice("Resources", "extractor", self.extractor, EXTRACTORS)

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        """Set a connection's threads, memory limit and spill directory; DuckDB's defaults for
        what is unset. Every connection a call makes goes through here (E-64), and none of
        them installs or loads an extension by itself (E-153).

        DuckDB draws its progress bar on stdout once a query runs past two seconds, terminal or
        not: in `regress --json`, `run --json` or `sql` output that is read by a program, the bar
        came before the document. It is never printed (E-64); `run` reads the bar's estimate
        for its own progress line instead. In Jupyter, DuckDB draws the bar as a widget, not on
        stdout, and refuses any change of the setting where ipywidgets is missing: left as is."""
        import duckdb

        # Jupyter without ipywidgets: no bar on stdout to silence
        with contextlib.suppress(duckdb.InvalidInputException):
            con.execute("SET enable_progress_bar_print = false")
        # E-153: no extension is fetched or loaded behind a query's back (a URI DuckDB cannot
        # read would fetch httpfs): object-store URIs are read through pyarrow.fs instead
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        if self.threads:
            con.execute(f"SET threads = {int(self.threads)}")
        if self.memory_limit:
            con.execute("SET memory_limit = $limit", {"limit": self.memory_limit})
        if self.spill_dir:
            con.execute("SET temp_directory = $dir", {"dir": str(self.spill_dir)})
        con.execute(f"SET VARIABLE {EXTRACTOR_VARIABLE} = $name", {"name": self.extractor})
