"""The dcgm-exporter counters file GPU nodes run, and the metric names it makes the exporter expose."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

COUNTERS_FILE = "dcgm-counters.csv"
"""Package data of clusterfab.monitoring: the file the dcgm role installs and `-f` points dcgm-exporter at."""


@dataclass(frozen=True, slots=True)
class Counter:
    field: str
    """The DCGM field (DCGM_FI_*) or exporter collector (DCGM_EXP_*); also the metric's name."""
    prom_type: str
    """gauge | counter | label (a label on every other metric, not a metric of its own)."""
    help: str


def counters_csv() -> str:
    """The counters file as dcgm-exporter reads it."""
    return resources.files("clusterfab.monitoring").joinpath("data", COUNTERS_FILE).read_text()


@functools.cache
def dcgm_counters() -> tuple[Counter, ...]:
    """The file's counters, in order (comments and blank lines skipped, as the exporter skips them)."""
    counters = []
    for line in counters_csv().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        field, prom_type, help_text = (part.strip() for part in line.split(",", 2))
        counters.append(Counter(field, prom_type, help_text))
    return tuple(counters)


def dcgm_metrics() -> frozenset[str]:
    """The metric names dcgm-exporter exposes with this counters file."""
    return frozenset(c.field for c in dcgm_counters() if c.prom_type != "label")
