"""evalbatch: grade exported OpenWOP eval-run logs as RFC 0244 defines.

The library surface notebooks and the CLI share (all of it is in `evalbatch.api`):

    from evalbatch import grade_paths, regress_paths, verify_paths, ingest_paths
    result = grade_paths(["exports/"], ["suites/"])
"""

from evalbatch.api import (
    GradeOptions,
    GradeResult,
    IngestReport,
    RegressOptions,
    Resources,
    VerifyReport,
    connect,
    grade_events,
    grade_paths,
    ingest_paths,
    regress_paths,
    verify_events,
    verify_paths,
    write_outputs,
)

__all__ = [
    "GradeOptions",
    "GradeResult",
    "IngestReport",
    "RegressOptions",
    "Resources",
    "VerifyReport",
    "connect",
    "grade_events",
    "grade_paths",
    "ingest_paths",
    "regress_paths",
    "verify_events",
    "verify_paths",
    "write_outputs",
]
