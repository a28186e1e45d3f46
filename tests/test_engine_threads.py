"""The local engine's worker thread never waits for itself (§7).

The next batch is extracted on a worker thread while the current one is graded. A pass left
unfinished (a failed write, a test that stops early) used to be closed by the garbage collector,
which may run in that worker while it extracts: the cleanup then waited for the worker's own
extraction, and the process never ended.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from evalbatch.inputs.suites import load_suites
from evalbatch.options import GradeOptions, Resources
from evalbatch.pipeline import local
from tests.helpers import SAMPLE_EVENTS, SAMPLE_SUITES


def test_a_pass_closed_from_its_own_worker_does_not_wait_for_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    grading = local.local_pass(
        [str(SAMPLE_EVENTS)],
        load_suites([SAMPLE_SUITES]),
        GradeOptions(),
        Resources(batch_events=1),  # one run per batch: several batches
    )
    assert len(grading.plan.ranges) > 2
    real = local.extract_shard
    calls: list[int] = []
    first_batch_out, closed = threading.Event(), threading.Event()

    def extract_then_close(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:  # the worker, extracting batch 2, finalizes the suspended pass
            first_batch_out.wait(timeout=60)
            grading.parts.close()  # as the garbage collector would
            closed.set()
        return real(*args)

    monkeypatch.setattr(local, "extract_shard", extract_then_close)
    next(grading.parts)  # batch 1 graded; batch 2 is being extracted on the worker
    first_batch_out.set()
    assert closed.wait(timeout=60), "the pass's cleanup waited for its own worker"
