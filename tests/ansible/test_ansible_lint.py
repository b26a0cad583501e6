"""ansible-lint (production profile, offline) and ansible-playbook --syntax-check over playbooks/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from chroot_testbed import PLAYBOOKS_DIR, REPO_ROOT


def _tool(name: str) -> str:
    local = Path(sys.executable).parent / name
    if local.is_file():
        return str(local)
    found = shutil.which(name)
    assert found is not None, f"{name} is a dev dependency; run `uv sync`"
    return found


@pytest.mark.quality
def test_ansible_lint_production_profile_is_clean() -> None:
    env = {**os.environ, "ANSIBLE_LINT_SKIP_SCHEMA_UPDATE": "1", "PRE_COMMIT": "1", "NO_COLOR": "1"}
    completed = subprocess.run(
        [_tool("ansible-lint"), "--offline", "--profile", "production", "playbooks/"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Profile 'production' was required, and it passed." in completed.stderr


@pytest.mark.parametrize("playbook", ["gpu_node.yml", "healthcheck.yml", "monitoring.yml"])
def test_playbook_syntax(playbook: str) -> None:
    completed = subprocess.run(
        [_tool("ansible-playbook"), "--syntax-check", "-i", "localhost,", playbook],
        cwd=PLAYBOOKS_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert f"playbook: {playbook}" in completed.stdout
