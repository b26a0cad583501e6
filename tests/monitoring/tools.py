"""The real Prometheus tools the monitoring tests run: Debian's packages, unpacked by .ci/prometheus-tools
under .cache/prometheus-tools/<suite>/ (bookworm: Prometheus 2.42, Alertmanager 0.25; trixie: 2.53, 0.28,
bracketing Ubuntu 24.04's 2.45 / 0.26 that the monitoring host runs).

Without them the tests skip and say how to get them, except under CI=true, where they fail (tests/labs.py):
a CI run can never pass without running them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import REPO
from tests.labs import require

CACHE = REPO / ".cache" / "prometheus-tools"
SUITES = ("bookworm", "trixie")
NEWEST = "trixie"


def tool(suite: str, name: str) -> Path:
    """The path of a tool: promtool, amtool, prometheus, prometheus-alertmanager, prometheus-node-exporter."""
    path = CACHE / suite / "usr" / "bin" / name
    require(path.exists(), f"{path.relative_to(REPO)} is missing: run .ci/prometheus-tools")
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
