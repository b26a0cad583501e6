"""The deep GPU health check's report, whichever scheduler ran it: `clusterfab health` reads it, shows it
as a table and prints it as JSON.

Every scheduler's check produces the same document, `schema_version` 1 (docs/health.md,
docs/json/health.md): on Slurm the controller's program prints it, on Kubernetes clusterfab writes it from
what the check's Jobs reported. A scheduler's plugin returns it from `SchedulerPlugin.health`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from clusterfab.core.errors import UsageError

REPORT_SCHEMA_VERSION = 1
LEVELS = (1, 2, 3)
"""`dcgmi diag -r N`: 1 quick, 2 medium, 3 long (about 15 minutes per node)."""

Progress = Callable[[str], None]
"""Where a check says what it is doing, a line at a time (the CLI writes it to stderr)."""


def check_level(level: int) -> int:
    """`level` when DCGM has it; UsageError otherwise."""
    if level not in LEVELS:
        raise UsageError(f"--level must be 1, 2 or 3, not {level}")
    return level


@dataclass(frozen=True)
class NodeRow:
    """One node of the report as the table shows it."""

    node: str
    status: str
    """healthy | failed | skipped"""
    category: str
    """The failures' categories (docs/health.md), comma-separated; empty unless failed."""
    detail: str


@dataclass(frozen=True)
class HealthReport:
    document: Mapping[str, Any]
    """The check's JSON document as it was written."""
    rows: tuple[NodeRow, ...]

    @property
    def error(self) -> str | None:
        """Why the check did not complete (the nodes' rows say what it found before)."""
        error = self.document.get("error")
        return str(error) if error else None

    @property
    def healthy(self) -> bool:
        return self.error is None and all(row.status != "failed" for row in self.rows)

    @property
    def exit_code(self) -> int:
        return 2 if self.error else 0 if self.healthy else 1


def read_report(document: Mapping[str, Any]) -> HealthReport:
    """The check's document as table rows (UsageError for a schema this clusterfab does not read)."""
    version = document.get("schema_version")
    if version != REPORT_SCHEMA_VERSION:
        raise UsageError(
            f"the controller's health report has schema_version {version!r}; this clusterfab reads "
            f"{REPORT_SCHEMA_VERSION}: run `clusterfab up` with this clusterfab, or upgrade it"
        )
    return HealthReport(document, tuple(_row(node) for node in document["nodes"]))


def _row(node: Mapping[str, Any]) -> NodeRow:
    failures = node.get("failures") or []
    if failures:
        categories = ", ".join(dict.fromkeys(str(f["category"]) for f in failures))
        detail = "; ".join(str(f["detail"]) for f in failures)
        return NodeRow(node["node"], node["status"], categories, detail)
    return NodeRow(node["node"], node["status"], "", _bandwidth(node) or node.get("detail") or "")


def _bandwidth(node: Mapping[str, Any]) -> str | None:
    busbw = node.get("busbw_gbytes_per_s")
    if busbw is None:
        return None
    floor = node.get("floor_gbytes_per_s")
    judged = f"floor {floor:g}" if floor is not None else "no floor in the catalog"
    return f"busbw {busbw:g} GB/s with {node.get('partner')} ({judged})"


def health_table(report: HealthReport, stack: str) -> Any:
    """The report as a Rich table: one row per node (node, status, category, detail)."""
    from rich.table import Table  # noqa: PLC0415 - only the text output needs Rich

    counts = {s: sum(r.status == s for r in report.rows) for s in ("healthy", "failed", "skipped")}
    title = f"deep health check of {stack}, DCGM level {report.document.get('level')}: " + ", ".join(
        f"{n} {s}" for s, n in counts.items()
    )
    table = Table(title=title, title_justify="left")
    table.add_column("node", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("detail")
    styles = {"healthy": "green", "failed": "bold red", "skipped": "yellow"}
    for row in report.rows:
        table.add_row(row.node, row.status, row.category, row.detail, style=styles.get(row.status))
    if report.error:
        table.caption = f"the check did not complete: {report.error}"
        table.caption_justify = "left"
        table.caption_style = "bold red"
    return table
