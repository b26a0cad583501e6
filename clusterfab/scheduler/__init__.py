"""Workload schedulers behind one Protocol, found by kind (architecture §11.1).

`plugin(kind)` is the `PLUGIN` of the package clusterfab.core.plugins names for `kind` (built in:
`slurm/`); `scheduler.kind: none` has none. Rules, cost, monitoring, provisioning and the stack outputs ask
it what they need of the cluster's scheduler.
"""

from __future__ import annotations

from clusterfab.core import plugins
from clusterfab.scheduler.base import PricedHost, RuleFile, RuleView, SchedulerPlugin


def plugin(kind: str) -> SchedulerPlugin:
    """The plugin of scheduler `kind` (loaded once; LookupError for `none` or a kind not registered)."""
    loaded: SchedulerPlugin = plugins.load_scheduler(kind)
    return loaded


def registered() -> tuple[SchedulerPlugin, ...]:
    """The plugin of every registered scheduler, built-in ones first."""
    return tuple(plugin(kind) for kind in plugins.schedulers())


__all__ = ["PricedHost", "RuleFile", "RuleView", "SchedulerPlugin", "plugin", "registered"]
