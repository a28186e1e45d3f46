"""evalbatch: grade exported OpenWOP eval-run logs as RFC 0244 defines.

The library surface notebooks and the CLI share (all of it is in `evalbatch.api`):

    from evalbatch import grade_paths, regress_paths, verify_paths, ingest_paths
    result = grade_paths(["exports/"], ["suites/"])

The names load `evalbatch.api` on first use, not on `import evalbatch`: every module of the
package imports this one first, and `evalbatch --help` needs none of the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    """`evalbatch.grade_paths` and the rest of `__all__`: `evalbatch.api`'s, imported now."""
    if name not in __all__:
        raise AttributeError(f"module 'evalbatch' has no attribute {name!r}")
    from evalbatch import api

    value = getattr(api, name)
    globals()[name] = value  # found directly from now on
    return value
