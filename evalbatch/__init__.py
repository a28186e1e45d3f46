"""evalbatch: grade exported OpenWOP eval-run logs as RFC 0244 defines.

The library surface notebooks and the CLI share:

    from evalbatch import grade_paths, regress_paths
    result = grade_paths(["exports/"], ["suites/"])
"""

from evalbatch.api import GradeResult, grade_events, grade_paths, regress_paths
from evalbatch.options import GradeOptions
from evalbatch.regress import RegressOptions

__all__ = [
    "GradeOptions",
    "GradeResult",
    "RegressOptions",
    "grade_events",
    "grade_paths",
    "regress_paths",
]
