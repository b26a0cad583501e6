"""Durations the test fixtures measure (lab start, Ansible runs), printed at the end of the session.

Each section is a plain dict that a conftest or fixture module fills. Under pytest-xdist the fixtures run
in the workers: each worker hands its sections to the controller (tests/conftest.py), which prints them.
"""

from __future__ import annotations

REPORTS: dict[str, dict[str, object]] = {}


def section(title: str) -> dict[str, object]:
    """The dict that collects one section's timings (the same dict for the same title)."""
    return REPORTS.setdefault(title, {})


def merge(reports: dict[str, dict[str, object]]) -> None:
    for title, values in reports.items():
        section(title).update(values)
