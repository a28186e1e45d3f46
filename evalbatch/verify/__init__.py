"""Audit a host: recompute every eval run and compare with what it recorded (§8).

`host_audit` holds the entry points; `report` what they return. The names callers use are
importable from here.
"""

from evalbatch.verify.audit_report import TOLERANCE, Finding, RunVerdict, VerifyReport
from evalbatch.verify.host_audit import verify_events, verify_paths
from evalbatch.verify.host_summaries import HostSummary, host_summary_faults, load_summaries

__all__ = [
    "TOLERANCE",
    "Finding",
    "HostSummary",
    "RunVerdict",
    "VerifyReport",
    "host_summary_faults",
    "load_summaries",
    "verify_events",
    "verify_paths",
]
