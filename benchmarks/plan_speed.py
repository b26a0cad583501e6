"""Offline plan time for blueprints of 1 to 128 node groups, next to two mock-engine floors.

The floor registers the same number of plain resources (aws.ec2.PlacementGroup) under the same mock
engine with no components, so the difference is what clusterfab's program and components cost, and
what the SDK spends on the plan's richer inputs. The replay floor registers the plan's own resources
again, each with its recorded type, parent and inputs, as bare Custom/ComponentResources: what the SDK
and engine need for exactly these resources, without clusterfab's program (compose, the components,
typed Args, boot scripts, the bundle).
Run: uv run python benchmarks/plan_speed.py [--sizes 1 8 64 128] [--cloud aws|gcp] [--repeat N]
Prints a table; never fails on time. Times are CPU seconds of this process (all its threads), the
figure to compare on a shared machine, best of `--repeat` runs; `x floor` is plan over floor and
ms/res shows whether the cost per resource stays flat as the blueprint grows (linear).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from clusterfab.plan.engine import PlannedResource, run_program
from clusterfab.plan.project import Plan, find_project, plan_blueprint

REPO = Path(__file__).resolve().parent.parent

AWS_HEAD = (
    "version: 1\nname: bench\ncloud: aws\nregion: us-east-1\nzone: use1-az6\nnetwork: {cidr: 10.0.0.0/8}\n"
)
AWS_GROUP = "  - {{name: g{i}, machine_type: p5.48xlarge, count: 2}}\n"
GCP_HEAD = (
    "version: 1\nname: bench\ncloud: gcp\nregion: us-central1\nzone: us-central1-a\nproject: bench-proj\n"
    "network: {cidr: 10.0.0.0/8}\n"
)
GCP_GROUP = "  - {{name: g{i}, machine_type: a3-megagpu-8g, count: 2}}\n"


def blueprint(cloud: str, groups: int) -> str:
    head, group = (AWS_HEAD, AWS_GROUP) if cloud == "aws" else (GCP_HEAD, GCP_GROUP)
    return head + "node_groups:\n" + "".join(group.format(i=i) for i in range(groups))


def floor(count: int) -> None:
    def program() -> None:
        import pulumi_aws as aws

        for i in range(count):
            aws.ec2.PlacementGroup(f"pg-{i}", strategy="cluster")

    run_program(program, project="floor", stack="bench")


def replay(plan: Plan) -> None:
    """Register `plan`'s resources again, bare: same types, names, parents and inputs."""
    import pulumi

    by_urn = {r.urn: r for r in plan.resources}

    def program() -> None:
        made: dict[str, pulumi.Resource] = {}

        def make(resource: PlannedResource) -> pulumi.Resource:
            if resource.urn in made:
                return made[resource.urn]
            parent = by_urn.get(resource.parent or "")
            opts = pulumi.ResourceOptions(parent=make(parent) if parent else None, protect=resource.protect)
            if resource.type.startswith("pulumi:providers:"):
                package = resource.type.rsplit(":", 1)[1]
                made[resource.urn] = pulumi.ProviderResource(package, resource.name, resource.inputs, opts)
            elif resource.custom:
                made[resource.urn] = pulumi.CustomResource(
                    resource.type, resource.name, resource.inputs, opts
                )
            else:
                made[resource.urn] = pulumi.ComponentResource(resource.type, resource.name, None, opts)
            return made[resource.urn]

        for resource in plan.resources:
            make(resource)

    run_program(program, project="replay", stack=plan.stack)


def best(run: Callable[[], object], repeat: int) -> float:
    """The least CPU time of `repeat` runs."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 8, 64, 128])
    parser.add_argument("--cloud", choices=["aws", "gcp"], default="aws")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    project = find_project(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        # Warm-up: provider modules import once per process (seconds for pulumi_gcp); measure steady state.
        path.write_text(blueprint(args.cloud, 1))
        start = time.perf_counter()
        plan_blueprint(path, env=None, project=project)
        first = time.perf_counter() - start
        floor(1)
        print(f"{args.cloud}: first plan in a fresh process (imports included): {first:.2f} s wall")
        header = (
            "groups",
            "resources",
            "plan s",
            "ms/res",
            "floor s",
            "ms/res",
            "x floor",
            "replay s",
            "x replay",
        )
        print("{:>6} {:>9} {:>7} {:>7} {:>8} {:>7} {:>8} {:>9} {:>9}".format(*header))
        for size in args.sizes:
            path.write_text(blueprint(args.cloud, size))
            made = plan_blueprint(path, env=None, project=project)
            count = len(made.resources)
            took = best(lambda: plan_blueprint(path, env=None, project=project), args.repeat)
            bare = best(lambda: floor(count), args.repeat)  # noqa: B023 - called before the loop moves on
            again = best(lambda: replay(made), args.repeat)  # noqa: B023
            print(
                f"{size:>6} {count:>9} {took:>7.2f} {took / count * 1000:>7.2f} {bare:>8.2f} "
                f"{bare / count * 1000:>7.2f} {took / bare:>8.2f} {again:>9.2f} {took / again:>9.2f}"
            )


if __name__ == "__main__":
    main()
