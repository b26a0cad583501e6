"""The real Prometheus tools the monitoring tests run: Debian's packages, unpacked by .ci/prometheus-tools
under .cache/prometheus-tools/<suite>/ (bookworm: Prometheus 2.42, Alertmanager 0.25; trixie: 2.53, 0.28,
bracketing Ubuntu 24.04's 2.45 / 0.26 that the monitoring host runs).

Without them the tests skip and say how to get them; CI sets CLUSTERFAB_REQUIRE_PROMETHEUS_TOOLS=1, which
turns the skip into a failure, so a CI run can never pass without running them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

CACHE = REPO / ".cache" / "prometheus-tools"
SUITES = ("bookworm", "trixie")
NEWEST = "trixie"


def tool(suite: str, name: str) -> Path:
    """The path of a tool: promtool, amtool, prometheus, prometheus-alertmanager, prometheus-node-exporter."""
    path = CACHE / suite / "usr" / "bin" / name
    if not path.exists():
        reason = f"{path.relative_to(REPO)} is missing: run .ci/prometheus-tools"
        if os.environ.get("CLUSTERFAB_REQUIRE_PROMETHEUS_TOOLS"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def run(
    suite: str, name: str, *args: str | Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tool(suite, name)), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
