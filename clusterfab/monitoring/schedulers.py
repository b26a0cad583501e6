"""What monitoring asks of the workload schedulers: their scrape jobs, rule files and dashboards.

A scheduler's plugin (clusterfab.scheduler) builds on monitoring (its rules are monitoring's Rule
objects, its controller hosts the stack), so monitoring finds the plugins by kind in the name table
instead of importing them, and asks them through this narrow Protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from clusterfab.catalog.models import ExporterFacts
from clusterfab.core.plugins import load_scheduler, schedulers
from clusterfab.spec import ClusterSpec


class RuleFile(Protocol):
    """A Prometheus rule file: its name under rules/ and its content (rules.RuleGroup is one)."""

    @property
    def file(self) -> str: ...

    def document(self) -> dict[str, Any]: ...


class Discover(Protocol):
    """How a scrape job finds its targets (monitoring.targets): through the cloud's API, the nodes with a
    node group tag, or with `component`, the nodes whose component tag names it, or with `tag` (key,
    value), the nodes whose tag `key` is `value`; in tests from a file."""

    def __call__(
        self, job: str, port: int, *, component: str | None = None, tag: tuple[str, str] | None = None
    ) -> dict[str, Any]: ...


class MonitoredScheduler(Protocol):
    """The monitoring part of clusterfab.scheduler.SchedulerPlugin."""

    def monitored(self, spec: ClusterSpec) -> bool: ...

    def scrape_jobs(
        self, spec: ClusterSpec, exporters: ExporterFacts, discover: Discover
    ) -> list[dict[str, Any]]: ...

    def alert_rules(self, spec: ClusterSpec) -> Sequence[RuleFile]: ...

    @property
    def dashboards(self) -> tuple[str, ...]: ...


def _all() -> list[MonitoredScheduler]:
    return [load_scheduler(kind) for kind in schedulers()]


def monitored_schedulers(spec: ClusterSpec) -> tuple[MonitoredScheduler, ...]:
    """The schedulers whose exporters, alerts and dashboards the cluster's monitoring has."""
    return tuple(scheduler for scheduler in _all() if scheduler.monitored(spec))


def hidden_dashboards(spec: ClusterSpec) -> set[str]:
    """The shipped dashboards of the schedulers the cluster does not monitor: their metrics would be none."""
    shown = {name for scheduler in monitored_schedulers(spec) for name in scheduler.dashboards}
    return {name for scheduler in _all() for name in scheduler.dashboards} - shown
