"""`clusterfab health`: run the deep health check on a stack's Slurm controller and read its report.

The controller has no public address and no open port: the check runs through the cloud's remote command
(`CloudProfile.run_command`: an SSM Session Manager session on AWS, SSH over IAP on GCP, Run Command on
Azure, whose report comes back through the cluster's health container), as
`clusterfab dashboard`'s tunnel does. What to run and what its report says are pure and tested here;
running it needs the cloud's CLI and credentials.

The program on the controller is the slurm_controller role's `CONTROLLER_PROGRAM` (the shipped
`bin/clusterfab-slurm-healthcheck` with its `healthcheck.json`); it prints one JSON document,
`schema_version` 1 (docs/health.md, docs/json/health.md), as its last line.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from clusterfab.clouds import profile
from clusterfab.core.errors import UsageError
from clusterfab.outputs import SchedulerOutput, StackOutputs
from clusterfab.scheduler.healthreport import (
    LEVELS,
    REPORT_SCHEMA_VERSION,
    HealthReport,
    NodeRow,
    Progress,
    check_level,
    health_table,
    read_report,
)
from clusterfab.scheduler.slurm.hostlist import expand

REPORT_PREFIX = "health-reports/"
"""Where a report that travels through the cloud's report channel is stored (one key per run)."""
CONTROLLER_PROGRAM = "/usr/local/sbin/clusterfab-slurm-healthcheck"
"""Where the slurm_controller role installs the deep check (its vars/main.yml; a test holds them equal)."""


def expand_hostlist(expression: str) -> list[str]:
    """A Slurm hostlist (`trainers-[0-3,7],b-1`) as node names; UsageError for anything else."""
    try:
        return expand(expression)
    except ValueError as err:
        raise UsageError(f"--nodes: {err}") from None


def remote_command(level: int, nodes: Sequence[str] = ()) -> list[str]:
    """What runs on the controller: the deep check as root (`sudo -n`: fail, never prompt)."""
    check_level(level)
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


def health_argv(
    outputs: StackOutputs, level: int, nodes: Sequence[str] = (), *, report_key: str | None = None
) -> list[str]:
    """The local command that runs the deep check on the stack's controller and prints its output; with
    `report_key`, the check's report goes to the cloud's report channel under that key instead."""
    controller = _scheduler(outputs).controller
    cloud = profile(outputs.blueprint.cloud)
    command = shlex.join(remote_command(level, nodes))
    channel = cloud.report_channel(outputs) if report_key is not None else None
    if channel is not None and report_key is not None:
        command = channel.wrap(command, report_key)
    return cloud.run_command(outputs.blueprint, controller, command)


def run_health(outputs: StackOutputs, level: int, nodes: str | None, progress: Progress) -> HealthReport:
    """`clusterfab health` on a Slurm stack: `nodes` is a Slurm hostlist (None: every idle node). Where the
    cloud's remote command cannot carry the report whole, it comes back through the cloud's report
    channel (`CloudProfile.report_channel`)."""
    from clusterfab.clouds import missing_host_tools  # noqa: PLC0415 - looked up at each call (tests stub it)

    wanted = expand_hostlist(nodes) if nodes is not None else []
    channel = profile(outputs.blueprint.cloud).report_channel(outputs)
    key = f"{REPORT_PREFIX}{uuid.uuid4().hex}.json" if channel is not None else None
    argv = health_argv(outputs, level, wanted, report_key=key)
    missing = missing_host_tools(outputs.blueprint.cloud)
    if missing:
        raise UsageError(f"clusterfab health needs {', '.join(missing)} on PATH")
    lines = remote_lines(argv, progress)
    if channel is not None and key is not None:
        stored = channel.fetch(key)
        lines.append(stored.decode(errors="replace") if stored is not None else "")
    return find_report(lines)


def remote_lines(argv: Sequence[str], progress: Progress) -> list[str]:
    """Run a command that reaches a host, passing what it says but the report to `progress`; its stdout
    lines."""
    lines = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, errors="replace") as proc:
        for line in proc.stdout or ():
            lines.append(line)
            if not line.lstrip().startswith("{"):
                progress(line.rstrip("\r\n"))
    return lines


# ------------------------------------------------------------------------------------------ the report
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


__all__ = [
    "LEVELS",
    "REPORT_SCHEMA_VERSION",
    "HealthReport",
    "NodeRow",
    "expand_hostlist",
    "find_report",
    "health_argv",
    "health_table",
    "read_report",
    "remote_command",
    "remote_lines",
    "run_health",
]
