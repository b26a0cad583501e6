"""`python3 -m clusterfab_slurm_nodes sync|resume|suspend|resume-fail --config FILE [--counts FILE] [NODES]`,
`python3 -m clusterfab_slurm_nodes accounting --config FILE --password-file FILE`.

accounting (accounting.py) is run by the controller's playbook as root before slurmdbd starts; sync by the
controller's systemd timer as root; resume, suspend and resume-fail by slurmctld as
SlurmUser, with the nodes as a hostlist expression (ResumeProgram, SuspendProgram, ResumeFailProgram run
small wrappers that call this). The config file is the one the stack renders beside slurm.conf; with
`--counts`, each run adds what it did to the totals the Slurm exporter serves (counts.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from . import accounting, clouds
from . import counts as totals
from .fleet import Fleet
from .groups import Group, groups_from_config
from .nodesync import Counts, sync
from .power import (
    claimed_holders,
    plan_resume,
    read_resume_file,
    requested,
    resume,
    suspend,
    suspend_claimed,
)
from .reconcile import RETRY_AFTER, elastic_holders
from .scontrol import Scontrol

COMMANDS = ("sync", "resume", "suspend", "resume-fail", "accounting")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    # Intermixed: the wrappers put the nodes slurmctld passes after the options, which parse_args takes
    # for an unrecognized argument until CPython's fix of September 2024 (gh-59317, PR #124303; 3.11 here
    # fails, Debian 13's 3.13 does not): Ubuntu 24.04's controller runs 3.12.3, which predates it.
    args = parser.parse_intermixed_args(argv)
    if args.command == "accounting":
        return _accounting(args.config, args.password_file, parser)
    settings = _settings(args.config, parser)
    if args.fleet:
        with open(args.fleet, encoding="utf-8") as handle:
            settings["fleet"] = json.load(handle)
    refusal = _cloud(settings).refusal(settings)
    if refusal:
        parser.error(refusal)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s[%(process)d]: %(message)s")
    groups = groups_from_config(settings["groups"])
    slurm = Scontrol()
    fleet = _fleet(settings)
    if args.command == "sync":
        return _sync(settings, groups, fleet, slurm, args.counts)
    if not args.nodes:
        parser.error(f"{args.command} needs the nodes (a hostlist)")
    names = slurm.hostnames(args.nodes)
    claims = _cloud(settings).claims
    if args.command == "resume":
        return _resume(names, groups, fleet, slurm, args.counts, claims=claims)
    # resume-fail too: whatever a failed resume left behind goes
    deleted = suspend_claimed(names, fleet, slurm.nodes()) if claims else suspend(names, fleet)
    _count(args.counts, args.command, Counter({"delete": len(deleted)}), Counter())
    return 0


def _parser() -> argparse.ArgumentParser:
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
        help="JSON: cloud, groups, blueprint, stack, region (AWS), project, zone and gce_groups (GCP) or "
        "units (Azure: the subscription and resource group are the controller's own), and "
        "ends (when the cloud takes each such group's machines: a capacity block's)",
    )
    parser.add_argument(
        "--fleet",
        help="AWS: JSON of each node group's launch template id and instance profile ARN, {group: {template, "
        "profile}}: only instances of them are named, launched or terminated",
    )
    parser.add_argument("--counts", help="JSON file of running totals to add this run to (the exporter's)")
    parser.add_argument("--password-file", help="accounting: slurmdbd's database password (the state disk's)")
    return parser


def _sync(
    settings: Mapping[str, Any], groups: Mapping[str, Group], fleet: Fleet, slurm: Scontrol, path: str | None
) -> int:
    static = {g.name: g.static_names for g in groups.values()}
    elastic = {g.name: g.elastic_names for g in groups.values() if g.size > g.static}
    retry = dt.timedelta(seconds=float(settings.get("retry_after_s", RETRY_AFTER.total_seconds())))
    counts = Counts()
    cloud = _cloud(settings)
    ending, claims = cloud.ending(settings), cloud.claims
    try:
        sync(
            static,
            fleet,
            slurm,
            elastic=elastic,
            retry_after=retry,
            counts=counts,
            ending=ending,
            claims=claims,
        )
    except Exception:
        counts.failed["round"] += 1  # the cloud or slurmctld did not answer: the alert must see it
        raise
    finally:
        _count(path, "sync", counts.done, counts.failed)
    return 0


def _resume(
    names: list[str],
    groups: Mapping[str, Group],
    fleet: Fleet,
    slurm: Scontrol,
    path: str | None,
    *,
    claims: bool = False,
) -> int:
    jobs = read_resume_file(os.environ.get("SLURM_RESUME_FILE"), slurm.hostnames)
    holders = (
        claimed_holders(fleet.instances(), slurm.nodes(), names)
        if claims
        else elastic_holders(fleet.instances(), names)
    )
    existing = [*holders, *requested(fleet)]
    plan = plan_resume(names, jobs, groups, existing)
    report = resume(plan, fleet, slurm)
    # One machine per node: counted by node, since an Azure scale set names no VM at the request.
    _count(path, "resume", Counter({"create": len(report.resumed)}), report.codes)
    return 1 if report.failed else 0


def _accounting(config: str, password_file: str | None, parser: argparse.ArgumentParser) -> int:
    if not password_file:
        parser.error("accounting needs --password-file")
    with open(config, encoding="utf-8") as handle:
        settings = json.load(handle)
    try:
        return accounting.main(settings, password_file)
    except accounting.AccountingError as error:
        print(f"clusterfab_slurm_nodes accounting: {error}", file=sys.stderr)
        return 1


def _count(path: str | None, program: str, done: Mapping[str, int], failed: Mapping[str, int]) -> None:
    """Add the run to the exporter's totals; a failure to count never fails the run itself."""
    if path is None:
        return
    try:
        totals.add(path, program, done, failed, now=time.time())
    except OSError:
        logging.getLogger(__name__).exception("could not add this run to %s", path)


def _cloud(settings: Mapping[str, Any]) -> clouds.NodeCloud:
    """The settings' cloud; AWS when they name none."""
    return clouds.cloud(settings.get("cloud", "aws"))


def _fleet(settings: Mapping[str, Any]) -> Fleet:
    return _cloud(settings).fleet(settings)


def _settings(path: str, parser: argparse.ArgumentParser) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        settings: dict[str, Any] = json.load(handle)
    if settings.get("cloud", "aws") not in clouds.CLOUDS:
        parser.error(f"{path} names no cloud this program knows ({settings['cloud']!r})")
    where = _cloud(settings).location
    missing = [k for k in ("groups", "blueprint", "stack", *where) if k not in settings]
    if missing:
        parser.error(f"{path} lacks {', '.join(missing)}")
    return settings


if __name__ == "__main__":
    sys.exit(main())
