"""Wall time of the offline CLI verbs (validate, cost, catalog, schema), next to the bare interpreter.

Run: uv run python benchmarks/cli_speed.py [--runs N]
Prints a table; never fails on time. Each command runs in a fresh process, as a user runs it. The
floor is `python -c "import pydantic, ruamel.yaml"`: the two libraries validate cannot do without;
the `x floor` column is each command's least CPU time (user + system of the child process) over the
floor's (the target for validate is <= 2x). The stack floor is the least program built the way the CLI
is: a one-command Typer app that validates one single-field pydantic model, with ruamel.yaml imported;
`x stack` is each command over it, the part of a command's time that is clusterfab's own. CPU time is
the figure to compare on a shared machine (wall time also counts the time other processes hold the
cores), and its minimum over the runs the one least disturbed by them. Commands run with bytecode caching
on (PYTHONDONTWRITEBYTECODE removed), as on a user's machine: the warm-up run writes the .pyc files,
the measured runs use them.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = "blueprints/examples/aws-p5-efa-fsx.yaml"
AZURE_EXAMPLE = "blueprints/examples/azure-ndv5-ib.yaml"
CLI = [sys.executable, "-m", "clusterfab"]

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

FLOOR = "python -c 'import pydantic, ruamel.yaml' (floor)"
STACK = "typer app validating one pydantic model (stack)"
STACK_PROGRAM = """
import sys

import ruamel.yaml
import typer
from pydantic import BaseModel


class One(BaseModel):
    name: str


app = typer.Typer()


@app.command()
def check(name: str) -> None:
    One(name=name)


sys.argv = ["stack", "x"]
app()
"""
COMMANDS: list[tuple[str, list[str]]] = [
    ("python -c pass", [sys.executable, "-c", "pass"]),
    (FLOOR, [sys.executable, "-c", "import pydantic, ruamel.yaml"]),
    (STACK, [sys.executable, "-c", STACK_PROGRAM]),
    ("import clusterfab.cli", [sys.executable, "-c", "import clusterfab.cli"]),
    ("clusterfab --help", [*CLI, "--help"]),
    ("clusterfab validate (example, 3 envs)", [*CLI, "validate", EXAMPLE]),
    ("clusterfab validate --env dev", [*CLI, "validate", EXAMPLE, "--env", "dev"]),
    ("clusterfab validate --format json", [*CLI, "validate", EXAMPLE, "-f", "json"]),
    ("clusterfab cost (example)", [*CLI, "cost", EXAMPLE]),
    ("clusterfab validate (Azure example)", [*CLI, "validate", AZURE_EXAMPLE]),
    ("clusterfab cost (Azure example)", [*CLI, "cost", AZURE_EXAMPLE]),
    ("clusterfab cost --format json --hours 336", [*CLI, "cost", EXAMPLE, "-f", "json", "--hours", "336"]),
    (
        "clusterfab cost --env dev --format markdown",
        [*CLI, "cost", EXAMPLE, "--env", "dev", "-f", "markdown"],
    ),
    ("clusterfab catalog --format json", [*CLI, "catalog", "-f", "json"]),
    ("clusterfab catalog (tables)", [*CLI, "catalog"]),
    ("clusterfab schema", [*CLI, "schema"]),
]


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(argv: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each run."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu, start = _child_cpu(), time.perf_counter()
        subprocess.run(
            argv, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
        walls.append(time.perf_counter() - start)
        cpus.append(_child_cpu() - cpu)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    header = ("command", "wall median ms", "cpu median ms", "cpu min ms", "x floor", "x stack")
    print(
        f"{header[0]:<48} {header[1]:>14} {header[2]:>13} {header[3]:>10} {header[4]:>8} {header[5]:>8}"
        f"  ({args.runs} runs)"
    )
    floor: float | None = None
    stack: float | None = None
    for label, argv in COMMANDS:
        measure(argv, 1)  # warm the OS file cache, the bytecode and the catalog cache
        walls, cpus = measure(argv, args.runs)
        cpu = min(cpus)
        if label == FLOOR:
            floor = cpu
        if label == STACK:
            stack = cpu
        ratio = f"{cpu / floor:>8.2f}" if floor else f"{'':>8}"
        over_stack = f"{cpu / stack:>8.2f}" if stack else f"{'':>8}"
        wall, median = statistics.median(walls) * 1000, statistics.median(cpus) * 1000
        print(f"{label:<48} {wall:>14.0f} {median:>13.0f} {cpu * 1000:>10.0f} {ratio} {over_stack}")


if __name__ == "__main__":
    main()
