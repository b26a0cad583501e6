"""Slurm's state as Prometheus metrics, served on the controller for the cluster's Prometheus.

No packaged Slurm exporter exists for Ubuntu 24.04 or Debian (and Slurm 23.11 has no metrics endpoint of
its own), so the controller runs this one: standard library only, copied beside the rendered files like
the node sync, answering each scrape from `scontrol show nodes -o`, `scontrol show jobs -o` and
`scontrol show assoc_mgr flags=qos`. Node counts keep the names of vpenso/prometheus-slurm-exporter
(`slurm_nodes_drain`, ...), which dashboards and the alert rules use; the rest is clusterfab's:

- `slurm_nodes_<state>`: nodes by state (a drained or draining node counts as drain whatever it runs);
- `slurm_gpus_total`, `slurm_gpus_alloc`, `slurm_gpus_idle`: GPUs configured, allocated, free on nodes
  that take jobs;
- `slurm_account_jobs{account,state}`: jobs per account (team) and state;
- `clusterfab_slurm_job_gpus{job_id,user,account,partition}`: GPUs each running job holds, from which
  recording rules integrate GPU-hours per job and per team;
- `clusterfab_slurm_qos_gpu_minutes_used{qos}` / `..._limit{qos}`: each team's monthly GPU-minute budget
  (GrpTRESMins) and how much of it is spent;
- with `--counts` (the node programs' running totals, nodes/counts.py):
  `clusterfab_slurm_node_program_runs_total{program}`,
  `clusterfab_slurm_node_program_last_run_timestamp_seconds{program}` and
  `clusterfab_slurm_node_actions_total{program,action,outcome}` (the sync's actions by kind, nodes resume
  created or failed to create, by the cloud's error code as the action of a failure, instances deleted).

`collect` is the pure part (text in, metrics out); `main` serves it.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NODE_STATES = ("alloc", "comp", "down", "drain", "fail", "idle", "maint", "mix", "resv", "unknown")
_BASE_STATES = {
    "ALLOCATED": "alloc",
    "COMPLETING": "comp",
    "DOWN": "down",
    "FAIL": "fail",
    "FUTURE": "unknown",
    "IDLE": "idle",
    "MIXED": "mix",
    "UNKNOWN": "unknown",
}
_FIELD = re.compile(r"(?:^|\s)([A-Za-z]+)=(\S*)")


@dataclass
class Metrics:
    """Samples by metric name: (labels, value)."""

    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)
    help: dict[str, str] = field(default_factory=dict)
    counters: set[str] = field(default_factory=set)

    def add(self, name: str, value: float, help_text: str, **labels: str) -> None:
        self.help.setdefault(name, help_text)
        self.samples.setdefault(name, []).append((labels, value))

    def add_counter(self, name: str, value: float, help_text: str, **labels: str) -> None:
        self.counters.add(name)
        self.add(name, value, help_text, **labels)

    def text(self) -> str:
        """The Prometheus text exposition format."""
        lines = []
        for name, samples in self.samples.items():
            kind = "counter" if name in self.counters else "gauge"
            lines += [f"# HELP {name} {self.help[name]}", f"# TYPE {name} {kind}"]
            for labels, value in samples:
                rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
                number = _number(value)
                lines.append(f"{name}{{{rendered}}} {number}" if rendered else f"{name} {number}")
        return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    """Every digit: `:g` keeps six (GPU-minutes in the millions, epoch seconds would lose theirs)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _fields(line: str) -> dict[str, str]:
    return dict(_FIELD.findall(line))


def _gpus(tres: str) -> int:
    """The gres/gpu count of a TRES string (`cpu=8,mem=64G,gres/gpu=8`), 0 without one."""
    for item in tres.split(","):
        key, _, value = item.partition("=")
        if key == "gres/gpu":
            return int(value)
    return 0


def node_state(state: str) -> str:
    """A node's state for the counts: DRAIN (drained or draining) and MAINT/RESERVED flags first."""
    base, *flags = state.split("+")
    if "DRAIN" in flags:
        return "drain"
    if "MAINTENANCE" in flags:
        return "maint"
    if "RESERVED" in flags and base == "IDLE":
        return "resv"
    return _BASE_STATES.get(base.rstrip("*"), "unknown")


def collect_nodes(out: str, metrics: Metrics) -> None:
    counts: Counter[str] = Counter()
    total = allocated = free = 0
    for line in out.splitlines():
        fields = _fields(line)
        if "NodeName" not in fields:
            continue
        state = node_state(fields.get("State", "UNKNOWN"))
        counts[state] += 1
        configured, used = _gpus(fields.get("CfgTRES", "")), _gpus(fields.get("AllocTRES", ""))
        total += configured
        allocated += used
        if state in ("idle", "mix", "alloc"):
            free += configured - used
    for state in NODE_STATES:
        metrics.add(f"slurm_nodes_{state}", counts[state], f"Nodes in state {state}")
    metrics.add("slurm_gpus_total", total, "GPUs configured on all nodes")
    metrics.add("slurm_gpus_alloc", allocated, "GPUs allocated to jobs")
    metrics.add("slurm_gpus_idle", free, "GPUs free on nodes that take jobs")


def collect_jobs(out: str, metrics: Metrics) -> None:
    per_account: Counter[tuple[str, str]] = Counter()
    for line in out.splitlines():
        fields = _fields(line)
        if "JobId" not in fields:
            continue
        account, state = fields.get("Account", ""), fields.get("JobState", "UNKNOWN").lower()
        per_account[(account, state)] += 1
        gpus = _gpus(fields.get("AllocTRES", ""))
        if state == "running" and gpus:
            metrics.add(
                "clusterfab_slurm_job_gpus",
                gpus,
                "GPUs a running job holds",
                job_id=fields["JobId"],
                user=fields.get("UserId", "").split("(")[0],
                account=account,
                partition=fields.get("Partition", ""),
            )
    for (account, state), count in sorted(per_account.items()):
        metrics.add("slurm_account_jobs", count, "Jobs per account and state", account=account, state=state)


_QOS = re.compile(r"^QOS=([^(\s]+)\(\d+\)", re.MULTILINE)
_GPU_MINUTES = re.compile(r"gres/gpu=(N|\d+)\((\d+)\)")


def collect_qos(out: str, metrics: Metrics) -> None:
    """GrpTRESMins of gres/gpu per QOS: the limit (absent when N) and the minutes used (`N(used)`)."""
    starts = [(m.start(), m.group(1)) for m in _QOS.finditer(out)]
    for index, (start, name) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(out)
        block = out[start:end]
        line = next((x for x in block.splitlines() if x.strip().startswith("GrpTRESMins=")), "")
        match = _GPU_MINUTES.search(line)
        if match is None:
            continue
        limit, used = match.groups()
        metrics.add(
            "clusterfab_slurm_qos_gpu_minutes_used", int(used), "GPU-minutes a QOS has used", qos=name
        )
        if limit != "N":
            metrics.add(
                "clusterfab_slurm_qos_gpu_minutes_limit", int(limit), "GPU-minute budget of a QOS", qos=name
            )


COUNTS_FORMAT = 1
"""The node programs' totals file format this exporter reads (nodes/counts.py writes it)."""


def collect_node_programs(totals: object, metrics: Metrics) -> None:
    """The node programs' running totals: counters (they only grow; a new file is a counter reset)."""
    if not isinstance(totals, dict) or totals.get("format") != COUNTS_FORMAT:
        return
    for program, entry in sorted(totals.get("programs", {}).items()):
        metrics.add_counter(
            "clusterfab_slurm_node_program_runs_total",
            entry["runs"],
            "Runs of a node program",
            program=program,
        )
        metrics.add(
            "clusterfab_slurm_node_program_last_run_timestamp_seconds",
            entry["last_run"],
            "When a node program last ran (seconds since the epoch)",
            program=program,
        )
        for outcome in ("done", "failed"):
            for action, count in sorted(entry.get(outcome, {}).items()):
                metrics.add_counter(
                    "clusterfab_slurm_node_actions_total",
                    count,
                    "Actions of the node programs by kind and outcome",
                    program=program,
                    action=action,
                    outcome=outcome,
                )


def read_counts(path: str | None) -> object:
    """The totals file's content; None when there is no file (yet) or it cannot be read."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


Run = Callable[[Sequence[str]], str]


def _scontrol(argv: Sequence[str]) -> str:
    return subprocess.run(["scontrol", *argv], capture_output=True, text=True, check=True, timeout=20).stdout


def collect(run: Run = _scontrol, counts: str | None = None) -> Metrics:
    metrics = Metrics()
    collect_node_programs(read_counts(counts), metrics)
    collectors: Iterable[tuple[Sequence[str], Callable[[str, Metrics], None]]] = (
        (("show", "nodes", "-o"), collect_nodes),
        (("show", "jobs", "-o"), collect_jobs),
        (("show", "assoc_mgr", "flags=qos"), collect_qos),
    )
    up = 1
    for argv, collector in collectors:
        try:
            collector(run(argv), metrics)
        except (subprocess.SubprocessError, OSError, ValueError):
            up = 0
    metrics.add("clusterfab_slurm_exporter_up", up, "Whether every scontrol query of this scrape answered")
    return metrics


def serve(address: str, port: int, run: Run = _scontrol, counts: str | None = None) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/metrics":
                self.send_error(404)
                return
            body = collect(run, counts).text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer((address, port), Handler).serve_forever()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Slurm's state as Prometheus metrics")
    parser.add_argument("--listen", default="127.0.0.1:8080", help="address:port to serve /metrics on")
    parser.add_argument("--once", action="store_true", help="print one scrape and exit")
    parser.add_argument("--counts", help="the node programs' running totals (JSON) to serve as well")
    args = parser.parse_args(argv)
    if args.once:
        print(collect(counts=args.counts).text(), end="")
        return 0
    address, _, port = args.listen.rpartition(":")
    serve(address, int(port), counts=args.counts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
