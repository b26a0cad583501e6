"""Time how long Slurm's resume program takes to act on 1, 64 and 1,024 queued elastic nodes: the program's
own planning and its calls, against an in-memory cloud that answers at once (so the figure is the
program's time, not the cloud's), and against moto's EC2 (the whole request path through boto3).

Prints timings; never judges them.

    uv run python benchmarks/resume_speed.py
    uv run python benchmarks/resume_speed.py --sizes 1 64 1024 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from clusterfab.scheduler.slurm.nodes.actions import MarkDown
from clusterfab.scheduler.slurm.nodes.fleet import Instance
from clusterfab.scheduler.slurm.nodes.groups import Group
from clusterfab.scheduler.slurm.nodes.power import ResumeJob, plan_resume, resume


class InstantCloud:
    def __init__(self) -> None:
        self.count = 0

    def create(self, group: str, names: Sequence[str]) -> list[str]:
        self.count += len(names)
        return [f"i-{n}" for n in names]

    def terminate(self, instance_ids: Sequence[str]) -> None: ...

    def instances(self) -> list[Instance]:
        return []


class NoSlurm:
    def update(self, names: Sequence[str], action: MarkDown | Any) -> None: ...


def _time(size: int, *, jobs: int) -> float:
    groups = {"b200": Group("b200", 0, 2048)}
    names = [f"b200-{i}" for i in range(size)]
    per_job = max(1, size // jobs)
    resume_jobs = [
        ResumeJob(j, tuple(names[start : start + per_job])) for j, start in enumerate(range(0, size, per_job))
    ]
    started = time.perf_counter()
    plan = plan_resume(names, resume_jobs, groups)
    resume(plan, InstantCloud(), NoSlurm())
    return time.perf_counter() - started


def _time_moto(size: int) -> float:
    import boto3
    from moto import mock_aws

    from clusterfab.scheduler.slurm.nodes.aws import Ec2Fleet

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        autoscaling = boto3.client("autoscaling", region_name="us-east-1")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/18")["Subnet"]["SubnetId"]
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        tags = [
            {"Key": "clusterfab-blueprint", "Value": "bench"},
            {"Key": "clusterfab-stack", "Value": "bench"},
            {"Key": "clusterfab-node-group", "Value": "b200"},
        ]
        template = ec2.create_launch_template(
            LaunchTemplateName="b200",
            LaunchTemplateData={"ImageId": image, "InstanceType": "p6-b200.48xlarge"},
        )["LaunchTemplate"]["LaunchTemplateId"]
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName="b200",
            MinSize=0,
            MaxSize=0,
            LaunchTemplate={"LaunchTemplateId": template, "Version": "1"},
            VPCZoneIdentifier=subnet,
            Tags=[{**t, "PropagateAtLaunch": False} for t in tags],
        )
        fleet = Ec2Fleet(ec2, blueprint="bench", stack="bench", autoscaling=autoscaling)
        names = [f"b200-{i}" for i in range(size)]
        started = time.perf_counter()
        plan = plan_resume(names, [ResumeJob(1, tuple(names))], {"b200": Group("b200", 0, 2048)})
        resume(plan, fleet, NoSlurm())
        return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-moto", action="store_true", help="skip the moto runs (slow for 1,024 nodes)")
    args = parser.parse_args(argv)
    table = Table(title="resume program: time to act on N queued nodes (median)")
    for column in ("nodes", "jobs", "planning + calls, instant cloud", "through boto3 + moto EC2"):
        table.add_column(column, justify="right")
    for size in args.sizes:
        for jobs in sorted({1, max(1, size // 8)}):
            instant = statistics.median(_time(size, jobs=jobs) for _ in range(args.repeat))
            moto = "-" if args.no_moto or jobs != 1 else f"{_time_moto(size) * 1000:.0f} ms"
            table.add_row(str(size), str(jobs), f"{instant * 1000:.2f} ms", moto)
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
