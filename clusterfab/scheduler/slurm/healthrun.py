"""`clusterfab health`: run the deep health check on a stack's Slurm controller and read its report.

The controller has no public address and no open port: the check runs through the cloud's remote command
(`CloudProfile.run_command`: an SSM Session Manager session on AWS, SSH over IAP on GCP), as
`clusterfab dashboard`'s tunnel does. What to run and what its report says are pure and tested here;
running it needs the cloud's CLI and credentials.

The program on the controller is the slurm_controller role's `CONTROLLER_PROGRAM` (the shipped
`bin/clusterfab-slurm-healthcheck` with its `healthcheck.json`); it prints one JSON document,
`schema_version` 1 (docs/health.md, docs/json/health.md), as its last line.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterfab.clouds import profile
from clusterfab.core.errors import UsageError
from clusterfab.outputs import SchedulerOutput, StackOutputs
from clusterfab.scheduler.slurm.hostlist import expand

CONTROLLER_PROGRAM = "/usr/local/sbin/clusterfab-slurm-healthcheck"
"""Where the slurm_controller role installs the deep check (its vars/main.yml; a test holds them equal)."""
REPORT_SCHEMA_VERSION = 1
LEVELS = (1, 2, 3)
"""`dcgmi diag -r N`: 1 quick, 2 medium, 3 long (about 15 minutes per node)."""


def expand_hostlist(expression: str) -> list[str]:
    """A Slurm hostlist (`trainers-[0-3,7],b-1`) as node names; UsageError for anything else."""
    try:
        return expand(expression)
    except ValueError as err:
        raise UsageError(f"--nodes: {err}") from None


def remote_command(level: int, nodes: Sequence[str] = ()) -> list[str]:
    """What runs on the controller: the deep check as root (`sudo -n`: fail, never prompt)."""
    if level not in LEVELS:
        raise UsageError(f"--level must be 1, 2 or 3, not {level}")
    selected = ["--nodes", ",".join(nodes)] if nodes else []
    return ["sudo", "-n", CONTROLLER_PROGRAM, "--level", str(level), *selected, "--json"]


def _scheduler(outputs: StackOutputs) -> SchedulerOutput:
    scheduler = outputs.scheduler
    if scheduler is None or scheduler.kind != "slurm":
        raise UsageError(
            f"the stack of {outputs.blueprint.name} has no Slurm controller: set scheduler.kind: slurm in "
            "the blueprint and run `clusterfab up`"
        )
    if not scheduler.controller:
        raise UsageError("the stack's outputs name no Slurm controller; run `clusterfab up` for it first")
    return scheduler


def health_argv(outputs: StackOutputs, level: int, nodes: Sequence[str] = ()) -> list[str]:
    """The local command that runs the deep check on the stack's controller and prints its output."""
    controller = _scheduler(outputs).controller
    command = shlex.join(remote_command(level, nodes))
    return profile(outputs.blueprint.cloud).run_command(outputs.blueprint, controller, command)


# ------------------------------------------------------------------------------------------ the report
@dataclass(frozen=True)
class NodeRow:
    """One node of the report as the table shows it."""

    node: str
    status: str
    """healthy | failed | skipped"""
    category: str
    """The drain reasons' categories (docs/health.md), comma-separated; empty unless failed."""
    detail: str


@dataclass(frozen=True)
class HealthReport:
    document: Mapping[str, Any]
    """The program's JSON document as it printed it."""
    rows: tuple[NodeRow, ...]

    @property
    def error(self) -> str | None:
        """Why the check did not complete (the nodes' rows say what it found before)."""
        error = self.document.get("error")
        return str(error) if error else None

    @property
    def healthy(self) -> bool:
        return self.error is None and all(row.status != "failed" for row in self.rows)

    @property
    def exit_code(self) -> int:
        return 2 if self.error else 0 if self.healthy else 1


def find_report(lines: Iterable[str]) -> HealthReport:
    """The report among the session's output: the last line that is a JSON object with `nodes`.

    An SSM session runs the command on a terminal, so the check's progress (its stderr) and the plugin's
    own `Starting session` / `Exiting session` lines arrive on the same stream, with `\\r\\n` endings.
    """
    document: dict[str, Any] | None = None
    for line in lines:
        text = line.strip()
        if not text.startswith("{"):
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict) and "nodes" in data:
            document = data
    if document is None:
        raise UsageError(
            "the deep check printed no report (its output is above): check that the controller runs and was "
            "set up by this clusterfab's `clusterfab up` (its role installs the check), and that you may "
            "sudo there (ssm-user on AWS; roles/compute.osAdminLogin with OS Login on GCP)"
        )
    return read_report(document)


def read_report(document: Mapping[str, Any]) -> HealthReport:
    """The program's document as table rows (UsageError for a schema this clusterfab does not read)."""
    version = document.get("schema_version")
    if version != REPORT_SCHEMA_VERSION:
        raise UsageError(
            f"the controller's health report has schema_version {version!r}; this clusterfab reads "
            f"{REPORT_SCHEMA_VERSION}: run `clusterfab up` with this clusterfab, or upgrade it"
        )
    return HealthReport(document, tuple(_row(node) for node in document["nodes"]))


def _row(node: Mapping[str, Any]) -> NodeRow:
    failures = node.get("failures") or []
    if failures:
        categories = ", ".join(dict.fromkeys(str(f["category"]) for f in failures))
        detail = "; ".join(str(f["detail"]) for f in failures)
        return NodeRow(node["node"], node["status"], categories, detail)
    return NodeRow(node["node"], node["status"], "", _bandwidth(node) or node.get("detail") or "")


def _bandwidth(node: Mapping[str, Any]) -> str | None:
    busbw = node.get("busbw_gbytes_per_s")
    if busbw is None:
        return None
    floor = node.get("floor_gbytes_per_s")
    judged = f"floor {floor:g}" if floor is not None else "no floor in the catalog"
    return f"busbw {busbw:g} GB/s with {node.get('partner')} ({judged})"


def health_table(report: HealthReport, stack: str) -> Any:
    """The report as a Rich table: one row per node (node, status, category, detail)."""
    from rich.table import Table  # noqa: PLC0415 - only the text output needs Rich

    counts = {s: sum(r.status == s for r in report.rows) for s in ("healthy", "failed", "skipped")}
    title = f"deep health check of {stack}, DCGM level {report.document.get('level')}: " + ", ".join(
        f"{n} {s}" for s, n in counts.items()
    )
    table = Table(title=title, title_justify="left")
    table.add_column("node", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("detail")
    styles = {"healthy": "green", "failed": "bold red", "skipped": "yellow"}
    for row in report.rows:
        table.add_row(row.node, row.status, row.category, row.detail, style=styles.get(row.status))
    if report.error:
        table.caption = f"the check did not complete: {report.error}"
        table.caption_justify = "left"
        table.caption_style = "bold red"
    return table
