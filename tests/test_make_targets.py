"""Issue 17 item 7: `make run` installs only what the default engine needs (no Ray: a 1.3 GB
environment for a job whose default engine needs none, and no test tools); `make test` adds
the test and Ray extras, which tests/test_ray.py needs. Read from `make -n` (what each target
would run, nothing run), so the Makefile cannot drift from this."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import ROOT


def _installs(target: str) -> list[str]:
    """The `pip install` commands `make <target>` runs on a fresh clone (every stamp remade)."""
    dry = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [line for line in dry.stdout.splitlines() if re.search(r"pip install .*-e ", line)]


def _extras(command: str) -> set[str]:
    found = re.search(r"-e '?\.\[([^\]]*)\]", command)
    return set(found.group(1).split(",")) if found else set()


def test_issue17_item7_make_run_installs_no_extra() -> None:
    installs = _installs("run")
    assert installs, "make run installs nothing"
    assert all(_extras(command) == set() for command in installs), installs
    assert all("-c requirements.lock" in command for command in installs), installs


@pytest.mark.parametrize("target", ["test", "lint"])
def test_issue17_item7_make_test_adds_the_dev_and_ray_extras(target: str) -> None:
    installs = _installs(target)
    assert {"dev", "ray"} <= set().union(*map(_extras, installs)), installs
    assert all("-c requirements.lock" in command for command in installs), installs
