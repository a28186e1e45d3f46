"""The library surface notebooks and the CLI share: one import for every use case.

Data flow: `inputs` (event files, suites) -> `extract` (the SQL stage) -> `grade` (trials) ->
`reduce` (tasks, suites, EvalSummaries) -> `pipeline` (batches, engines, merging) -> `outputs`.
`regress`, `verify`, `explain` and `publish` build on the pipeline; this module only names what
they offer.

Every function here that reads or writes files takes one path (a `str` or a `Path`) or a list of
them, and names suite files `suites=` (`suite_paths=` still works for one version, with a
`DeprecationWarning`) (issue 17 item 5). The functions defined below give the stages' functions
that surface; the others are the stages' own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalbatch.explain.explanation import Explanation
from evalbatch.explain.run_explanation import explain_paths
from evalbatch.inputs import event_files, suites
from evalbatch.inputs.ingest import IngestReport, ingest_paths
from evalbatch.notebook import connect
from evalbatch.options import DEFAULT_BATCH_EVENTS, GradeOptions, Resources
from evalbatch.pipeline.grading import (
    GradeResult,
    Paths,
    as_paths,
    grade_events,
    grade_paths,
    suites_keyword,
)
from evalbatch.pipeline.local import Progress
from evalbatch.pipeline.write import RunReport, write_outputs
from evalbatch.reduce.regression import RegressOptions
from evalbatch.regress import sides
from evalbatch.regress.sides import RegressionReport
from evalbatch.verify import HostSummary as HostSummary  # the type of verify_paths(summaries=)
from evalbatch.verify import VerifyReport, verify_events, verify_paths


def load_suites(
    paths: Paths = (), docs: Sequence[Mapping[str, Any]] = ()
) -> dict[tuple[str, str], suites.SuiteChoice]:
    """Suites from files and directories (one path or a list), and from documents in memory."""
    return suites.load_suites(as_paths(paths), docs)


def regress_paths(
    base: Paths,
    cand: Paths,
    suites: Paths = (),
    *,
    suite_paths: Paths | None = None,
    options: RegressOptions | None = None,
    grade_options: GradeOptions | None = None,
    base_run: str | None = None,
    cand_run: str | None = None,
    run_filter: event_files.RunFilter | None = None,
    allow_mixed: bool = False,
    resources: Resources | None = None,
) -> RegressionReport:
    """`evalbatch regress`: a paired verdict of `cand` against `base` per suite (§5); each side
    is one path or a list (see `evalbatch.regress.sides.regress_paths`)."""
    return sides.regress_paths(
        as_paths(base),
        as_paths(cand),
        suites_keyword(suites, suite_paths, "regress_paths"),
        options=options,
        grade_options=grade_options,
        base_run=base_run,
        cand_run=cand_run,
        run_filter=run_filter,
        allow_mixed=allow_mixed,
        resources=resources,
    )


__all__ = [
    "DEFAULT_BATCH_EVENTS",
    "Explanation",
    "GradeOptions",
    "GradeResult",
    "IngestReport",
    "Paths",
    "Progress",
    "RegressOptions",
    "RegressionReport",
    "Resources",
    "RunReport",
    "VerifyReport",
    "connect",
    "explain_paths",
    "grade_events",
    "grade_paths",
    "ingest_paths",
    "load_suites",
    "regress_paths",
    "verify_events",
    "verify_paths",
    "write_outputs",
]
