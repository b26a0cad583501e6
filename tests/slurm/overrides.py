"""Lab-only adjustments to a rendered Slurm configuration, each one explicit and explained.

The renderer writes configuration for real clusters: one slurmd per machine, each machine with 192
CPUs, 1.9 TB of memory and eight GPUs. The lab runs every daemon on one small virtual machine, so a
few settings have to change there. ``apply_lab_overrides`` makes exactly those changes to the rendered
text and returns the list of them (file, setting, what it was, what it became, why); the renderer is
never changed for the lab's sake, and a test prints and checks the list.

What the lab does *not* override, because its environment makes the rendered values work as written:
``SlurmctldHost``/``AccountingStorageHost``/``DbdHost`` (the lab's UTS namespace is called like the
controller and ``/etc/hosts`` maps it and every node name to 127.0.0.1), the default ports (the lab has
its own network namespace), the node's hardware description (``config_overrides`` below), gres.conf's
``File=/dev/nvidia[0-7]`` (the lab creates those device files with NVIDIA's major number 195).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

FIRST_SLURMD_PORT = 17001
CONTROLLER_LOG = "/var/log/slurm/slurmctld.log"


@dataclass(frozen=True)
class Override:
    file: str
    setting: str
    rendered: str | None
    lab: str
    why: str


def expand_hostlist(expression: str) -> list[str]:
    """Expand a Slurm host list with one bracket per name (``trainers-[0-2,5]``, ``a,b``)."""
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", expression):
        match = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if match is None:
            names.append(part)
            continue
        prefix, ranges, suffix = match.groups()
        for item in ranges.split(","):
            low, _, high = item.partition("-")
            width = len(low)
            for number in range(int(low), int(high or low) + 1):
                names.append(f"{prefix}{number:0{width}d}{suffix}")
    return names


def node_names(slurm_conf: str) -> list[str]:
    """Every node named on a ``NodeName=`` line, in order (``NodeName=DEFAULT`` excluded)."""
    names: list[str] = []
    for line in slurm_conf.splitlines():
        match = re.match(r"\s*NodeName=(\S+)", line)
        if match and match.group(1) != "DEFAULT":
            names.extend(expand_hostlist(match.group(1)))
    return names


def settings(text: str) -> dict[str, str]:
    """``Key=value`` lines of a Slurm configuration file (the last one wins, keys case-insensitive)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"\s*([A-Za-z]+)=(\S*)\s*(?:#.*)?$", line)
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def _set(text: str, key: str, value: str) -> tuple[str, str | None]:
    """Set ``key=value`` (replacing the line if present, appending otherwise); return the old value."""
    pattern = re.compile(rf"^\s*{key}=(\S*).*$", re.IGNORECASE | re.MULTILINE)
    match = pattern.search(text)
    if match is None:
        return text.rstrip("\n") + f"\n{key}={value}\n", None
    return text[: match.start()] + f"{key}={value}" + text[match.end() :], match.group(1)


def _ports_per_node(text: str) -> tuple[str, list[tuple[str, int]]]:
    """Split each ``NodeName=<list> ...`` line into one line per node, each with its own ``Port``."""
    ports: list[tuple[str, int]] = []
    lines: list[str] = []
    for line in text.splitlines():
        match = re.match(r"\s*NodeName=(\S+)(.*)$", line)
        if match is None or match.group(1) == "DEFAULT":
            lines.append(line)
            continue
        rest = re.sub(r"\s+Port=\S+", "", match.group(2))
        for name in expand_hostlist(match.group(1)):
            port = FIRST_SLURMD_PORT + len(ports)
            ports.append((name, port))
            lines.append(f"NodeName={name} Port={port}{rest}")
    return "\n".join(lines) + "\n", ports


def apply_lab_overrides(files: Mapping[str, str]) -> tuple[dict[str, str], list[Override]]:
    """Return the files with the lab's overrides applied, and the list of those overrides."""
    out = dict(files)
    done: list[Override] = []

    def change(file: str, key: str, value: str, why: str) -> None:
        out[file], old = _set(out[file], key, value)
        done.append(Override(file, key, old, value, why))

    conf = out["slurm.conf"]
    out["slurm.conf"], ports = _ports_per_node(conf)
    done.append(
        Override(
            "slurm.conf",
            "NodeName ... Port=",
            None,
            ", ".join(f"{name}:{port}" for name, port in ports),
            "all slurmd run on one host (one address), so each node needs its own port; a NodeName "
            "line listing several nodes becomes one line per node",
        )
    )
    change(
        "slurm.conf",
        "SlurmdSpoolDir",
        "/var/spool/slurmd/%n",
        "several slurmd on one host must not share their spool directory (%n = node name)",
    )
    change(
        "slurm.conf",
        "SlurmdPidFile",
        "/run/slurmd/%n.pid",
        "several slurmd on one host must not share their pid file",
    )
    change(
        "slurm.conf",
        "SlurmdLogFile",
        "/var/log/slurm/slurmd-%n.log",
        "one log per slurmd, so the tests can read each node's log",
    )
    if "slurmctldlogfile" not in settings(conf):
        change(
            "slurm.conf",
            "SlurmctldLogFile",
            CONTROLLER_LOG,
            "the tests grep the controller's log for errors and warnings (only set when not rendered)",
        )
    rendered = settings(conf).get("slurmdparameters")
    params = ",".join(p for p in (rendered, "config_overrides") if p)
    change(
        "slurm.conf",
        "SlurmdParameters",
        params,
        "the lab VM has 2 CPUs and ~23 GB, not 192 CPUs and 1.9 TB: without config_overrides slurmd "
        "registers its real hardware and slurmctld drains the node (Low RealMemory / Low CPUs)",
    )
    return out, done
