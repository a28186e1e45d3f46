"""evalbatch: grade exported OpenWOP eval-run logs as RFC 0244 defines.

The library surface notebooks and the CLI share: every name of `evalbatch.api`, importable from
here too (E-91):

    from evalbatch import connect, grade_paths, write_outputs
    result = grade_paths("exports/", suites="suites/")
    con = connect("out/nightly")  # an output directory of `evalbatch run`, not regraded

The names load `evalbatch.api` on first use, not on `import evalbatch`: every module of the
package imports this one first, and `evalbatch --help` needs none of the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalbatch.api import (
        DEFAULT_BATCH_EVENTS,
        Explanation,
        GradeOptions,
        GradeResult,
        InferOptions,
        IngestReport,
        Paths,
        Progress,
        RegressionReport,
        RegressOptions,
        Resources,
        RunReport,
        StartingSuiteOptions,
        SuiteProposal,
        VerifyReport,
        connect,
        explain_paths,
        grade_events,
        grade_paths,
        infer_paths,
        ingest_paths,
        load_suites,
        regress_paths,
        verify_events,
        verify_paths,
        write_outputs,
        write_proposal,
    )

#: `evalbatch.api.__all__` (tests/test_api_paths.py checks they are the same)
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


def __getattr__(name: str) -> Any:
    """`evalbatch.grade_paths` and the rest of `__all__`: `evalbatch.api`'s, imported now."""
    if name not in __all__:
        raise AttributeError(f"module 'evalbatch' has no attribute {name!r}")
    from evalbatch import api

    value = getattr(api, name)
    globals()[name] = value  # found directly from now on
    return value
