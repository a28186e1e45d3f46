"""The library surface notebooks and the CLI share: one import for every use case.

Data flow: `inputs` (event files, suites) -> `extract` (the SQL stage) -> `grade` (trials) ->
`reduce` (tasks, suites, EvalSummaries) -> `pipeline` (batches, engines, merging) -> `outputs`.
`regress`, `verify`, `explain`, `infer` and `publish` build on the pipeline; this module only
names what they offer.

Every function here that reads or writes files takes one path (a `str` or a `Path`) or a list of
them, and names suite files `suites=`. Each is the stage's own function, taking those forms at
the source: this module only names them.
"""

from __future__ import annotations

from evalbatch.explain.explanation import Explanation
from evalbatch.explain.run_explanation import explain_paths
from evalbatch.infer.suite_proposal import SuiteProposal, infer_paths, write_proposal
from evalbatch.inputs.ingest import IngestReport, ingest_paths
from evalbatch.inputs.path_forms import Paths
from evalbatch.inputs.suites import load_suites
from evalbatch.notebook import connect
from evalbatch.options import (
    DEFAULT_BATCH_EVENTS,
    GradeOptions,
    InferOptions,
    Resources,
    StartingSuiteOptions,
)
from evalbatch.pairing.sides import RegressionReport, regress_paths
from evalbatch.pipeline.collect import GradeResult, grade_events, grade_paths
from evalbatch.pipeline.local import Progress
from evalbatch.pipeline.write import RunReport, write_outputs
from evalbatch.reduce.paired_verdict import RegressOptions
from evalbatch.verify import HostSummary as HostSummary  # the type of verify_paths(summaries=)
from evalbatch.verify import VerifyReport, verify_events, verify_paths

__all__ = [
    "DEFAULT_BATCH_EVENTS",
    "Explanation",
    "GradeOptions",
    "GradeResult",
    "InferOptions",
    "IngestReport",
    "Paths",
    "Progress",
    "RegressOptions",
    "RegressionReport",
    "Resources",
    "RunReport",
    "StartingSuiteOptions",
    "SuiteProposal",
    "VerifyReport",
    "connect",
    "explain_paths",
    "grade_events",
    "grade_paths",
    "infer_paths",
    "ingest_paths",
    "load_suites",
    "regress_paths",
    "verify_events",
    "verify_paths",
    "write_outputs",
    "write_proposal",
]
