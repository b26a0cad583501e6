"""Offline plan time for blueprints of 1 to 128 node groups, next to the bare mock-engine floor.

The floor registers the same number of plain resources (aws.ec2.PlacementGroup) under the same mock
engine with no components, so the difference is what clusterfab's program and components cost.
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

from clusterfab.plan.engine import run_program
from clusterfab.plan.project import find_project, plan_blueprint

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
        header = ("node groups", "resources", "plan s", "ms/res", "floor s", "floor ms/res", "x floor")
        print("{:>11} {:>10} {:>8} {:>8} {:>8} {:>13} {:>8}".format(*header))
        for size in args.sizes:
            path.write_text(blueprint(args.cloud, size))
            count = len(plan_blueprint(path, env=None, project=project).resources)
            took = best(lambda: plan_blueprint(path, env=None, project=project), args.repeat)
            bare = best(lambda: floor(count), args.repeat)  # noqa: B023 - called before the loop moves on
            print(
                f"{size:>11} {count:>10} {took:>8.2f} {took / count * 1000:>8.2f} {bare:>8.2f} "
                f"{bare / count * 1000:>13.2f} {took / bare:>8.2f}"
            )


if __name__ == "__main__":
    main()
