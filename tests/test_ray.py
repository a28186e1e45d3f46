"""The Ray Data engine gives the local engine's outputs, byte for byte (CONTRACT §7).

A local Ray with 2 CPUs is started for this module; the samples and a generated log are graded by
both engines and every output file is compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from evalbatch import api
from tests.helpers import OUTPUT_FILES, SAMPLES, run_evalbatch, run_output_bytes
from tests.test_scale import generated  # noqa: F401  (fixture)

#: a slow family (a Ray cluster):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.usefixtures("local_ray")
def test_ray_engine_matches_local_engine_on_samples(tmp_path: Path) -> None:
    inputs = [
        str(SAMPLES / "events"),
        str(SAMPLES / "regress"),
        "--suites",
        str(SAMPLES / "suites"),
    ]
    local = run_output_bytes(tmp_path / "local", *inputs)
    on_ray = run_output_bytes(tmp_path / "ray", *inputs, "--engine", "ray")
    assert on_ray == local


@pytest.mark.usefixtures("local_ray")
def test_ray_engine_matches_local_engine_on_a_generated_log(
    tmp_path: Path,
    generated: Path,  # noqa: F811
) -> None:
    inputs = [str(generated / "events.parquet"), "--suites", str(generated / "suites")]
    local = run_output_bytes(tmp_path / "local", *inputs)
    on_ray = run_output_bytes(tmp_path / "ray", *inputs, "--engine", "ray")
    assert on_ray == local


@pytest.mark.usefixtures("local_ray")
def test_ray_engine_shards_by_run(tmp_path: Path) -> None:
    """Every shard holds whole runs: shards smaller than a run (E-154) still give the same
    summaries, each run in a shard of its own."""
    from evalbatch.pipeline import ray_engine

    choices = api.load_suites([SAMPLES / "suites"])
    paths = [str(SAMPLES / "events"), str(SAMPLES / "regress")]
    plan, parts, _ = ray_engine.grade_shards(paths, choices, api.GradeOptions(), shard_events=1)
    assert len(plan.ranges) == plan.runs
    graded = sorted(run for part in parts for run in part.outcomes)
    assert graded == sorted(api.grade_paths(paths, [SAMPLES / "suites"]).summaries)
    assert len(graded) == len(set(graded))  # no run split across shards


def test_e107_ray_engine_quiet_prints_nothing(tmp_path: Path) -> None:
    """E-107: `run --engine ray -q`, as a cron job runs it (its own process, a local Ray it
    starts itself, no terminal), prints nothing on a clean run: no Ray INFO line, no token
    warning, no progress; the outputs are the local engine's."""
    inputs = [SAMPLES / "events", "--suites", SAMPLES / "suites"]
    ran = run_evalbatch("run", *inputs, "--out", tmp_path / "ray", "--engine", "ray", "-q")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout == "" and ran.stderr == ""
    local = run_evalbatch("run", *inputs, "--out", tmp_path / "local", "-q")
    assert local.returncode == 0 and local.stdout == "" and local.stderr == ""
    for name in OUTPUT_FILES:
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
