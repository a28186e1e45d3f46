"""A side of `regress` whose run is named (--base-run-id/--cand-run-id) reads that run, not the
whole log (E-140).

What the comparison reads of a side besides its named run is which suites its other runs belong
to: a run of another suite is compared too, or refused as one of several, or said to be on one
side only (E-65, E-66). So every run whose `eval.started` events might name another suite is
graded as before, and only the runs that can hold nothing but the named run's suite, or none,
are left unread: for the comparison they are other runs of the named run's suite, which it
never reads. Their suites are read off the `eval.started` rows alone (a run is an eval run by
those rows: E-1), each payload parsed as strictly as grading parses it (D-7). A run the rows
cannot vouch for is read.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from evalbatch import jsonvalue
from evalbatch.inputs import event_files


class Unknown:
    """A payload whose suite only grading can tell (`claim_of`)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()
#: what one `eval.started` row says of its run's suite: a suite id, None (no suite named: grading
#: finds none there), or UNKNOWN (the payload is not a JSON object as grading reads one)
Claim = str | None | Unknown
#: each eval run's claims, one per distinct claim of its rows
Claims = dict[str, set[Claim]]
#: the claims read, by what they were read from (`_read_key`)
ClaimsRead = dict[tuple[object, ...], Claims]

#: every eval.started row of the chosen runs, payload as grading reads it (`source_events`)
_STARTED = "SELECT run_id, payload FROM source_events WHERE type = 'eval.started'"


def claim_of(payload: str | None) -> Claim:
    """The suite one `eval.started` payload names (`Claim`): its `suiteId` when that is a JSON
    string of a JSON object parsed strictly (a repeated key keeps its last value, D-7). A text
    with an escape is left unknown: no reading of it can then differ from grading's."""
    if payload is None or "\\" in payload:
        return UNKNOWN
    try:
        value = jsonvalue.parse_exact(payload)
    except jsonvalue.NotJson:
        return UNKNOWN
    if not isinstance(value, dict):
        return UNKNOWN
    suite = value.get("suiteId")
    return suite if isinstance(suite, str) else None


def runs_to_read(claims: Claims, named: str) -> tuple[frozenset[str], str] | None:
    """The runs a side whose run `named` is chosen reads, and the suite the named run's rows
    name; None when the whole side is read: the named run is no eval run here (the message
    lists the side's runs), or its rows do not name one suite.

    `claims` holds every eval run's claims (`claim_of`). A run is left unread when each of its
    rows names the named run's suite or none: grading can give it no other suite."""
    own = claims.get(named)
    if own is None:
        return None
    named_suites = [c for c in own if c is not None]
    if len(named_suites) != 1 or not isinstance(named_suites[0], str):
        return None
    suite = named_suites[0]
    harmless: set[Claim] = {suite, None}
    read = {run for run, said in claims.items() if run == named or not said <= harmless}
    return frozenset(read), suite


def _read_key(sources: event_files.Sources) -> tuple[object, ...]:
    """What a read of the claims depends on: the files, as grouped, and the runs kept."""
    groups = tuple((plan, tuple(paths)) for plan, paths in sources.groups.items())
    return groups, sources.only_runs


def started_claims(con: Any, sources: event_files.Sources) -> Claims:
    """Each eval run of `sources` (the runs a filter kept) with what its `eval.started` rows say
    of its suite: the run-id and type columns are read whole, payloads of those rows alone. A
    file whose data cannot be decoded is left out and reported, as in every pass (E-22)."""

    def read() -> pl.DataFrame:
        event_files.register(con, sources, None)
        frame: pl.DataFrame = con.sql(_STARTED).pl()
        return frame

    rows = event_files.leaving_out_damaged(con, sources, read)
    claims: Claims = defaultdict(set)
    for run_id, payload in rows.iter_rows():
        claims[run_id].add(claim_of(payload))
    return dict(claims)


@dataclass
class NamedRun:
    """The read of one side whose run is named: which runs it chose, and whether the grading
    bore the choice out (`holds`); where it did not, the side is graded whole instead."""

    run_id: str
    #: the claims read so far, shared by the two sides: one log named on both is read once
    read: ClaimsRead = field(default_factory=dict)
    #: the named run's suite, as its eval.started rows name it; None until chosen, or when the
    #: whole side is read
    suite_id: str | None = None

    def choose(self, con: Any, sources: event_files.Sources) -> frozenset[str] | None:
        """`pipeline.local.ChooseRuns`: after the run filters, the runs `runs_to_read` keeps."""
        key = _read_key(sources)
        claims = self.read.get(key)
        if claims is None:
            claims = started_claims(con, sources)
            if _read_key(sources) == key:  # no file left out: another read would find the same
                self.read[key] = claims
        chosen = runs_to_read(claims, self.run_id)
        if chosen is None:
            return None
        read, self.suite_id = chosen
        return read

    @property
    def narrowed(self) -> bool:
        """Some runs of the side were left unread."""
        return self.suite_id is not None

    def holds(self, tasks: pl.DataFrame, unread: pl.DataFrame) -> bool:
        """The named run is on the side (`tasks`: its task rows, and a row for each run not
        graded) under the suite its rows named, and every file was read (`unread`: the errors
        of no run), so the runs left unread could add nothing. Else the side is read whole: the
        messages about it list every run and every file at fault, as they always did."""
        rows = tasks.filter(pl.col("run_id") == self.run_id)
        named = rows.height > 0 and rows["suite_id"].first() == self.suite_id
        return named and unread.is_empty()
