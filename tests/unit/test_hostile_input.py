"""Hostile and absurd input: every case a located finding (exit 1) or a usage error (exit 2), never a
hang, a crash or a traceback. Each runs as a user runs it, in a fresh process under a time limit
(a guard against hangs, not a speed test) and an address-space limit (memory stays bounded)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

HEAD = "version: 1\nname: hostile\ncloud: aws\nregion: us-east-1\nzone: use1-az6\n"
GROUP = "node_groups:\n  - {name: g, machine_type: p5.48xlarge, count: 2}\n"
MEMORY_LIMIT = 2 << 30
"""Address space of the CLI process: ample for the interpreter, small for a bomb."""


def _merge_bomb() -> str:
    # 16 lines; each mapping merges 8 copies of the one before: 8**15 mappings if expanded.
    lines = ["x0: &x0 {}"]
    lines += [f"x{i}: &x{i} {{<<: [{', '.join([f'*x{i - 1}'] * 8)}]}}" for i in range(1, 16)]
    return "\n".join(lines) + "\n"


def _merge_chain() -> str:
    lines = [HEAD, "a0: &a0 {k: 1}"]
    lines += [f"a{i}: &a{i} {{<<: *a{i - 1}}}" for i in range(1, 400)]
    return "\n".join(lines) + "\n"


CASES: dict[str, tuple[str, tuple[str, int, int, str]]] = {
    # name: (file content, (code, line, column, message start) of the first finding)
    "merge-key bomb": (_merge_bomb(), ("BP004", 2, 5, "the document expands to more than 50,000")),
    "recursive merge": (HEAD + "labels: &a {<<: *a}\n", ("BP004", 6, 9, "recursive YAML alias")),
    "recursive alias": (HEAD + "labels: &a {x: *a}\n", ("BP004", 6, 9, "recursive YAML alias")),
    "500 levels of nesting": (
        HEAD + "labels:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(500)) + "  " * 501 + "v: 1\n",
        ("BP004", 70, 129, "the document nests more than 64 levels deep"),
    ),
    "30,000 levels of flow nesting": (
        HEAD + "labels: " + "[" * 30_000 + "]" * 30_000 + "\n",
        ("BP004", 6, 72, "the document nests more than 64 levels deep"),
    ),
    "merge chain 400 deep": (_merge_chain(), ("BP004", 7, 13, "the document nests more than 64 levels")),
    "100,000 values": (
        HEAD + "labels: [" + "1," * 100_000 + "1]\n",
        ("BP004", 6, 199_980, "the document holds"),
    ),
    "count 1e29": (
        HEAD + "node_groups:\n  - {name: g, machine_type: p5.48xlarge, count: 1e29}\n",
        ("BP008", 7, 49, "expected an integer, got 1e+29"),
    ),
    "count 10**29": (
        HEAD + "node_groups:\n  - {name: g, machine_type: p5.48xlarge, count: " + "1" + "0" * 29 + "}\n",
        ("BP009", 7, 49, "100000000000000000000000000000 (an integer) must be at most 10,000"),
    ),
    "storage capacity 10**40": (
        HEAD + GROUP + "storage: [{name: s, kind: lustre, capacity_gib: 1" + "0" * 40 + "}]\n",
        ("BP009", 8, 49, "1" + "0" * 40 + " (an integer) must be at most 100,000,000"),
    ),
    "budget .inf": (
        HEAD + GROUP + "budget: {max_hourly_usd: .inf}\n",
        ("BP009", 8, 26, ".inf (infinity) is not a finite number"),
    ),
    "budget .nan": (
        HEAD + GROUP + "budget: {max_monthly_usd: .nan}\n",
        ("BP009", 8, 27, ".nan (not a number) is not a finite number"),
    ),
    "budget 1e400": (
        HEAD + GROUP + "budget: {max_hourly_usd: 1e400}\n",
        ("BP009", 8, 26, ".inf (infinity) is not a finite number"),
    ),
}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _clusterfab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clusterfab", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=60,
        preexec_fn=_limit_memory,
    )


NUMERIC = ["count 10**29", "storage capacity 10**40", "budget .inf", "budget 1e400"]
"""The cases that crashed cost estimates (Decimal) and planned a budget of "inf": run by cost and plan
too (diff validates its sides as they do); the others stop in the loader, which all commands share."""
RUNS = [("validate", name) for name in CASES] + [(c, n) for c in ("cost", "plan") for n in NUMERIC]


@pytest.mark.parametrize(("command", "name"), RUNS, ids=[f"{c}-{n}" for c, n in RUNS])
def test_hostile_blueprint_is_a_located_finding(name: str, command: str, tmp_path: Path) -> None:
    content, (code, line, column, message) = CASES[name]
    path = tmp_path / "hostile.yaml"
    path.write_text(content)
    proc = _clusterfab(command, str(path), "--format", "json")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    first = next(f for f in findings if f["code"] == code)
    assert (first["line"], first["column"]) == (line, column), first
    assert first["message"].startswith(message), first
    assert all(f["line"] > 0 for f in findings if f["severity"] == "error"), findings


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("/dev/zero", "file is larger than 1 MiB; a blueprint is at most 1 MiB"),
        ("/dev/null", "file is empty"),
    ],
)
def test_devices_are_read_with_a_bound(source: str, message: str) -> None:
    proc = _clusterfab("validate", source, "--format", "json")
    assert proc.returncode == 1
    (finding,) = json.loads(proc.stdout)["findings"]
    assert (finding["code"], finding["message"]) == ("BP001", message)


@pytest.mark.parametrize("hours", ["1e25", "inf", "nan", "-1", "0", "100001"])
def test_absurd_run_length_is_a_usage_error(hours: str) -> None:
    proc = _clusterfab("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--hours", hours)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: --hours must be a positive number of hours up to 100,000")
    assert "Traceback" not in proc.stderr
