"""What the stack exports of a Slurm cluster's scheduler beyond the common fields."""

from __future__ import annotations

from clusterfab.outputs import SchedulerOutput


class SlurmOutput(SchedulerOutput):
    """The controller and login nodes, and the munge key's secret (the nodes' shared authentication key)."""

    munge_secret: str
