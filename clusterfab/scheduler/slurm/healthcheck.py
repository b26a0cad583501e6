"""The deep GPU health check, run on the Slurm controller by `clusterfab health --stack S [--level N]`.

Standard library only: it is copied beside the rendered files (bin/clusterfab-slurm-healthcheck) like the
node sync, and runs with the controller's python3 as root. It

1. takes the nodes that are IDLE now (a busy, drained or down node is reported as skipped, never
   touched) into a Slurm maintenance reservation (`Flags=MAINT`, `Users=root`; no `IGNORE_JOBS`, so no
   running job is affected), with a duration that ends it by itself if this program dies;
2. runs, per node and all nodes at once, the node's own health program (`clusterfab-slurm-health --mode
   report --level N`: the counters and `dcgmi diag -r N`) as a one-node job in the reservation; level 3
   is NVIDIA's "long" diagnostic for administrators (about 15 minutes);
3. runs nccl-tests' all_reduce_perf across pairs of the nodes that passed (two nodes, all their GPUs,
   one rank per GPU, one MPI world wired by `srun --mpi=pmix`), and compares the out-of-place bus
   bandwidth of the largest message with the floor the catalog records for the machine type (with its
   source); a pair below the floor is re-run with a node that passed, so only the slow node is blamed.
   A run that was not one world of every rank across both nodes (a build without MPI prints one
   single-rank test per process, with a bus bandwidth of 0) measured nothing: the check stops measuring,
   says why, blames no node and exits 2;
4. on node groups with InfiniBand, runs perftest's ib_write_bw between the same pairs, every HCA at
   once from GPU memory as Azure's node health checks do (clusterfab_slurm_ibpair, beside this program),
   and compares each HCA's bandwidth with the catalog's floor; without a floor it is reported only. A
   pair that fails is re-run with a node that passed, as in step 3; a node without ib_write_bw stops the
   step, as in step 3, and blames no node;
5. drains each failing node with the health contract's reason (`clusterfab-health: <CATEGORY>: ...`);
6. deletes the reservation (always: also on an error or an interrupt);
7. prints a report per node, as text or JSON (`schema_version` 1, docs/health.md); exit 0 when every
   node passed, 1 when one failed, 2 when the check could not complete (its `error`).

Every srun has a time limit and a timeout here; a job that outlives it is cancelled, so a hanging
diagnostic costs its timeout, never the reservation. The skip flags on the check's own jobs
(`healthchecks_prolog=off,healthchecks_epilog=off`) keep the node's prolog and epilog out of the way.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

try:  # in the clusterfab package: its tests and the CLI's import
    from clusterfab.scheduler.slurm import ibpair
except ImportError:  # on the controller: shipped beside this program (hostvars.health_files)
    import clusterfab_slurm_ibpair as ibpair  # type: ignore[import-not-found,no-redef]

SCHEMA_VERSION = 1
REASON_PREFIX = "clusterfab-health: "
MAX_REASON = 200
NODE_PROGRAM = "/usr/local/sbin/clusterfab-slurm-health"
SKIP_NODE_CHECKS = "healthchecks_prolog=off,healthchecks_epilog=off"
DCGM_SECONDS = {1: 60, 2: 300, 3: 1800}
"""The node program's own DCGM bounds (its CLUSTERFAB_HEALTH_DCGM_TIMEOUTS defaults)."""
MARGIN = 120
MPI_ENV = ("OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,vader,tcp")
"""Open MPI only wires the NCCL test (its rank list, the NCCL id, the results), so its own traffic stays
on TCP and shared memory: left to choose, Ubuntu's Open MPI 4.1 would take UCX on RoCE and InfiniBand
NICs, or its own libfabric on EFA, beside the vendor's stack that NCCL uses; what NCCL measures does not
go through MPI."""
NCCL_SECONDS = 600
GRACE = 15
"""Seconds an srun gets past its job's own limit before it is killed here and its job cancelled."""
_UNSAFE = re.compile(r"[^A-Za-z0-9 .,:;_/()#+%<>=-]+")
_FIELD = re.compile(r"(?:^|\s)([A-Za-z]+)=(\S*)")
_GPUS = re.compile(r"(?:^|,)gpu(?::[^:,()]+)?:(\d+)")


def drain_reason(category: str, detail: str) -> str:
    text = " ".join(_UNSAFE.sub(" ", detail).split())
    return f"{REASON_PREFIX}{category}: {text}"[:MAX_REASON].rstrip()


@dataclass(frozen=True)
class Node:
    name: str
    state: str
    partition: str
    gpus: int
    address: str = ""
    """NodeAddr, where ib_write_bw's client finds the server (empty: scontrol gave none; the name is used)."""

    @property
    def idle(self) -> bool:
        return self.state == "IDLE"


def parse_nodes(text: str) -> list[Node]:
    """`scontrol show nodes -o`: one line per node of `Key=Value` fields."""
    nodes = []
    for line in text.splitlines():
        fields = dict(_FIELD.findall(line))
        if "NodeName" not in fields:
            continue
        gres = _GPUS.search(fields.get("Gres", ""))
        nodes.append(
            Node(
                name=fields["NodeName"],
                state=fields.get("State", "UNKNOWN"),
                partition=fields.get("Partitions", "").split(",")[0],
                gpus=int(gres.group(1)) if gres else 0,
                address=fields.get("NodeAddr", ""),
            )
        )
    return nodes


@dataclass
class Verdict:
    node: str
    status: str = "healthy"
    """healthy | failed | skipped"""
    reason: str | None = None
    detail: str | None = None
    busbw_gbytes_per_s: float | None = None
    floor_gbytes_per_s: float | None = None
    partner: str | None = None
    failures: list[dict[str, str]] = field(default_factory=list)
    ib_write_bw: dict[str, Any] | None = None
    """On InfiniBand: {"partner", "gbps" (HCA -> Gb/s), "floor_gbps"}; None: not measured."""

    def fail(self, category: str, detail: str) -> None:
        reason = drain_reason(category, detail)
        self.failures.append({"category": category, "detail": detail, "reason": reason})
        if self.status != "failed":
            self.status, self.reason = "failed", reason


# ------------------------------------------------------------------------------------------ nccl-tests
def largest_busbw(text: str) -> float | None:
    """nccl-tests' out-of-place busbw (GB/s) of the largest message size in its result table.

    Rows (NVIDIA/nccl-tests src/util.cu): `size count type redop root` then time, algbw, busbw, #wrong
    out-of-place and the same in-place; comment lines start with `#` (`# Avg bus bandwidth : x` is the
    average over all sizes, which depends on the smallest size asked for, so it is not what is compared).
    """
    best: tuple[int, float] | None = None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 13 or line.lstrip().startswith("#") or not fields[0].isdigit():
            continue
        try:
            size, busbw = int(fields[0]), float(fields[7])
        except ValueError:
            continue
        if best is None or size >= best[0]:
            best = (size, busbw)
    return best[1] if best else None


_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s", re.MULTILINE)


def world(text: str) -> tuple[int, int]:
    """(ranks, hosts) of the test nccl-tests ran: its `# Using devices` lines, one per rank, which rank 0
    gathers from the whole MPI world (NVIDIA/nccl-tests src/common.cu, `#  Rank %2d Group %2d Pid %6d
    on %10s device %2d [...] %s`). Processes of a build without MPI each print their own rank 0."""
    found = _RANK.findall(text)
    return len({int(rank) for rank, _ in found}), len({host for _, host in found})


class SetupError(RuntimeError):
    """The check cannot measure on this cluster (a fault of the setup, not of a node)."""


# --------------------------------------------------------------------------------------------- running
Runner = Callable[[Sequence[str], float], "Ran"]


@dataclass(frozen=True)
class Ran:
    returncode: int | None
    stdout: str
    stderr: str


def run(argv: Sequence[str], timeout: float) -> Ran:
    """Run a command; kill its process group at the timeout and never wait long for it after that."""
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            out, err = "", ""
        return Ran(None, out or "", err or "")
    return Ran(proc.returncode, out, err)


@dataclass
class Check:
    """One deep check: its settings, the reservation, and what it found."""

    level: int
    groups: Mapping[str, Mapping[str, Any]]
    """Node group name -> {"machine_type", "min_pair_busbw_gbytes_per_s" (or null), "floor_source"}."""
    runner: Runner = run
    node_program: str = NODE_PROGRAM
    nccl_test: str = "/opt/nccl-tests/build/all_reduce_perf"
    nccl_args: Sequence[str] = ("-b", "512M", "-e", "8G", "-f", "2", "-g", "1")
    nccl_seconds: int = NCCL_SECONDS
    nccl_mpi: str = "pmix"
    """srun's --mpi plugin for the NCCL test: what wires its processes into one MPI world."""
    ib_program: str = "ib_write_bw"
    """perftest's ib_write_bw on the nodes, built with CUDA (a name is looked up on the node's PATH)."""
    ib_seconds: int = ibpair.SECONDS
    setup_error: str | None = None
    reservation: str = field(default_factory=lambda: f"clusterfab-health-{int(time.time())}")
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr)

    def scontrol(self, *args: str) -> Ran:
        return self.runner(["scontrol", *args], 30)

    def group_of(self, node: str) -> Mapping[str, Any]:
        matches = [g for g in self.groups if node.startswith(f"{g}-")]
        return self.groups[max(matches, key=len)] if matches else {}

    def srun(
        self,
        nodes: Sequence[Node],
        command: Sequence[str],
        seconds: int,
        tasks_per_node: int,
        options: Sequence[str] = (),
    ) -> Ran:
        gpus = nodes[0].gpus
        argv = [
            "srun",
            f"--reservation={self.reservation}",
            f"--partition={nodes[0].partition}",
            f"--nodelist={','.join(n.name for n in nodes)}",
            f"--nodes={len(nodes)}",
            f"--ntasks-per-node={tasks_per_node}",
            "--exclusive",
            f"--job-name={self.reservation}",
            f"--time={max(1, -(-seconds // 60))}",
            f"--extra={SKIP_NODE_CHECKS}",
            *([f"--gres=gpu:{gpus}"] if gpus else []),
            *options,
            *command,
        ]
        ran = self.runner(argv, seconds + GRACE)
        if ran.returncode is None:
            self.runner(
                ["scancel", f"--name={self.reservation}", f"--nodelist={','.join(n.name for n in nodes)}"], 30
            )
        return ran

    # ----------------------------------------------------------------------------------- the steps
    def select(self, nodes: Sequence[Node], wanted: Sequence[str] | None) -> list[Node]:
        chosen = [n for n in nodes if wanted is None or n.name in wanted]
        for node in chosen:
            if not node.idle:
                self.verdicts[node.name] = Verdict(node.name, "skipped", detail=f"not idle ({node.state})")
        return [n for n in chosen if n.idle]

    def reserve(self, nodes: Sequence[Node]) -> None:
        seconds = DCGM_SECONDS[self.level] + MARGIN + 4 * (self.nccl_seconds + GRACE)
        if any("ib_write_bw" in self.group_of(n.name) for n in nodes):
            seconds += 4 * (self.ib_seconds + GRACE)
        minutes = -(-seconds // 60)
        ran = self.scontrol(
            "create",
            "reservation",
            f"ReservationName={self.reservation}",
            "StartTime=now",
            f"Duration={minutes}",
            "Users=root",
            "Flags=MAINT",
            f"Nodes={','.join(n.name for n in nodes)}",
        )
        if ran.returncode != 0:
            raise RuntimeError(f"could not reserve the nodes: {(ran.stderr or ran.stdout).strip()}")

    def release(self) -> None:
        self.runner(["scancel", f"--name={self.reservation}"], 30)
        deadline = time.monotonic() + 60
        while True:
            ran = self.scontrol("delete", f"ReservationName={self.reservation}")
            if ran.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(2)  # jobs of the reservation are still ending
        if ran.returncode != 0:
            self.log(f"could not delete reservation {self.reservation}: {(ran.stderr or ran.stdout).strip()}")

    def diagnose(self, node: Node) -> Verdict:
        verdict = Verdict(node.name)
        seconds = DCGM_SECONDS[self.level] + MARGIN
        command = [self.node_program, "--mode", "report", "--level", str(self.level)]
        ran = self.srun([node], command, seconds, 1)
        if ran.returncode is None:
            verdict.fail("GPU", f"health check did not finish within {seconds}s")
            return verdict
        report = _last_json(ran.stdout)
        if report is None:
            error = (ran.stderr or ran.stdout).strip().splitlines()
            verdict.fail(
                "GPU", f"health check failed to run (exit {ran.returncode}): {error[-1] if error else ''}"
            )
            return verdict
        for failure in report.get("failures", []):
            verdict.fail(str(failure["category"]), str(failure["detail"]))
        return verdict

    def bandwidth(self, pair: Sequence[Node]) -> float | str | None:
        """The pair's busbw (GB/s), or an error text; SetupError when the run was not one test across
        the pair."""
        tasks = pair[0].gpus or 1
        command = ["env", *MPI_ENV, self.nccl_test, *self.nccl_args]
        ran = self.srun(pair, command, self.nccl_seconds, tasks, [f"--mpi={self.nccl_mpi}"])
        if ran.returncode is None:
            return f"all_reduce_perf did not finish within {self.nccl_seconds}s"
        busbw = largest_busbw(ran.stdout)
        if ran.returncode != 0 or busbw is None:
            error = (ran.stderr or ran.stdout).strip().splitlines()
            return f"all_reduce_perf failed (exit {ran.returncode}): {error[-1] if error else ''}"
        ranks, hosts = world(ran.stdout)
        if (ranks, hosts) != (len(pair) * tasks, len(pair)):
            raise SetupError(
                f"all_reduce_perf ran {ranks} rank(s) on {hosts} host(s), not one test of"
                f" {len(pair) * tasks} ranks on {len(pair)} nodes: {self.nccl_test} must be built with"
                f" MPI=1 and its MPI must take its world from srun --mpi={self.nccl_mpi}"
            )
        return busbw

    def measure_pairs(self, passed: Sequence[Node]) -> None:
        """The NCCL test across pairs of the nodes that passed."""
        if len(passed) < 2:
            for node in passed:
                self.verdicts[node.name].detail = "no partner for the NCCL test"
            return
        self.blame(passed, lambda pair: self._judge(pair, self.bandwidth(pair)))

    def blame(self, passed: Sequence[Node], test: Callable[[Sequence[Node]], str | None]) -> None:
        """Pair the nodes (the last of an odd number with the first); a pair that fails `test` (None:
        passed, else what is wrong) is retried with a node known good, so only the bad node fails."""
        pairs = [passed[i : i + 2] for i in range(0, len(passed) - 1, 2)]
        if len(passed) % 2:
            pairs.append([passed[-1], passed[0]])
        good: list[Node] = []
        suspects: list[tuple[Node, str]] = []
        for pair in pairs:
            slow = test(pair)
            if slow is None:
                good += [n for n in pair if n not in good]
            else:
                suspects += [(n, slow) for n in pair]
        for node, first in suspects:
            if node in good:
                continue
            partners = [g for g in good if g is not node]
            detail: str | None = first
            if partners:
                detail = test([node, partners[0]])
            if detail is None:
                good.append(node)
            else:
                self.verdicts[node.name].fail("PERF", detail)

    def _judge(self, pair: Sequence[Node], result: float | str | None) -> str | None:
        """None when the pair is fast enough (or has no floor), else what is wrong."""
        floor = self.group_of(pair[0].name).get("min_pair_busbw_gbytes_per_s")
        names = f"{pair[0].name} and {pair[1].name}"
        if isinstance(result, str):
            return f"{result} ({names})"
        for node in pair:
            verdict = self.verdicts[node.name]
            if verdict.busbw_gbytes_per_s is None or verdict.status == "failed":
                verdict.busbw_gbytes_per_s = result
                verdict.partner = pair[1].name if node is pair[0] else pair[0].name
                verdict.floor_gbytes_per_s = floor
        if result is None or floor is None or result >= float(floor):
            return None
        return f"all_reduce busbw {result:g} GB/s below floor {float(floor):g} ({names})"

    # ------------------------------------------------------------------------- InfiniBand pairs
    def measure_ib_pairs(self, passed: Sequence[Node]) -> None:
        """ib_write_bw across the same pairs, for the nodes of groups with InfiniBand."""
        nodes = [n for n in passed if "ib_write_bw" in self.group_of(n.name)]
        if len(nodes) >= 2:
            self.blame(nodes, self.ib_pair)

    def ib_pair(self, pair: Sequence[Node]) -> str | None:
        """Run ib_write_bw from pair[0] (server) to pair[1] (client) on every HCA, record what each HCA
        measured, and say what is wrong (None: nothing, or no floor to judge by); SetupError when
        ib_write_bw is not on a node."""
        settings = self.group_of(pair[0].name)["ib_write_bw"]
        names = [n.name for n in pair]
        command = ibpair.command(pair[0].address or pair[0].name, self.ib_program, settings)
        ran = self.srun(pair, command, self.ib_seconds, int(settings["hcas"]), ["--kill-on-bad-exit=1"])
        if ran.returncode is None:
            return f"ib_write_bw did not finish within {self.ib_seconds}s ({names[0]} and {names[1]})"
        if missing := ibpair.missing_program(ran.stderr):
            raise SetupError(f"{missing}: the InfiniBand pair test needs perftest's ib_write_bw (with CUDA)")
        measured = ibpair.parse(ran.stdout, int(settings["message_size_bytes"]))
        floor = settings.get("min_gbps")
        for node in pair:
            verdict = self.verdicts[node.name]
            if verdict.ib_write_bw is None or node is pair[0]:  # a retry re-measures its suspect, pair[0]
                partner = pair[1].name if node is pair[0] else pair[0].name
                verdict.ib_write_bw = {"partner": partner, "gbps": measured, "floor_gbps": floor}
        if ran.returncode != 0:
            last = ibpair.last_words(ran.stderr, ran.stdout)
            return f"ib_write_bw failed (exit {ran.returncode}): {last} ({names[0]} and {names[1]})"
        return ibpair.shortfall(measured, int(settings["hcas"]), floor, names)

    def not_measured(self, nodes: Sequence[Node], step: str, error: str) -> None:
        """A pair step the setup kept from measuring: the check's error; no node is blamed for it."""
        self.setup_error = error if self.setup_error is None else f"{self.setup_error}; {error}"
        self.log(f"clusterfab health: {step} not measured: {error}")
        for node in nodes:
            verdict = self.verdicts[node.name]
            if step == "ib_write_bw":
                verdict.ib_write_bw = None
            if verdict.status != "healthy":
                continue
            if step != "ib_write_bw":
                verdict.busbw_gbytes_per_s = verdict.floor_gbytes_per_s = None
                verdict.partner = None
            note = f"{step} not measured (see the error)"
            verdict.detail = f"{verdict.detail}; {note}" if verdict.detail else f"DCGM passed; {note}"

    def execute(self, nodes: Sequence[Node], wanted: Sequence[str] | None) -> list[Verdict]:
        candidates = self.select(nodes, wanted)
        if candidates:
            self.reserve(candidates)
            try:
                with ThreadPoolExecutor(max_workers=min(32, len(candidates))) as pool:
                    for verdict in pool.map(self.diagnose, candidates):
                        self.verdicts[verdict.node] = verdict
                passed = [n for n in candidates if self.verdicts[n.name].status == "healthy"]
                try:
                    self.measure_pairs(passed)
                except SetupError as err:
                    self.not_measured(candidates, "NCCL test", str(err))
                try:
                    self.measure_ib_pairs(passed)
                except SetupError as err:
                    self.not_measured(candidates, "ib_write_bw", str(err))
            finally:
                self.release()
            for node in candidates:
                verdict = self.verdicts[node.name]
                if verdict.reason:
                    self.scontrol(
                        "update", f"NodeName={node.name}", "State=DRAIN", f"Reason={verdict.reason}"
                    )
        return [self.verdicts[name] for name in sorted(self.verdicts)]


def _last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict) and "failures" in data:
                return data
    return None


def report(
    verdicts: Sequence[Verdict], level: int, reservation: str, error: str | None = None
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "level": level,
        "reservation": reservation,
        "healthy": error is None and all(v.status != "failed" for v in verdicts),
        "error": error,
        "nodes": [
            {
                "node": v.node,
                "status": v.status,
                "reason": v.reason,
                "detail": v.detail,
                "busbw_gbytes_per_s": v.busbw_gbytes_per_s,
                "floor_gbytes_per_s": v.floor_gbytes_per_s,
                "partner": v.partner,
                "failures": v.failures,
                **({"ib_write_bw": v.ib_write_bw} if v.ib_write_bw is not None else {}),
            }
            for v in verdicts
        ],
    }


def text_report(data: Mapping[str, Any]) -> str:
    lines = [f"deep health check, DCGM level {data['level']} (reservation {data['reservation']}):"]
    for node in data["nodes"]:
        bandwidth = ""
        if node["busbw_gbytes_per_s"] is not None:
            floor = node["floor_gbytes_per_s"]
            bandwidth = f" busbw {node['busbw_gbytes_per_s']:g} GB/s with {node['partner']}" + (
                f" (floor {floor:g})" if floor is not None else " (no floor in the catalog)"
            )
        why = node["reason"] or node["detail"] or ""
        lines.append(f"  {node['node']:<24} {node['status']:<8}{bandwidth}{'  ' + why if why else ''}")
        if ib := node.get("ib_write_bw"):
            lines.append(f"  {'':<24} {'':<8} {_ib_line(ib)}")
    if data.get("error"):
        lines.append(f"the check did not complete: {data['error']}")
    return "\n".join(lines)


def _ib_line(ib: Mapping[str, Any]) -> str:
    gbps = ", ".join(f"{hca} {value:g}" for hca, value in ib["gbps"].items()) or "no HCA measured"
    floor = ib["floor_gbps"]
    judged = f"(floor {floor:g})" if floor is not None else "(no floor in the catalog)"
    return f"ib_write_bw Gb/s with {ib['partner']}: {gbps} {judged}"


def main(argv: Sequence[str] | None = None, runner: Runner = run) -> int:
    parser = argparse.ArgumentParser(description="clusterfab's deep GPU health check (on the controller).")
    parser.add_argument("--level", type=int, choices=(1, 2, 3), default=3)
    parser.add_argument("--nodes", help="comma-separated node names (default: every idle node)")
    parser.add_argument("--config", help="healthcheck.json beside this program (node groups and floors)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    settings: dict[str, Any] = {}
    if args.config:
        with open(args.config, encoding="utf-8") as handle:
            settings = json.load(handle)
    check = Check(
        level=args.level,
        groups=settings.get("groups", {}),
        runner=runner,
        node_program=settings.get("node_program", NODE_PROGRAM),
        nccl_test=settings.get("nccl_test", "/opt/nccl-tests/build/all_reduce_perf"),
        nccl_seconds=int(settings.get("nccl_seconds", NCCL_SECONDS)),
        nccl_mpi=str(settings.get("nccl_mpi", "pmix")),
        ib_program=str(settings.get("ib_write_bw_program", "ib_write_bw")),
        ib_seconds=int(settings.get("ib_seconds", ibpair.SECONDS)),
    )
    ran = runner(["scontrol", "show", "nodes", "-o"], 30)
    if ran.returncode != 0:
        print(f"clusterfab health: scontrol failed: {ran.stderr.strip()}", file=sys.stderr)
        return 2
    wanted = args.nodes.split(",") if args.nodes else None
    try:
        verdicts = check.execute(parse_nodes(ran.stdout), wanted)
    except RuntimeError as err:
        print(f"clusterfab health: {err}", file=sys.stderr)
        return 2
    data = report(verdicts, args.level, check.reservation, check.setup_error)
    print(json.dumps(data, sort_keys=True) if args.json else text_report(data))
    return 2 if check.setup_error else 0 if data["healthy"] else 1


if __name__ == "__main__":
    sys.exit(main())
