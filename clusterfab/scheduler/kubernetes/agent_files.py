"""The queue agent's files as the cluster's program ships them: every module of `agent/`, to be mounted
as the package `clusterfab_queue_agent` (a ConfigMap's keys are file names, so the folder is flat)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = "clusterfab_queue_agent"
"""The name the agent's container imports it by: `python3 -m clusterfab_queue_agent --config FILE`."""
AGENT = Path(__file__).parent / "agent"


def package_files() -> dict[str, str]:
    """File name -> text of every module of the agent, in name order."""
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(AGENT.glob("*.py"))}
