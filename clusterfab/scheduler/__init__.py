"""Workload schedulers behind one Protocol, found by kind (architecture §11.1).

`plugin(kind)` is the `PLUGIN` of the package clusterfab.core.plugins names for `kind` (built in:
`slurm/`); `scheduler.kind: none` has none. The rules and the provisioning ask it what they need of the
cluster's scheduler (cost, monitoring, outputs and the spec find it by kind: see base.py).
"""

from __future__ import annotations

from clusterfab.core import plugins
from clusterfab.scheduler.base import RenderError, RuleView, SchedulerPlugin


def plugin(kind: str) -> SchedulerPlugin:
    """The plugin of scheduler `kind` (loaded once; LookupError for `none` or a kind not registered)."""
    loaded: SchedulerPlugin = plugins.load_scheduler(kind)
    return loaded


__all__ = ["RenderError", "RuleView", "SchedulerPlugin", "plugin"]
