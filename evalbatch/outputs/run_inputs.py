"""`run-inputs.json`: what the run that wrote an output directory was given (E-118).

Every `evalbatch run` (`write_outputs`) writes it beside the tables: the event paths and the
suite paths exactly as they were given (a relative path is relative to the directory the run
was started in), and the sha256 of the `summaries.jsonl` written with them. Paths only, never
what the files hold. `evalbatch report` reads it to print `evalbatch explain` commands that run
as they stand, where it otherwise writes EVENTS and SUITES.

A directory without the record (written before it existed, or by `write_result`, which is not
given paths) or with one that does not belong to its `summaries.jsonl` (an older evalbatch ran
into it since) reads as no record: the report keeps its placeholders rather than name the paths
of another run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalbatch.inputs.limits import check_depth
from evalbatch.outputs.output_format import RUN_INPUTS_FILE, RUN_INPUTS_FORMAT

#: the largest record read back: paths only, so anything larger is not one of ours
MAX_RECORD_BYTES = 1 << 20


@dataclass(frozen=True)
class RunInputs:
    """The paths a run was given. `suites` is None when suites were also given as documents
    (the library's `suite_docs`), which no path names."""

    events: tuple[str, ...]
    suites: tuple[str, ...] | None

    def text(self, summaries_sha256: str) -> str:
        """The record, for the `summaries.jsonl` whose sha256 is `summaries_sha256`."""
        body = {
            "format": RUN_INPUTS_FORMAT,
            "events": list(self.events),
            "suites": None if self.suites is None else list(self.suites),
            "summariesSha256": summaries_sha256,
        }
        # ASCII: a path that is not UTF-8 (a lone surrogate in Python) is kept as an escape
        return json.dumps(body, indent=1) + "\n"


def _paths(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("not a list of paths")
    return tuple(value)


def read_run_inputs(out_dir: Path, summaries_sha256: str) -> RunInputs | None:
    """The record in `out_dir` when there is one of this format that was written with the
    `summaries.jsonl` whose sha256 is `summaries_sha256`; None otherwise (see the module)."""
    path = Path(out_dir) / RUN_INPUTS_FILE
    try:
        if path.stat().st_size > MAX_RECORD_BYTES:
            return None
        text = path.read_text(encoding="utf-8")
        check_depth(text)  # E-115: a hand-made record nests no deeper than any document read
        doc = json.loads(text)
    except (OSError, ValueError):  # none, unreadable, too deep, not JSON (or not UTF-8)
        return None
    if not isinstance(doc, dict) or doc.get("format") != RUN_INPUTS_FORMAT:
        return None
    if doc.get("summariesSha256") != summaries_sha256:
        return None
    try:
        events = _paths(doc.get("events"))
        suites = None if doc.get("suites") is None else _paths(doc.get("suites"))
    except ValueError:
        return None
    return RunInputs(events=events or (), suites=suites)
