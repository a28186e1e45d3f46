"""E-155: faults on the Ray engine. A worker killed from outside while it grades a shard is
retried by Ray and the outputs are still the local engine's, byte for byte; a shard that fails
for good (its worker stops on a fault, or Ray gives up on it after its attempts) fails the run
with one line naming the shard and its runs, the local engine's exit code for the fault, and the
previous outputs left as they were; inputs in an S3-compatible store graded on a cluster of
several nodes give the bytes of the same files graded locally.

The cluster is the `cluster` fixture (three raylets, tests/conftest.py), the store the `store`
fixture (moto's S3 server). A worker is killed with SIGKILL by its process id, found among the
processes below this cluster's own raylets (never another cluster's on the machine) while Ray
titles it by the task it runs (`ray::Map(grade)`): nothing in evalbatch helps the test find it.
The first tests need no cluster: they run the engine's code against a stand-in for Ray.
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest
import ray
from ray._private import ray_constants
from ray.cluster_utils import Cluster

from evalbatch import api
from evalbatch.errors import (
    EXIT_NOT_WRITTEN,
    EXIT_UNUSABLE,
    InputError,
    OutputError,
    ShardFailed,
    name_fault,
)
from evalbatch.inputs import event_files
from evalbatch.options import Resources
from evalbatch.outputs.output_format import WORK_PREFIX
from evalbatch.pipeline import ray_engine, write
from tests.helpers import (
    LEAK_MARKERS,
    OUTPUT_FILES,
    S3_BUCKET,
    SAMPLE_SUITES,
    SAMPLES,
    Store,
    directory_state,
    generated_log,
    read_outputs,
    run_evalbatch,
    run_main,
)

INPUTS = [str(SAMPLES / "events"), str(SAMPLES / "regress")]

#: a shard as the message names it: its number of the shards, its runs by their ids
SHARD = r"shard \d+ of \d+ \((runs \S+ \.\. \S+, \d+ runs|run \S+)\)"


# --------------------------------------------------------------------------------------------
# Without a cluster: the engine's code against a stand-in for Ray


def _plan(spans: list[tuple[str, str, int]]) -> event_files.BatchPlan:
    ranges = [
        (spans[i][0] if i else None, spans[i + 1][0] if i + 1 < len(spans) else None)
        for i in range(len(spans))
    ]
    return event_files.BatchPlan(ranges, [10] * len(spans), sum(s[2] for s in spans), 0, spans)


def test_e155_a_failed_shard_is_one_line_naming_it_and_its_runs() -> None:
    """The first failed shard is named by its number (from 1, of all) and its runs' ids (first,
    last, how many), with its fault and its exit code; the other failed shards are counted; a
    shard with no result is one Ray gave up on, exit code 4; all returned clean is no error."""
    plan = _plan([("acme/a-01", "acme/a-09", 9), ("acme/b-01", "acme/b-01", 1), ("c", "d", 2)])
    clean = [{"shard": n, "fault": "", "exit": 0} for n in range(3)]
    assert ray_engine.failed_shards(plan, clean, attempts=4) is None

    lost = ray_engine.failed_shards(plan, [clean[0], clean[2]], attempts=4)
    assert isinstance(lost, ShardFailed) and lost.exit_code == EXIT_NOT_WRITTEN
    assert str(lost) == (
        "shard 2 of 3 (run acme/b-01) failed on Ray: Ray could not run it to the end in 4 "
        "attempts (its worker was killed, crashed or ran out of memory, or its node was lost)"
    )

    named = {"shard": 0, "fault": "no event file: x.parquet", "exit": 2}
    both = ray_engine.failed_shards(plan, [named, clean[1]], attempts=4)
    assert isinstance(both, ShardFailed) and both.exit_code == 2
    assert str(both) == (
        "shard 1 of 3 (runs acme/a-01 .. acme/a-09, 9 runs) failed on Ray: no event file: "
        "x.parquet (1 more shard failed too)"
    )
    assert "\n" not in str(both)
    assert ray_engine.shard_label(_plan([]), 0) == "shard 1 of 0 (no runs)"


def test_e155_a_worker_says_its_fault_as_the_local_engine_does() -> None:
    """What the worker says is what a command says of the same fault (`errors.name_fault`):
    an OS error is an output fault (4) by its path and the OS's reason, the library's errors
    keep theirs, running out of memory is 2; anything else by its type alone, never its text,
    which may quote the data (§H)."""
    full = OSError(errno.ENOSPC, "No space left on device", "/out/.evalbatch-x/shards/s.parquet")
    assert ray_engine.shard_fault(full) == name_fault(full)
    assert ray_engine.shard_fault(full) == (
        "could not read or write /out/.evalbatch-x/shards/s.parquet: "
        "No space left on device [ENOSPC]",
        OutputError.exit_code,
    )
    assert ray_engine.shard_fault(InputError("no event file")) == ("no event file", 2)
    reason, code = ray_engine.shard_fault(MemoryError())
    assert reason.startswith("out of memory") and code == EXIT_UNUSABLE
    leaky = ValueError(" ".join(LEAK_MARKERS))
    assert ray_engine.shard_fault(leaky) == (
        "its worker stopped on an unexpected ValueError",
        EXIT_UNUSABLE,
    )


@dataclass
class _FakeData:
    """The part of `ray.data` the engine uses, running each map in this process and recording
    what it was asked; `drop` leaves shards out of the results, as Ray Data does with a block it
    gave up on when told to go on (`max_errored_blocks`)."""

    drop: frozenset[int] = frozenset()
    asked: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.DataContext = SimpleNamespace(get_current=lambda: SimpleNamespace())

    def from_items(self, items: list[dict[str, Any]], override_num_blocks: int) -> Any:
        self.asked["items"], self.asked["blocks"] = items, override_num_blocks
        context = SimpleNamespace(max_errored_blocks=0)
        self.asked["context"] = context

        def map_rows(fn: Any, **options: Any) -> Any:
            self.asked["map"] = options
            rows = [fn(item) for item in items if item["shard"] not in self.drop]
            return SimpleNamespace(take_all=lambda: rows)

        return SimpleNamespace(context=context, map=map_rows)


def _fake_ray(data: _FakeData, planning_fails: BaseException | None = None) -> Any:
    """A stand-in for `ray` running every task in this process; `planning_fails` is raised by
    `ray.get` of the planning task, as Ray raises a task's failure."""

    def remote(fn: Any) -> Any:
        def options(**given: Any) -> Any:
            data.asked["plan"] = given
            return SimpleNamespace(remote=fn)

        return SimpleNamespace(options=options)

    def get(value: Any) -> Any:
        if planning_fails is not None:
            raise planning_fails
        return value

    return SimpleNamespace(
        data=data,
        exceptions=ray.exceptions,
        _private=SimpleNamespace(worker=SimpleNamespace(_worker_logs_enabled=True)),
        is_initialized=lambda: True,
        cluster_resources=lambda: {"CPU": 2},
        remote=remote,
        get=get,
    )


def test_e155_ray_gives_a_shard_bounded_attempts_and_a_lost_shard_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The map over the shards is one shard a block, asks Ray for `SHARD_RETRIES` retries of a
    lost worker (Ray Data's own default is to retry for ever: a shard that kills every worker
    would never end), and is told to go on past a shard Ray gives up on, so the driver names it
    by its number; a worker's fault (its shard directory under a file) comes back as a row and
    fails the pass naming the shard, exit code 4, as a write fault does locally."""
    choices = api.load_suites([SAMPLE_SUITES])
    data = _FakeData()
    monkeypatch.setattr(ray_engine, "_ray", lambda: _fake_ray(data))
    plan, parts, _ = ray_engine.grade_shards(
        INPUTS, choices, api.GradeOptions(), shard_events=100, shard_dir=tmp_path / "shards"
    )
    assert 0 < ray_engine.SHARD_RETRIES < 10
    assert data.asked["map"] == data.asked["plan"] == {"max_retries": ray_engine.SHARD_RETRIES}
    assert data.asked["context"].max_errored_blocks == -1
    assert data.asked["blocks"] == len(data.asked["items"]) == len(plan.ranges) == len(parts) > 3
    assert [first for first, _, _ in plan.spans[1:]] == [low for low, _ in plan.ranges[1:]]

    monkeypatch.setattr(ray_engine, "_ray", lambda: _fake_ray(_FakeData(drop=frozenset({2}))))
    with pytest.raises(ShardFailed) as lost:
        ray_engine.grade_shards(INPUTS, choices, api.GradeOptions(), shard_events=100)
    assert lost.value.exit_code == EXIT_NOT_WRITTEN
    assert str(lost.value).startswith(f"shard 3 of {len(plan.ranges)} (")
    assert f"could not run it to the end in {ray_engine.SHARD_RETRIES + 1} attempts" in str(
        lost.value
    )

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setattr(ray_engine, "_ray", lambda: _fake_ray(_FakeData()))
    with pytest.raises(ShardFailed) as failed:
        ray_engine.grade_shards(
            INPUTS, choices, api.GradeOptions(), shard_events=100, shard_dir=blocker / "shards"
        )
    assert failed.value.exit_code == EXIT_NOT_WRITTEN
    assert re.fullmatch(
        rf"{SHARD} failed on Ray: could not read or write {re.escape(str(blocker / 'shards'))}: "
        rf"Not a directory \[ENOTDIR\] \({len(plan.ranges) - 1} more shards failed too\)",
        str(failed.value),
    ), str(failed.value)
    assert str(failed.value).startswith("shard 1 of ")


def test_e155_a_planning_fault_is_said_as_the_local_engine_says_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The task that plans the shards raised the library's error (no usable event file): the
    driver raises it as it is, the local engine's line and exit code, not Ray's wrapping of it
    (whose text is the worker's traceback); a planning worker lost on every attempt is said as
    a shard's is, exit code 4."""
    choices = api.load_suites([SAMPLE_SUITES])
    unusable = InputError("no usable event file: x.parquet: not a readable Parquet file")
    wrapped = ray.exceptions.RayTaskError(
        "_plan", "Traceback (most recent call last): ...", unusable
    )
    monkeypatch.setattr(ray_engine, "_ray", lambda: _fake_ray(_FakeData(), wrapped))
    with pytest.raises(InputError) as said:
        ray_engine.grade_shards(INPUTS, choices, api.GradeOptions())
    assert str(said.value) == str(unusable) and "Traceback" not in str(said.value)

    crashed = ray.exceptions.WorkerCrashedError()
    monkeypatch.setattr(ray_engine, "_ray", lambda: _fake_ray(_FakeData(), crashed))
    with pytest.raises(ShardFailed) as lost:
        ray_engine.grade_shards(INPUTS, choices, api.GradeOptions())
    assert lost.value.exit_code == EXIT_NOT_WRITTEN
    assert str(lost.value) == (
        f"planning the shards failed on Ray: Ray could not run it to the end in "
        f"{ray_engine.SHARD_RETRIES + 1} attempts (its worker was killed, crashed or ran out of "
        "memory, or its node was lost)"
    )


# --------------------------------------------------------------------------------------------
# On a cluster of three nodes


def _raylets(cluster: Cluster) -> list[int]:
    nodes = [cluster.head_node, *cluster.worker_nodes]
    return [node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid for node in nodes]


def _graders(cluster: Cluster) -> list[psutil.Process]:
    """The worker processes of `cluster` grading a shard now: below its raylets, titled by the
    task they run."""
    found = []
    for raylet in _raylets(cluster):
        for process in psutil.Process(raylet).children(recursive=True):
            try:
                if process.cmdline()[:1] == ["ray::Map(grade)"]:
                    found.append(process)
            except (psutil.NoSuchProcess, psutil.AccessDenied, IndexError):
                continue
    return found


class Killer:
    """SIGKILLs, from a thread of the test, each worker of `cluster` that has been grading a
    shard for `after` seconds (seen so at every look, 20 ms apart), up to `limit` of them (all,
    when None), until the block ends; `killed` holds their process ids."""

    def __init__(self, cluster: Cluster, after: float, limit: int | None) -> None:
        self.cluster, self.after, self.limit = cluster, after, limit
        self.killed: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="killer", daemon=True)

    def _watch(self) -> None:
        since: dict[int, float] = {}
        while not self.stop.wait(0.02):
            now = time.monotonic()
            grading = {process.pid: process for process in _graders(self.cluster)}
            since = {pid: since.get(pid, now) for pid in grading}
            for pid, process in grading.items():
                if self.limit is not None and len(self.killed) >= self.limit:
                    return
                try:  # still grading at the moment it is killed
                    if now - since[pid] >= self.after and process.cmdline()[:1] == [
                        "ray::Map(grade)"
                    ]:
                        os.kill(pid, signal.SIGKILL)
                        self.killed.append(pid)
                except (psutil.NoSuchProcess, ProcessLookupError):
                    continue

    def __enter__(self) -> Killer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A generated log of 200 runs (about 217,000 events) and its suite: shards of 40,000
    events take a worker seconds here, so one is caught grading."""
    return generated_log(tmp_path_factory.mktemp("large"), runs=200, tasks=20, trials=3)


@pytest.fixture(scope="module")
def large_local(large: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The large log graded by the local engine: what every Ray run of it must equal."""
    out = tmp_path_factory.mktemp("large-local") / "out"
    api.write_outputs(large[0], out, large[1])
    return out


@pytest.mark.slow
def test_e155_a_worker_killed_mid_shard_is_retried_and_the_outputs_are_identical(
    cluster: Cluster, large: tuple[Path, Path], large_local: Path, tmp_path: Path
) -> None:
    """`evalbatch run --engine ray --json` on the cluster, in its own process, while a worker
    grading a shard is SIGKILLed from outside: Ray runs the shard again, the run exits 0, its
    stdout is its one JSON document (no line of Ray's about the dead worker), stderr is empty,
    and every output file is the local engine's, byte for byte."""
    events, suites = large
    out = tmp_path / "ray"
    with Killer(cluster, after=0.5, limit=1) as killer:
        result = run_evalbatch(
            "run", events, "--suites", suites, "--out", out, "--engine", "ray",
            "--ray-address", cluster.address, "--batch-events", "40000", "--json",
        )  # fmt: skip
    assert len(killer.killed) == 1, "no worker was caught grading"
    assert not psutil.pid_exists(killer.killed[0])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["exitCode"] == 0
    assert result.stderr == ""
    assert read_outputs(out) == read_outputs(large_local)
    assert not [p for p in out.iterdir() if p.name.startswith(WORK_PREFIX)]


@pytest.mark.slow
def test_e155_a_shard_lost_on_every_attempt_fails_the_run_naming_it(
    cluster: Cluster,
    large: tuple[Path, Path],
    large_local: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every worker caught grading is killed, so Ray gives up on each shard after its attempts
    (one retry here): `run` exits 4 with one line naming a shard, its runs and why, no
    traceback; last night's outputs in --out are byte for byte as they were, and no working
    directory is left."""
    events, suites = large
    out = tmp_path / "out"
    api.write_outputs(events, out, suites)  # last night's
    before = directory_state(out)
    monkeypatch.setattr(ray_engine, "SHARD_RETRIES", 1)
    with Killer(cluster, after=0.1, limit=None) as killer:
        code, stdout, stderr = run_main(
            monkeypatch, capsys, "run", events, "--suites", suites, "--out", out,
            "--engine", "ray", "--batch-events", "40000", "--quiet",
        )  # fmt: skip
    assert len(killer.killed) >= 2
    assert code == EXIT_NOT_WRITTEN, stderr
    assert stdout == ""
    assert re.fullmatch(
        rf"evalbatch: {SHARD} failed on Ray: Ray could not run it to the end in 2 attempts "
        r"\(its worker was killed, crashed or ran out of memory, or its node was lost\)"
        r"( \(\d+ more shards? failed too\))?; the previous outputs are unchanged\n",
        stderr,
    ), stderr
    assert directory_state(out) == before
    assert read_outputs(out) == read_outputs(large_local)


@pytest.mark.slow
def test_e155_a_worker_fault_fails_the_run_naming_the_shard(
    cluster: Cluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A worker that cannot write its shard (the shard directory lies under a file: a fault no
    retry mends) fails the run on the cluster, through the CLI and the library: one line naming
    the first shard, its runs and the OS's reason, the other shards counted, exit code 4 as a
    failed write of the local engine's; last night's outputs stay, and nothing is left."""
    out = tmp_path / "out"
    api.write_outputs(INPUTS, out, [SAMPLE_SUITES])  # last night's
    before = directory_state(out)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    # where the workers write their shards (inside the working directory, E-154), under a file
    monkeypatch.setattr(write, "SHARDS_DIR", str(blocker / "shards"))
    code, stdout, stderr = run_main(
        monkeypatch, capsys, "run", *INPUTS, "--suites", SAMPLE_SUITES, "--out", out,
        "--engine", "ray", "--batch-events", "100",
    )  # fmt: skip
    assert code == EXIT_NOT_WRITTEN
    assert stdout == ""
    assert re.fullmatch(
        rf"evalbatch: shard 1 of \d+ \((runs \S+ \.\. \S+, \d+ runs|run \S+)\) failed on Ray: "
        rf"could not read or write {re.escape(str(blocker / 'shards'))}: Not a directory "
        r"\[ENOTDIR\] \(\d+ more shards failed too\); the previous outputs are unchanged\n",
        stderr,
    ), stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert directory_state(out) == before

    with pytest.raises(ShardFailed) as failed:
        api.write_outputs(
            INPUTS, out, [SAMPLE_SUITES], engine="ray", resources=Resources(batch_events=100)
        )
    assert failed.value.exit_code == EXIT_NOT_WRITTEN
    assert f"evalbatch: {failed.value}\n" == stderr
    assert directory_state(out) == before


@pytest.mark.slow
def test_e155_a_planning_fault_on_the_cluster_is_the_local_engines_line(
    cluster: Cluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Events with no usable file, planned on a worker of the cluster: `run` says the local
    engine's one line with its exit code (2), not Ray's traceback of the planning task."""
    events = tmp_path / "events"
    events.mkdir()
    (events / "x.parquet").write_text("not Parquet")
    args = ("run", events, "--suites", SAMPLE_SUITES, "--engine")
    said = [
        run_main(monkeypatch, capsys, *args, engine, "--out", tmp_path / engine)
        for engine in ("local", "ray")
    ]
    assert said[0] == said[1]
    code, stdout, stderr = said[1]
    assert code == EXIT_UNUSABLE and stdout == ""
    assert stderr.startswith("evalbatch: no usable event file: ") and stderr.count("\n") == 1


@contextmanager
def _connected(cluster: Cluster, environment: dict[str, str]) -> Iterator[None]:
    """This process connected to `cluster` with `environment` set for its job's workers (the
    raylets were started before the store's variables were set), then as the fixture left it."""
    ray.shutdown()
    ray.init(address=cluster.address, log_to_driver=False, runtime_env={"env_vars": environment})
    try:
        yield
    finally:
        ray.shutdown()
        ray.init(address=cluster.address, log_to_driver=False)


@pytest.mark.slow
def test_e155_inputs_in_a_bucket_graded_on_the_cluster_are_the_local_bytes(
    cluster: Cluster, store: Store, tmp_path: Path
) -> None:
    """The samples in the S3-compatible server, graded on the cluster (the shards planned and
    read by the workers, each with the store's credentials and endpoint in its environment):
    every output file is the local engine's on the same files read from the disk."""
    local = tmp_path / "local"
    api.write_outputs(INPUTS, local, [SAMPLE_SUITES])
    on_ray = tmp_path / "ray"
    remote = [f"s3://{S3_BUCKET}/events", f"s3://{S3_BUCKET}/regress"]
    with _connected(cluster, dict(store.environment)):
        api.write_outputs(
            remote, on_ray, [SAMPLE_SUITES], engine="ray", resources=Resources(batch_events=100)
        )
    assert read_outputs(on_ray) == read_outputs(local)
    assert sorted(p.name for p in on_ray.iterdir()) == sorted(p.name for p in local.iterdir())
    assert set(OUTPUT_FILES) <= {p.name for p in on_ray.iterdir()}
