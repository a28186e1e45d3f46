"""The fixtures and hooks of the test suite; shared helpers live in tests/helpers.py and the log
builder in tests/logbuilder.py, imported as modules. No test imports this file.

Tests marked `slow` (a family that takes minutes) run only with `--run-slow`: bare `pytest` is the
fast set, `make test` passes `--run-slow` and runs everything (docs/development.md).
"""

from __future__ import annotations

import os

# pytest-xdist runs a worker per core: one Polars thread each, set before Polars is imported,
# keeps the workers from each starting a pool as wide as the machine (a test that is about
# threads sets its own)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("POLARS_MAX_THREADS", "1")
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

from evalbatch.commands.resources import environment_extractor
from evalbatch.extract import extractor
from evalbatch.inputs import object_store
from evalbatch.options import Extractor
from tests.helpers import (
    S3_BUCKET,
    S3_KEY_ID,
    S3_SECRET,
    SAMPLE_EVENTS,
    SAMPLES,
    Store,
    make_suite,
    write_json,
)

if TYPE_CHECKING:
    from ray.cluster_utils import Cluster

# pytest-xdist (`make check`) hands its workers the controller's terminal width as COLUMNS; the
# commands read their width as a user's do, so a worker starts without it, as a serial run does
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)


# --------------------------------------------------------------------------------------------
# Slow tests are opt-in


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help="also run the tests marked slow (make test does); without it they are skipped",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow (make test does)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


# --------------------------------------------------------------------------------------------
# Fixtures


#: the extractor the whole test run names (`make test-duckdb` sets EVALBATCH_EXTRACTOR=duckdb),
#: read once, here, as a command reads it where it starts
RUN_EXTRACTOR = environment_extractor()


@pytest.fixture(autouse=True)
def _extractor_of_the_test_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test run's boundary reads EVALBATCH_EXTRACTOR, as the CLI's does (E-108, E-130).

    The CLI tests get it from the environment; the library never reads it (`Resources()` is
    "auto"), so a test that calls the library without naming an extractor would take the native
    one under `make test-duckdb`. When the run names one, "auto" resolves to it here, so those
    tests take the path the run asked for; an extractor a test names itself is kept."""
    if RUN_EXTRACTOR == "auto":
        return
    resolve = extractor.resolve

    def resolve_for_the_run(choice: Extractor) -> Literal["native", "duckdb"]:
        return resolve(RUN_EXTRACTOR if choice == "auto" else choice)

    monkeypatch.setattr(extractor, "resolve", resolve_for_the_run)


@pytest.fixture(autouse=True, scope="session")
def _inspect_cache_of_the_test_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The Inspect logs the tests grade are converted into a cache of the test run's own
    (E-144), which every command it starts inherits: never the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALBATCH_CACHE_DIR", str(tmp_path_factory.mktemp("evalbatch-cache")))
        yield


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    """A directory holding the suite `make_suite()` describes."""
    directory = tmp_path / "suites"
    write_json(directory / "basic.json", make_suite())
    return directory


# --------------------------------------------------------------------------------------------
# A server and a cluster, each started once for the module that asks and always stopped (their
# libraries are imported only then)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """moto's S3 server (E-153) on a free port, the samples in its bucket, and an environment
    whose credentials and endpoint are the standard AWS variables (no profile or ~/.aws of the
    user's is read); stopped at the end, its port checked closed."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    aws_home = tmp_path_factory.mktemp("aws-home")
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
                patch.delenv(name, raising=False)
            environment = {
                "AWS_ACCESS_KEY_ID": S3_KEY_ID,
                "AWS_SECRET_ACCESS_KEY": S3_SECRET,
                "AWS_DEFAULT_REGION": "us-east-1",
                object_store.ENDPOINT_VARIABLE: endpoint,
                "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_CONFIG_FILE": str(aws_home / "config"),
                "AWS_SHARED_CREDENTIALS_FILE": str(aws_home / "credentials"),
            }
            for name, value in environment.items():
                patch.setenv(name, value)
            client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
            client.create_bucket(Bucket=S3_BUCKET)
            made = Store(endpoint, port, client, environment)
            made.upload(SAMPLE_EVENTS, "events")
            made.upload(SAMPLES / "regress", "regress")
            made.upload(SAMPLES / "inspect", "inspect")
            made.upload(SAMPLES / "README.md", "notes/README.md")
            yield made
    finally:
        server.stop()
    with pytest.raises(OSError), socket.create_connection((host, port), timeout=2):
        pass  # stopped: nothing listens on its port any more


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A Ray cluster of several nodes (E-154): a head node and two worker nodes, one CPU each,
    as three raylets with their own object stores on this machine (Ray's own
    `ray.cluster_utils.Cluster`), the test process connected to it; shut down at the end,
    whatever happened, so no raylet outlives the module."""
    import ray
    from ray.cluster_utils import Cluster

    nodes = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    try:
        for _ in range(2):
            nodes.add_node(num_cpus=1)
        nodes.wait_for_nodes()
        ray.init(address=nodes.address, log_to_driver=False)
        try:
            yield nodes
        finally:
            ray.shutdown()
    finally:
        nodes.shutdown()
