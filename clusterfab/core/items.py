"""The names of the cluster's own hosts: each is a cost item and a stack component of the same name.

The cost estimate lists the hosts under these names, the stack program names their components and boot
scripts by them, and the cost policy finds them in a plan by them: one spelling, at the bottom of the
import graph, so that none of those layers takes it from another.
"""

from __future__ import annotations

CONTROLLER_ITEM = "slurm-controller"
LOGIN_ITEM = "slurm-login"
"""The Slurm controller and login nodes."""
MONITORING_ITEM = "monitoring"
"""The monitoring node."""
