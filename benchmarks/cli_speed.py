"""Wall time of the offline CLI verbs (validate, cost, catalog, schema), next to the bare interpreter.

Run: uv run python benchmarks/cli_speed.py [--runs N]
Prints a table; never fails on time. Each command runs in a fresh process, as a user runs it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = "blueprints/examples/aws-p5-efa-fsx.yaml"

COMMANDS: list[tuple[str, list[str]]] = [
    ("python -c pass (floor)", [sys.executable, "-c", "pass"]),
    ("import clusterfab.cli", [sys.executable, "-c", "import clusterfab.cli"]),
    ("clusterfab --help", [sys.executable, "-m", "clusterfab", "--help"]),
    ("clusterfab validate (example, 3 envs)", [sys.executable, "-m", "clusterfab", "validate", EXAMPLE]),
    (
        "clusterfab validate --env dev",
        [sys.executable, "-m", "clusterfab", "validate", EXAMPLE, "--env", "dev"],
    ),
    (
        "clusterfab validate --format json",
        [sys.executable, "-m", "clusterfab", "validate", EXAMPLE, "-f", "json"],
    ),
    ("clusterfab cost (example)", [sys.executable, "-m", "clusterfab", "cost", EXAMPLE]),
    (
        "clusterfab cost --format json --hours 336",
        [sys.executable, "-m", "clusterfab", "cost", EXAMPLE, "-f", "json", "--hours", "336"],
    ),
    (
        "clusterfab cost --env dev --format markdown",
        [sys.executable, "-m", "clusterfab", "cost", EXAMPLE, "--env", "dev", "-f", "markdown"],
    ),
    ("clusterfab catalog --format json", [sys.executable, "-m", "clusterfab", "catalog", "-f", "json"]),
    ("clusterfab catalog (tables)", [sys.executable, "-m", "clusterfab", "catalog"]),
    ("clusterfab schema", [sys.executable, "-m", "clusterfab", "schema"]),
]


def measure(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"{'command':<42} {'median ms':>10} {'min ms':>8} {'max ms':>8}   ({args.runs} runs each)")
    for label, argv in COMMANDS:
        measure(argv, 1)  # warm the OS file cache
        times = measure(argv, args.runs)
        print(
            f"{label:<42} {statistics.median(times) * 1000:>10.0f} {min(times) * 1000:>8.0f} "
            f"{max(times) * 1000:>8.0f}"
        )


if __name__ == "__main__":
    main()
