"""Options that change how runs are graded, and the resources a command may use: shared by the
engine, the reference, the library surface and the CLI, and passed explicitly."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import duckdb

OnMissDefault = Literal["count", "fail"]
#: the paired tests `regress` and the regression block may use (§5, D-16)
Method = Literal["paired-bootstrap", "paired-t", "sign-test", "mcnemar"]
METHODS: tuple[Method, ...] = ("paired-bootstrap", "paired-t", "sign-test", "mcnemar")
#: bootstrap resamples: at least §5's 10,000, at most a million (a float per resample is kept,
#: and the draws take time in proportion: past this a gate would hang, not decide better)
MIN_RESAMPLES, MAX_RESAMPLES = 10_000, 1_000_000


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


#: how the events pass parses payloads (E-108): "auto" takes the native extractor where it is
#: built, "native" requires it, "duckdb" is the reference query alone; one answer either way
Extractor = Literal["auto", "native", "duckdb"]
EXTRACTORS: tuple[Extractor, ...] = ("auto", "native", "duckdb")
#: the DuckDB variable that holds a connection's extractor
EXTRACTOR_VARIABLE = "evalbatch_extractor"


def default_extractor() -> Extractor:
    """The extractor when none is named: EVALBATCH_EXTRACTOR if it names one, else "auto" (so
    a notebook or a test run can take the reference path without an option)."""
    value = os.environ.get("EVALBATCH_EXTRACTOR", "auto")
    for name in EXTRACTORS:
        if value == name:
            return name
    return "auto"


#: events per batch of whole runs: below this everything is graded in one pass
DEFAULT_BATCH_EVENTS = 1_000_000


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
        extractor: which extractor parses payloads in the events pass (E-108).
    """

    threads: int | None = None
    memory_limit: str | None = None
    spill_dir: str | None = None
    batch_events: int = DEFAULT_BATCH_EVENTS
    extractor: Extractor = field(default_factory=default_extractor)

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        """Set a connection's threads, memory limit and spill directory; DuckDB's defaults for
        what is unset. Every connection a call makes goes through here (E-64)."""
        if self.threads:
            con.execute(f"SET threads = {int(self.threads)}")
        if self.memory_limit:
            con.execute("SET memory_limit = $limit", {"limit": self.memory_limit})
        if self.spill_dir:
            con.execute("SET temp_directory = $dir", {"dir": str(self.spill_dir)})
        con.execute(f"SET VARIABLE {EXTRACTOR_VARIABLE} = $name", {"name": self.extractor})
