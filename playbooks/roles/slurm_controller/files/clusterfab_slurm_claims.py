#!/usr/bin/python3
"""Keeps the nodes' claims across slurmctld restarts: clusterfab-slurm-claims RECORD [--wait SECONDS].

A VM that claims its node (slurm_node_name_source azure) sets the static node's NodeAddr and NodeHostname
with `scontrol update`; slurmctld keeps both in memory only, and a restart (or `scontrol reconfigure`,
which restarts slurmctld in 24.11) sets them back to slurm.conf's. This program, run as root every minute
and right after slurmctld starts:

- waits (at most SECONDS) until slurmctld answers and reads which slurmctld it is (its BOOT_TIME from
  `scontrol show config`, its process id and start time);
- when the record names another slurmctld (one started since it was written), re-applies each
  recorded claim, `scontrol update NodeName=<node> NodeAddr=<address> NodeHostname=<host>`, for nodes
  that are unclaimed now (NodeHostname = NodeName) and whose host holds no other node now: a claim made
  since the restart stands;
- records the current claims (nodes whose NodeHostname is not their name, from `scontrol show node
  --json`) with that slurmctld in RECORD (JSON, replaced atomically).

Standard library only (the controller's python3).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

SCONTROL_TIMEOUT = 60


def scontrol(*args: str) -> str:
    return subprocess.run(
        ["scontrol", *args], check=True, capture_output=True, text=True, timeout=SCONTROL_TIMEOUT
    ).stdout


def started() -> str:
    """Which slurmctld answers: its BOOT_TIME (`scontrol show config`, in seconds) and, from its
    SlurmctldPidFile, its process id and start time (/proc/<pid>/stat, clock ticks since the machine's
    boot), which tell apart two starts within one second. Every restart changes it, a reconfigure's too."""
    config = {}
    for line in scontrol("show", "config").splitlines():
        key, _, value = line.partition("=")
        config[key.strip()] = value.strip()
    if "BOOT_TIME" not in config:
        raise RuntimeError("scontrol show config names no BOOT_TIME")
    process = ""
    try:
        with open(config.get("SlurmctldPidFile", ""), encoding="ascii") as pid_file:
            pid = pid_file.read().strip()
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            process = f" pid {pid} start {stat.read().rsplit(')', 1)[1].split()[19]}"
    except (OSError, IndexError):
        pass
    return config["BOOT_TIME"] + process


def wait_for_slurmctld(wait: float) -> str:
    deadline = time.monotonic() + wait
    while True:
        try:
            return started()
        except (OSError, subprocess.SubprocessError, RuntimeError) as err:
            if time.monotonic() >= deadline:
                detail = getattr(err, "stderr", "") or err
                raise SystemExit(f"slurmctld does not answer after {wait:g}s: {str(detail).strip()}") from err
            time.sleep(2)


def nodes() -> dict[str, tuple[str, str]]:
    """Every node: name -> (NodeHostname, NodeAddr)."""
    data = json.loads(scontrol("show", "node", "--json"))
    return {node["name"]: (node["hostname"], node["address"]) for node in data["nodes"]}


def claims(current: dict[str, tuple[str, str]]) -> dict[str, dict[str, str]]:
    return {
        name: {"host": host, "address": address}
        for name, (host, address) in sorted(current.items())
        if host != name
    }


def restore(recorded: dict[str, dict[str, str]], current: dict[str, tuple[str, str]]) -> None:
    holders = {host: name for name, (host, _) in current.items() if host != name}
    for name, claim in sorted(recorded.items()):
        host, address = claim["host"], claim["address"]
        if name not in current:
            print(f"node {name} is no longer in slurm.conf: its claim by {host} is dropped", file=sys.stderr)
        elif current[name] == (host, address):
            continue
        elif current[name][0] != name:
            print(
                f"node {name} is held by {current[name][0]} now: the recorded claim by {host} is dropped",
                file=sys.stderr,
            )
        elif holders.get(host, name) != name:
            print(
                f"{host} holds node {holders[host]} now: its recorded claim of node {name} is dropped",
                file=sys.stderr,
            )
        else:
            scontrol("update", f"NodeName={name}", f"NodeAddr={address}", f"NodeHostname={host}")
            holders[host] = name
            print(f"restored node {name}: {host} at {address}")


def load(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data: dict[str, Any] = json.load(handle)
    except FileNotFoundError:
        return {"slurmctld": None, "claims": {}}
    return data


def save(path: str, data: dict[str, Any]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".claims-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, sort_keys=True)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", help="the claims' record (JSON)")
    parser.add_argument("--wait", type=float, default=0, help="seconds to wait for slurmctld to answer")
    args = parser.parse_args(argv)
    # The timer's run and the one after slurmctld starts never interleave.
    with open(f"{args.record}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ctld = wait_for_slurmctld(args.wait)
        record = load(args.record)
        current = nodes()
        if record.get("slurmctld") != ctld and record.get("claims"):
            restore(record["claims"], current)
            current = nodes()
        now = {"slurmctld": ctld, "claims": claims(current)}
        if now != record:
            save(args.record, now)
    return 0


if __name__ == "__main__":
    sys.exit(main())
