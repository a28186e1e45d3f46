"""evalbatch: grade exported OpenWOP eval-run logs as RFC 0244 defines.

The library surface notebooks and the CLI share:

    from evalbatch import grade_paths, regress_paths, verify_paths, ingest_paths
    result = grade_paths(["exports/"], ["suites/"])
"""

from evalbatch.api import GradeResult, grade_events, grade_paths, regress_paths
from evalbatch.inputs.ingest import IngestReport, ingest_paths
from evalbatch.notebook import connect
from evalbatch.options import GradeOptions
from evalbatch.regress.pairing import RegressOptions
from evalbatch.verify.host_audit import VerifyReport, verify_events, verify_paths

__all__ = [
    "GradeOptions",
    "GradeResult",
    "IngestReport",
    "RegressOptions",
    "VerifyReport",
    "connect",
    "grade_events",
    "grade_paths",
    "ingest_paths",
    "regress_paths",
    "verify_events",
    "verify_paths",
]
