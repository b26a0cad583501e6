"""`python3 -m clusterfab_slurm_nodes sync|resume|suspend|resume-fail --config FILE [NODES]`.

sync is run by the controller's systemd timer as root; resume, suspend and resume-fail by slurmctld as
SlurmUser, with the nodes as a hostlist expression (ResumeProgram, SuspendProgram, ResumeFailProgram run
small wrappers that call this). The config file is the one the stack renders beside slurm.conf.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .nodesync import (
    RETRY_AFTER,
    Ec2Fleet,
    GceFleet,
    MetadataTokenHttp,
    Scontrol,
    elastic_holders,
    gce_groups_from_config,
    groups_from_config,
    sync,
)
from .power import plan_resume, read_resume_file, resume, suspend

COMMANDS = ("sync", "resume", "suspend", "resume-fail")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="clusterfab_slurm_nodes", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument(
        "nodes", nargs="?", help="the nodes, as a Slurm hostlist (resume, suspend, resume-fail)"
    )
    parser.add_argument(
        "--config",
        required=True,
        help="JSON: cloud, groups, blueprint, stack, region (AWS) or project, zone and gce_groups (GCP)",
    )
    args = parser.parse_args(argv)
    settings = _settings(args.config, parser)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s[%(process)d]: %(message)s")
    groups = groups_from_config(settings["groups"])
    slurm = Scontrol()
    fleet = _fleet(settings)
    if args.command == "sync":
        static = {g.name: g.static_names for g in groups.values()}
        elastic = {g.name: g.elastic_names for g in groups.values() if g.size > g.static}
        retry = dt.timedelta(seconds=float(settings.get("retry_after_s", RETRY_AFTER.total_seconds())))
        sync(static, fleet, slurm, elastic=elastic, retry_after=retry)
        return 0
    if not args.nodes:
        parser.error(f"{args.command} needs the nodes (a hostlist)")
    names = slurm.hostnames(args.nodes)
    if args.command == "resume":
        jobs = read_resume_file(os.environ.get("SLURM_RESUME_FILE"), slurm.hostnames)
        plan = plan_resume(names, jobs, groups, elastic_holders(fleet.instances(), names))
        report = resume(plan, fleet, slurm)
        return 1 if report.failed else 0
    suspend(names, fleet)
    return 0


def _fleet(settings: Mapping[str, Any]) -> Ec2Fleet | GceFleet:
    if settings.get("cloud", "aws") == "gcp":
        return GceFleet(
            MetadataTokenHttp(),
            project=settings["project"],
            zone=settings["zone"],
            blueprint=settings["blueprint"],
            stack=settings["stack"],
            groups=gce_groups_from_config(settings.get("gce_groups", {})),
        )
    # Ubuntu's python3-boto3 on the controller; only the AWS program needs it.
    import boto3  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    # Standard retries back off on throttling (RequestLimitExceeded) and transient errors.
    config = Config(region_name=settings["region"], retries={"mode": "standard", "max_attempts": 8})
    endpoint = settings.get("endpoint_url")  # a test stands in for EC2 here; never set by the stack
    return Ec2Fleet(
        boto3.client("ec2", config=config, endpoint_url=endpoint),
        blueprint=settings["blueprint"],
        stack=settings["stack"],
        autoscaling=boto3.client("autoscaling", config=config, endpoint_url=endpoint),
    )


def _settings(path: str, parser: argparse.ArgumentParser) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        settings: dict[str, Any] = json.load(handle)
    where = ("project", "zone") if settings.get("cloud") == "gcp" else ("region",)
    missing = [k for k in ("groups", "blueprint", "stack", *where) if k not in settings]
    if missing:
        parser.error(f"{path} lacks {', '.join(missing)}")
    return settings


if __name__ == "__main__":
    sys.exit(main())
