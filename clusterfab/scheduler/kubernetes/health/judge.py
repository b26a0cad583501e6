"""What the deep check's pods reported, judged: `dcgmi diag -j` output, the all-reduce's result line and the
network NCCL chose; each node's verdict; the patch that takes a failed node out of scheduling; the report.

The verdicts and the report are the Slurm check's (docs/health.md): a failure has a category and a
detail, its reason is `clusterfab-health: <CATEGORY>: <detail>` (at most 200 characters of a safe
alphabet), and the node's first reason is what the node carries: here in the taint's value (the category)
and an annotation (the reason), where Slurm keeps it as the drain reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterfab.scheduler.healthreport import REPORT_SCHEMA_VERSION
from clusterfab.scheduler.kubernetes.health.allreduce import MARK

REASON_PREFIX = "clusterfab-health: "
MAX_REASON = 200
UNHEALTHY_TAINT = "clusterfab.dev/unhealthy"
"""The NoSchedule taint of a node the check failed; its value is the failure's category."""
REASON_ANNOTATION = "clusterfab.dev/unhealthy-reason"
_UNSAFE = re.compile(r"[^A-Za-z0-9 .,:;_/()#+%<>=-]+")
_NETWORK = re.compile(r"NCCL INFO Using network (\S+)")


def reason(category: str, detail: str) -> str:
    """The health contract's reason (docs/health.md, "Drain reasons")."""
    text = " ".join(_UNSAFE.sub(" ", detail).split())
    return f"{REASON_PREFIX}{category}: {text}"[:MAX_REASON].rstrip()


@dataclass
class Verdict:
    node: str
    status: str = "healthy"
    """healthy | failed | skipped"""
    detail: str | None = None
    busbw_gbytes_per_s: float | None = None
    floor_gbytes_per_s: float | None = None
    partner: str | None = None
    failures: list[dict[str, str]] = field(default_factory=list)

    def fail(self, category: str, detail: str) -> None:
        self.failures.append({"category": category, "detail": detail, "reason": reason(category, detail)})
        self.status = "failed"

    @property
    def reason(self) -> str | None:
        return self.failures[0]["reason"] if self.failures else None


# ------------------------------------------------------------------------------------------------ DCGM
def dcgm_failures(log: str, level: int) -> list[tuple[str, str]]:
    """(category, detail) of each failure in a DCGM pod's log: nv-hostengine's lines, then `dcgmi diag -r
    N -j`'s document (DCGM 4.x, tests/fixtures/health/SOURCES.md): {"DCGM Diagnostic": {"test_categories":
    [{"category", "tests": [{"name", "results": [{"entity_id", "status", "warnings": [{"warning"}]}],
    "test_summary": {"status"}}]}]}}, or only "runtime_error" when the diagnostic could not run. A result
    that failed fails the node; Warn, Skip and Not Run do not."""
    diag = _diag_document(log)
    if diag is None:
        last = next((line for line in reversed(log.strip().splitlines()) if line.strip()), "")
        return [("DCGM", f"level {level}: dcgmi printed no diagnostic: {last.strip()}".rstrip(": "))]
    if diag.get("runtime_error"):
        return [("DCGM", f"level {level} could not run: {str(diag['runtime_error']).strip()}")]
    failures = []
    for category in diag.get("test_categories", []):
        for test in category.get("tests", []):
            name = test.get("name", "?")
            failed = [r for r in test.get("results", []) if r.get("status") == "Fail"]
            for result in failed:
                where = f"level {level} {name} failed on GPU {result.get('entity_id')}"
                failures.append(("DCGM", where + _first_warning(result)))
            if not failed and test.get("test_summary", {}).get("status") == "Fail":
                failures.append(
                    ("DCGM", f"level {level} {name} failed{_first_warning(test['test_summary'])}")
                )
    return failures


def _diag_document(log: str) -> dict[str, Any] | None:
    """The JSON document dcgmi printed (over many lines), from the first line that opens one."""
    lines = log.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("{"):
            try:
                data, _ = json.JSONDecoder().raw_decode("\n".join(lines[index:]))
            except ValueError:
                continue
            diag = data.get("DCGM Diagnostic") if isinstance(data, dict) else None
            if isinstance(diag, dict):
                return diag
    return None


def _first_warning(entry: Mapping[str, Any]) -> str:
    warnings = entry.get("warnings") or []
    return f": {warnings[0].get('warning', '')}" if warnings else ""


# ----------------------------------------------------------------------------------------------- NCCL
@dataclass(frozen=True)
class PairResult:
    """What the leader pod of a pair printed."""

    busbw_gbytes_per_s: float
    ranks: int
    hosts: tuple[str, ...]
    correct: bool
    network: str | None
    """The network NCCL said it used (`Socket`, `Libfabric`, `IB`...); None when it did not say."""


def pair_result(log: str) -> PairResult | None:
    """The all-reduce's result line (the last JSON line with MARK) and NCCL's network; None without one."""
    found: dict[str, Any] | None = None
    for line in log.splitlines():
        text = line.strip()
        if text.startswith("{"):
            try:
                data = json.loads(text)
            except ValueError:
                continue
            if isinstance(data, dict) and MARK in data:
                found = data
    if found is None:
        return None
    networks = _NETWORK.findall(log)
    return PairResult(
        busbw_gbytes_per_s=float(found["busbw_gbytes_per_s"]),
        ranks=int(found["ranks"]),
        hosts=tuple(found["hosts"]),
        correct=bool(found["correct"]),
        network=networks[0] if networks else None,
    )


# ------------------------------------------------------------------------------------------ the nodes
def cordon_patch(node: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
    """The JSON merge patch that cordons a failed node and taints it `clusterfab.dev/unhealthy=<category>:
    NoSchedule`, with the reason in an annotation. A merge patch replaces the whole taint list, so it is
    the node's own taints (less an older one of ours) plus ours, and it carries the node's
    resourceVersion: the API server refuses it (409) when the node changed since it was read."""
    category = verdict.failures[0]["category"]
    taints = [t for t in node.get("spec", {}).get("taints") or [] if t.get("key") != UNHEALTHY_TAINT]
    taints.append({"key": UNHEALTHY_TAINT, "value": category, "effect": "NoSchedule"})
    return {
        "metadata": {
            "resourceVersion": node["metadata"]["resourceVersion"],
            "annotations": {REASON_ANNOTATION: verdict.reason},
        },
        "spec": {"unschedulable": True, "taints": taints},
    }


def report(verdicts: Sequence[Verdict], level: int, run: str, error: str | None) -> dict[str, Any]:
    """The check's document (schema_version 1, docs/json/health.md); `reservation` is the run's id."""
    ordered = sorted(verdicts, key=lambda v: v.node)
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "level": level,
        "reservation": run,
        "healthy": error is None and all(v.status != "failed" for v in ordered),
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
            }
            for v in ordered
        ],
    }
