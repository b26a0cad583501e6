"""Slurm's configuration for a cluster, rendered from its ClusterSpec (architecture §10.3).

`render_slurm` returns every file the controller serves (slurm.conf, gres.conf, cgroup.conf,
topology.conf, slurmdbd.conf with its secrets as placeholders, plugstack.conf with pyxis) and the
accounts it loads (accounts.cfg in `sacctmgr load` format, qos.cfg one QOS a line). Pure: nothing here
talks to a cloud or a daemon. `PLUGIN` is Slurm behind the SchedulerPlugin Protocol (clusterfab.scheduler).
"""

from clusterfab.scheduler.slurm.hostlist import hostlist
from clusterfab.scheduler.slurm.plugin import PLUGIN
from clusterfab.scheduler.slurm.render import (
    DBD_PASSWORD_PLACEHOLDER,
    DBD_USER_PLACEHOLDER,
    SlurmRenderError,
    node_names,
    render_slurm,
    slurm_section,
)

__all__ = [
    "DBD_PASSWORD_PLACEHOLDER",
    "DBD_USER_PLACEHOLDER",
    "PLUGIN",
    "SlurmRenderError",
    "hostlist",
    "node_names",
    "render_slurm",
    "slurm_section",
]
