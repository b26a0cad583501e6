"""The suite's parallel layout holds: `--dist loadgroup` keeps an xdist_group on one worker.

tests/conftest.py puts the tests that share a playbook run or a Slurm lab in one group so the run (minutes)
happens once. pytest-xdist 3.8 marks a group by appending `@group` to `Item._nodeid`; pytest 9.2 keeps the
id elsewhere (`Node._id`), and the groups were then silently ignored: every test its own unit, the long
fixtures run on both workers. This runs pytest-xdist on a small suite and checks where the tests ran."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SUITE = """
import os
import pytest

def record(tmp_name):
    with open(os.environ["GROUPS_OUT"], "a") as out:
        out.write(f"{tmp_name} {os.environ['PYTEST_XDIST_WORKER']}\\n")

@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("n", range(6))
def test_grouped(n):
    record(f"grouped-{n}")

@pytest.mark.parametrize("n", range(6))
def test_free(n):
    record(f"free-{n}")
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = tmp_path / "groups.txt"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"],
        cwd=tmp_path,
        env={"GROUPS_OUT": str(out), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = dict(line.split() for line in out.read_text().splitlines())
    assert len(ran) == 12
    assert len({worker for test, worker in ran.items() if test.startswith("grouped-")}) == 1
