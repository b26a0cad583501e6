"""Render Slurm's configuration files from a ClusterSpec.

The shape follows what Cluster Toolkit (slurm-gcp v6 `conf.py`) and ParallelCluster (its slurm.conf
templates) ship for GPU clusters, with the choices a GPU training cluster needs (scheduler.md §A1, §A2,
§A6): cons_tres with typed GPU GRES and explicit device files, cgroup process tracking and device
confinement, the extern step for pam_slurm_adopt, a prolog that may drain a failing node without holding
the job, multifactor priority with a GPU TRES weight, GPUs tracked and limits enforced by accounting,
QOS preemption between teams of different priority, tree topology from the node groups' placement.

Every setting written is known to the Slurm release the nodes run (`catalog.slurm.release`); a setting
that needs a later release is refused (`SlurmRenderError`) rather than written for a slurmctld that
would stop on it.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from clusterfab import addressing
from clusterfab.catalog.models import SlurmFacts
from clusterfab.catalog.query import at_least
from clusterfab.clouds import profile
from clusterfab.clouds.base import FabricUnit
from clusterfab.scheduler.base import RenderError
from clusterfab.scheduler.slurm.hostlist import hostlist, join
from clusterfab.scheduler.slurm.nodes.accounting import DATABASE as ACCOUNTING_DATABASE
from clusterfab.spec.capacity import CapacityBlock
from clusterfab.spec.model import ClusterSpec, NodeGroup, Slurm, Team

DBD_USER_PLACEHOLDER = "@SLURMDBD_STORAGE_USER@"
DBD_PASSWORD_PLACEHOLDER = "@SLURMDBD_STORAGE_PASS@"
"""slurmdbd.conf's database credentials: the controller fills them in at boot from its secret."""
DBD_HOST_PLACEHOLDER = "@SLURMDBD_STORAGE_HOST@"
DBD_PORT_PLACEHOLDER = "@SLURMDBD_STORAGE_PORT@"
"""Managed accounting: the database endpoint, known only once the cloud created it."""
ACCOUNTING_CA_FILE = "/etc/slurm/accounting-db-ca.pem"
"""Managed accounting: the bundle of the authority that signs the database's certificate (slurmdbd checks
the server against it); the controller fetches it at boot."""

MEMORY_FOR_SLURM = 0.95
"""Share of the machine's memory offered to jobs: the kernel, the GPU driver and the daemons keep the
rest, and a node whose slurmd reports less memory than RealMemory is drained ("Low RealMemory")."""

QOS_PRIORITY = {"low": 10, "normal": 100, "high": 1000}
"""QOS priorities per team priority; PriorityWeightQOS scales the highest one to the full weight."""
QOS_DESCRIPTION = "clusterfab team {team} of {cluster}"
"""A team QOS's description: how the controller's accounts loader knows the QOS it may remove once the
team is gone (QOS are shared by every cluster of a slurmdbd, hence the cluster's name); the loader
(playbooks/roles/slurm_controller/files/clusterfab_slurm_accounts.py) holds the same text."""
ACCOUNT_DESCRIPTION = "team {team}"
"""A team account's description; with Organization = the cluster's name and root as parent, the marks the
accounts loader knows clusterfab's accounts by (the loader holds the same text)."""

PROLOG_DIR = "/etc/slurm/prolog.d"
EPILOG_DIR = "/etc/slurm/epilog.d"
TASK_PROLOG = "/usr/local/sbin/clusterfab-task-env"
"""Run before each task (the slurm_node role installs it): the task gets the node's NCCL fabric
environment, which only a login shell would read (a job inherits the submitting host's environment)."""
PROLOG_EPILOG_TIMEOUT_S = 600
"""slurmd's own bound on a prolog or epilog (drain and requeue past it). The node's health check keeps to
its budgets (150 s prolog, 420 s epilog with the medium DCGM diagnostic) by itself; this is the backstop
for a check that cannot (Slurm's default is to wait for ever: ParallelCluster's hung prologs)."""


class SlurmRenderError(RenderError):
    """The spec asks for something the target Slurm release cannot do."""


@dataclass(frozen=True, slots=True)
class _Setting:
    key: str
    value: str
    feature: str | None = None
    """The catalog feature (slurm.yaml `features`) this setting needs, if any."""


def controller_host(spec: ClusterSpec) -> str:
    """The controller's host name (its `hostname -s`: slurmctld and slurmdbd check it)."""
    return f"{spec.name}-controller"


def controller_address(spec: ClusterSpec) -> str:
    """The controller's fixed private address, where nodes and clients reach slurmctld and slurmdbd."""
    return addressing.slurm_controller_address(profile(spec.cloud).host_subnet(spec.cidr))


def node_names(group: NodeGroup) -> str:
    """The group's nodes as a hostlist: `<group>-0` .. `<group>-(max_size-1)`."""
    return hostlist(group.name, group.max_size)


def static_nodes(group: NodeGroup) -> str | None:
    """The group's always-up nodes, `<group>-0` .. `<group>-(static_size-1)`; None when it has none."""
    return hostlist(group.name, group.static_size) if group.static_size else None


def fabric_units(spec: ClusterSpec, group: NodeGroup) -> tuple[FabricUnit, ...] | None:
    """The group's fabric units, where its nodes register by unit (`CloudProfile.slurm_units`)."""
    return profile(spec.cloud).slurm_units(group.name, group.machine, group.max_size, group.static_size)


def _node_lines(spec: ClusterSpec, group: NodeGroup) -> list[str]:
    """A group's NodeName lines: its always-up nodes, then its elastic ones (by fabric unit, where its
    machines claim their nodes)."""
    hardware = (
        f"CPUs={group.machine.vcpus} RealMemory={real_memory_mib(group)} "
        f"Gres=gpu:{gres_type(group)}:{group.gpus_per_node}"
    )
    if (units := fabric_units(spec, group)) is not None:
        # Each VM claims a free node of its unit before its slurmd starts (the slurm_node role's start
        # program): Slurm's dynamic future nodes (`slurmd -F`) would need the size's exact CPU topology
        # here, which no source records, and lose a restarted node's GPUs.
        return [
            f"NodeName={hostlist(group.name, end - start, start=start)} {hardware} "
            f"Feature={unit.name} State={state}"
            for unit in units
            for start, end, state in _unit_ranges(group, unit)
            if end > start
        ]
    lines = []
    if (static := static_nodes(group)) is not None:
        lines.append(f"NodeName={static} {hardware} State=UNKNOWN")
    if (elastic := elastic_nodes(group)) is not None:
        lines.append(f"NodeName={elastic} {hardware} State=CLOUD")
    return lines + _block_end(group)


def _unit_ranges(group: NodeGroup, unit: FabricUnit) -> tuple[tuple[int, int, str], ...]:
    """The unit's always-up node numbers and its elastic ones (State=CLOUD), each as [start, end)."""
    last, up = unit.first + unit.size, unit.first + unit.always_up(group.static_size)
    return ((unit.first, up, "UNKNOWN"), (up, last, "CLOUD"))


def elastic_nodes(group: NodeGroup) -> str | None:
    """The nodes Slurm creates on demand, numbered after the static ones; None when it has none."""
    count = group.max_size - group.static_size
    return hostlist(group.name, count, start=group.static_size) if count else None


POWER_PROGRAMS = {
    "ResumeProgram": "/usr/local/sbin/clusterfab-slurm-resume",
    "SuspendProgram": "/usr/local/sbin/clusterfab-slurm-suspend",
    "ResumeFailProgram": "/usr/local/sbin/clusterfab-slurm-resume-fail",
}
"""Where the slurm_controller role installs the power program's entry points (slurmctld runs them as
SlurmUser with the nodes' hostlist as the one argument)."""
SUSPEND_TIMEOUT_S = 300
"""Seconds a suspended node's instance has to go before Slurm may create it again: a terminating GPU
instance takes minutes (Cluster Toolkit sets 300)."""


def gres_type(group: NodeGroup) -> str:
    """The GPU GRES type of a group's nodes (`h100`), so jobs may ask for a model: `--gpus=h100:8`."""
    return group.machine.accelerator.model.lower()


def real_memory_mib(group: NodeGroup) -> int:
    return int(group.machine.memory_gib * 1024 * MEMORY_FOR_SLURM)


def render_slurm(spec: ClusterSpec, facts: SlurmFacts, *, version: str | None = None) -> dict[str, str]:
    """Every file of the cluster's Slurm configuration, by file name, for Slurm `version` (default: the
    release the nodes run)."""
    slurm = slurm_section(spec)
    if slurm is None:
        kind = spec.scheduler.kind if spec.scheduler is not None else "none"
        raise SlurmRenderError(f"{spec.name} has no Slurm scheduler (scheduler.kind is {kind})")
    target = version or slurm.version
    groups = slurm_groups(spec)
    if not groups:
        raise SlurmRenderError(f"{spec.name} has no GPU node group for Slurm to schedule on")
    settings = _settings(spec, slurm, groups)
    _check_release(settings, facts, target)
    files = {
        "slurm.conf": _slurm_conf(spec, slurm, settings, groups, target),
        "gres.conf": _gres_conf(groups),
        "cgroup.conf": _cgroup_conf(),
        "topology.conf": _topology_conf(spec, groups),
        "slurmdbd.conf": _slurmdbd_conf(spec, slurm, facts),
        "accounts.cfg": _accounts_cfg(spec),
        "qos.cfg": _qos_cfg(spec.name, spec.teams),
    }
    if slurm.containers == "pyxis":
        files["plugstack.conf"] = _plugstack_conf()
    return files


def slurm_section(spec: ClusterSpec) -> Slurm | None:
    """The cluster's Slurm section; None when it runs no scheduler or another one."""
    return spec.scheduler if isinstance(spec.scheduler, Slurm) else None


def require_slurm(spec: ClusterSpec) -> Slurm:
    """The cluster's Slurm section; ValueError when it has none (a caller's error: it asked for Slurm's
    settings of a cluster that validated without Slurm)."""
    slurm = slurm_section(spec)
    if slurm is None:
        raise ValueError(f"{spec.name} has no Slurm scheduler")
    return slurm


def slurm_groups(spec: ClusterSpec) -> tuple[NodeGroup, ...]:
    """The node groups the partitions hold, in blueprint order."""
    slurm = slurm_section(spec)
    wanted = {name for p in slurm.partitions for name in p.node_groups} if slurm else set()
    return tuple(g for g in spec.node_groups if g.name in wanted and g.max_size > 0)


def _check_release(settings: Iterable[_Setting], facts: SlurmFacts, version: str) -> None:
    for setting in settings:
        if setting.feature is None:
            continue
        since = facts.since(setting.feature)
        if not at_least(version, since):
            raise SlurmRenderError(
                f"{setting.key}={setting.value} needs Slurm {since} or later; the nodes run {version}"
            )


def _settings(spec: ClusterSpec, slurm: Slurm, groups: tuple[NodeGroup, ...]) -> list[_Setting]:
    settings = [*_daemon_settings(spec), *_scheduling_settings(spec), *_accounting_settings(spec, groups)]
    if any(elastic_nodes(g) for g in groups):
        settings = _power_saving(spec, slurm, settings, groups)
    return settings


def _daemon_settings(spec: ClusterSpec) -> list[_Setting]:
    """Where the daemons run, talk and keep their state."""
    host, address = controller_host(spec), controller_address(spec)
    s = _Setting
    return [
        s("ClusterName", spec.name),
        # Name and address: nodes need no DNS record for the controller.
        s("SlurmctldHost", f"{host}({address})"),
        s("SlurmUser", "slurm"),
        s("AuthType", "auth/munge"),
        s("CredType", "cred/munge"),
        # Nodes and clients fetch this file from slurmctld: no node ever runs with a stale copy.
        s("SlurmctldParameters", "enable_configless", "SlurmctldParameters=enable_configless"),
        s("SlurmctldPort", "6817"),
        s("SlurmdPort", "6818"),
        # A fixed range, so the security rules can open it instead of every port.
        s("SrunPortRange", "60001-63000"),
        s("StateSaveLocation", "/var/spool/slurmctld"),
        s("SlurmdSpoolDir", "/var/spool/slurmd"),
        # In the runtime directories Ubuntu's units create: slurmctld and slurmdbd run as SlurmUser there,
        # and cannot write /run itself.
        s("SlurmctldPidFile", "/run/slurmctld/slurmctld.pid"),
        s("SlurmdPidFile", "/run/slurm/slurmd.pid"),
        s("SlurmctldLogFile", "/var/log/slurm/slurmctld.log"),
        s("SlurmdLogFile", "/var/log/slurm/slurmd.log"),
    ]


def _scheduling_settings(spec: ClusterSpec) -> list[_Setting]:
    """How jobs are placed, contained, prologued and prioritized, teams' QOS included."""
    s = _Setting
    settings = [
        s("SchedulerType", "sched/backfill"),
        s("SelectType", "select/cons_tres"),
        s("SelectTypeParameters", "CR_Core_Memory"),
        s("GresTypes", "gpu"),
        s("ProctrackType", "proctrack/cgroup"),
        s("TaskPlugin", "task/cgroup,task/affinity"),
        s("JobAcctGatherType", "jobacct_gather/cgroup"),
        # Contain: the extern step pam_slurm_adopt puts ssh sessions in; implies Alloc (prolog at allocation).
        s("PrologFlags", "Alloc,Contain", "PrologFlags=Contain"),
        s("Prolog", f"{PROLOG_DIR}/*"),
        s("Epilog", f"{EPILOG_DIR}/*"),
        s("TaskProlog", TASK_PROLOG),
        s("PrologEpilogTimeout", str(PROLOG_EPILOG_TIMEOUT_S)),
        # The prolog drains a failing node itself; the job goes back to the queue, not on hold.
        s("SchedulerParameters", "nohold_on_prolog_fail"),
        s("ReturnToService", "2"),
        s("JobRequeue", "1"),
        s("PriorityType", "priority/multifactor"),
        s("PriorityDecayHalfLife", "7-0"),
        s("PriorityWeightAge", "100"),
        s("PriorityWeightFairshare", "1000"),
        s("PriorityWeightTRES", "GRES/gpu=1000"),
    ]
    if spec.teams:
        settings.append(s("PriorityWeightQOS", "10000"))
    if any(team.gpu_hours_per_month for team in spec.teams):
        # GrpTRESMins is a budget: the QOS keep usage undecayed (NoDecay) and it starts over each month.
        settings.append(s("PriorityUsageResetPeriod", "MONTHLY"))
    if len({team.priority for team in spec.teams}) > 1:
        settings += [s("PreemptType", "preempt/qos"), s("PreemptMode", "REQUEUE")]
    return settings


def _accounting_settings(spec: ClusterSpec, groups: tuple[NodeGroup, ...]) -> list[_Setting]:
    """Accounting in slurmdbd on the controller (GPUs by type), no mailer, and the tree topology."""
    s = _Setting
    return [
        s("AccountingStorageType", "accounting_storage/slurmdbd"),
        s("AccountingStorageHost", controller_address(spec)),
        s("AccountingStoragePort", "6819"),
        # GPUs are not tracked unless named; typed GRES are tracked beside the untyped count.
        s("AccountingStorageTRES", join(["gres/gpu", *sorted({f"gres/gpu:{gres_type(g)}" for g in groups})])),
        s("AccountingStorageEnforce", "associations,limits,qos,safe"),
        s("JobCompType", "jobcomp/none"),
        # Ubuntu's Slurm packages install no mailer; slurmctld would log an invalid MailProg at every start.
        s("MailProg", "/bin/true"),
        s("TopologyPlugin", "topology/tree"),
    ]


def _power_saving(
    spec: ClusterSpec, slurm: Slurm, settings: list[_Setting], groups: tuple[NodeGroup, ...]
) -> list[_Setting]:
    """Slurm's power saving drives the elastic nodes (SchedMD's elastic_computing guide; the choices
    Cluster Toolkit's and ParallelCluster's controllers make, scheduler.md §A1, §A2): the resume program
    creates instances for the nodes a queued job was given, the suspend program deletes idle ones, and
    the always-up nodes are excluded."""
    s = _Setting
    replaced = {
        # cloud_reg_addrs: an elastic node's address is the one its slurmd registers from (reset when it
        # powers down); idle_on_node_suspend: a node that failed is usable again once it is suspended.
        "SlurmctldParameters": s(
            "SlurmctldParameters",
            "enable_configless,cloud_reg_addrs,idle_on_node_suspend",
            "SlurmctldParameters=cloud_reg_addrs",
        ),
        # A batch script or salloc shell starts only once every node of the job has booted (scheduler.md
        # §A7: jobs that start on nodes not yet usable).
        "SchedulerParameters": s(
            "SchedulerParameters", "nohold_on_prolog_fail,salloc_wait_nodes,sbatch_wait_nodes"
        ),
    }
    out = [replaced.get(setting.key, setting) for setting in settings]
    static = [name for g in groups if (name := static_nodes(g))]
    out += [
        *(s(key, program) for key, program in POWER_PROGRAMS.items()),
        s("SuspendTime", str(slurm.idle_minutes * 60)),
        s("SuspendTimeout", str(SUSPEND_TIMEOUT_S)),
        s("ResumeTimeout", str(slurm.resume_timeout_minutes * 60)),
        # The programs batch and pace their own cloud calls.
        s("ResumeRate", "0"),
        s("SuspendRate", "0"),
        # Addresses change with every instance: no cached lookups, no fan-out through nodes that may
        # not know each other's addresses, powered-down nodes visible to users (sinfo shows them `~`).
        s("CommunicationParameters", "NoAddrCache"),
        s("TreeWidth", "65533"),
        s("PrivateData", "cloud"),
    ]
    if static:
        out.append(s("SuspendExcNodes", join(static)))
    return out


def _slurm_conf(
    spec: ClusterSpec, slurm: Slurm, settings: list[_Setting], groups: tuple[NodeGroup, ...], version: str
) -> str:
    lines = [
        f"# slurm.conf of cluster {spec.name}, rendered by clusterfab for Slurm {version}.",
        "# Served to every node and client by slurmctld (configless); edit the blueprint, not this file.",
        "",
    ]
    lines += [f"{setting.key}={setting.value}" for setting in settings]
    by_unit = any(fabric_units(spec, g) is not None for g in groups)
    lines += (
        [
            "",
            "# Nodes: the machine's CPUs, memory and GPUs from the catalog; a node for each VM of a fabric",
            "# unit, with the unit as its feature (a VM claims a free node of its unit as it starts); a",
            "# unit's always-up nodes first, then its elastic ones (State=CLOUD: its scale set grows by one",
            "# VM for each that a queued job is given).",
        ]
        if by_unit
        else [
            "",
            "# Nodes: the machine's CPUs, memory and GPUs from the catalog; a group's always-up nodes first,",
            "# then its elastic ones (State=CLOUD: created by the resume program when a job needs them).",
        ]
    )
    for group in groups:
        lines += _node_lines(spec, group)
    lines += [
        "",
        "# Partitions: whole nodes per job (OverSubscribe=EXCLUSIVE) unless a partition shares them.",
    ]
    by_name = {g.name: g for g in groups}
    for partition in slurm.partitions:
        members = [node_names(by_name[name]) for name in partition.node_groups if name in by_name]
        if not members:
            continue
        default = "YES" if partition.default else "NO"
        # Flex-start capacity may take hours to arrive: its partitions wait longer for their nodes (a node
        # in several partitions gets the largest ResumeTimeout, slurm.conf(5)).
        flex = any(by_name[name].flex_elastic for name in partition.node_groups if name in by_name)
        wait = f" ResumeTimeout={slurm.flex_start_wait_minutes * 60}" if flex else ""
        lines.append(
            f"PartitionName={partition.name} Nodes={join(members)} Default={default} "
            f"MaxTime={partition.max_time or 'UNLIMITED'} DefaultTime={partition.default_time} "
            f"State=UP OverSubscribe={'EXCLUSIVE' if partition.exclusive else 'NO'}{wait}"
        )
    return "\n".join(lines) + "\n"


def _block_end(group: NodeGroup) -> list[str]:
    """Comment lines saying when the group's capacity block ends and from when its nodes take no job that
    would outlive it (the node sync's maintenance reservation from nodesync.json's `ends`)."""
    block = group.capacity
    if not isinstance(block, CapacityBlock) or block.ends_at is None or block.terminates_at is None:
        return []
    drains = block.drains_at or block.terminates_at
    return [
        f"# {group.name}: capacity block {block.reservation} ends {block.ends_at:%Y-%m-%dT%H:%M:%SZ}; EC2 "
        f"terminates its instances from {block.terminates_at:%H:%M} UTC.",
        f"# From {drains:%Y-%m-%dT%H:%M:%SZ} the node sync reserves its nodes (clusterfab-end-<node>): no "
        "job starts there that would still run then.",
    ]


def _gres_conf(groups: tuple[NodeGroup, ...]) -> str:
    lines = ["# GPUs by device file (no NVML autodetection: Ubuntu's Slurm is built without it)."]
    for group in groups:
        count = group.gpus_per_node
        files = "/dev/nvidia0" if count == 1 else f"/dev/nvidia[0-{count - 1}]"
        lines.append(f"NodeName={node_names(group)} Name=gpu Type={gres_type(group)} File={files}")
    return "\n".join(lines) + "\n"


def _cgroup_conf() -> str:
    return (
        "# Jobs see only their cores, memory and GPUs.\n"
        "ConstrainCores=yes\n"
        "ConstrainDevices=yes\n"
        "ConstrainRAMSpace=yes\n"
        "ConstrainSwapSpace=no\n"
    )


SLURM_TEMPLATE_NAME = "default"
"""`PartitionName=DEFAULT` (and `NodeName=DEFAULT`) is no partition but the defaults of the lines after it
(slurm.conf(5), matched in any case): a partition of that name would leave the cluster without it (rule
BP144). Node names are `<group>-<i>`, never the bare word."""
TOPOLOGY_ROOT_SWITCH = "root"
"""The switch topology.conf puts over the node groups' leaf switches (each named after its group): no group
may take its name (rule BP144), or the root would list itself among its switches."""


def _topology_conf(spec: ClusterSpec, groups: tuple[NodeGroup, ...]) -> str:
    """A leaf switch per node group (a placement group or compact placement keeps a group close), joined
    by a root when there are several: Slurm places a job under the lowest switch that holds it. Where the
    cloud's fabric comes in units it does not span (Azure's InfiniBand scale sets), a leaf per unit and no
    root: "jobs can only span nodes connected by the same switch fabric" (topology.conf(5))."""
    units = {g.name: fabric_units(spec, g) for g in groups}
    if any(found is not None for found in units.values()):
        lines = ["# Tree topology: a leaf per fabric unit, joined by none (the fabric does not span units)."]
        for group in groups:
            found = units[group.name] or ()
            lines += [
                f"SwitchName={unit.name} Nodes={hostlist(group.name, unit.size, start=unit.first)}"
                for unit in found
            ]
        return "\n".join(lines) + "\n"
    lines = ["# Tree topology: a leaf per node group, a root over them."]
    for group in groups:
        lines.append(f"SwitchName={group.name} Nodes={node_names(group)}")
    if len(groups) > 1:
        lines.append(f"SwitchName={TOPOLOGY_ROOT_SWITCH} Switches={','.join(g.name for g in groups)}")
    return "\n".join(lines) + "\n"


def _slurmdbd_conf(spec: ClusterSpec, slurm: Slurm, facts: SlurmFacts) -> str:
    managed = slurm.accounting == "managed"
    # Managed: the endpoint is filled in at boot, and the connection is TLS checked against the CA bundle.
    storage = (
        [
            f"StorageHost={DBD_HOST_PLACEHOLDER}",
            f"StoragePort={DBD_PORT_PLACEHOLDER}",
            f"StorageParameters=SSL_CA={ACCOUNTING_CA_FILE}",
        ]
        if managed
        else ["StorageHost=localhost", "StoragePort=3306"]
    )
    return "\n".join(
        [
            "# slurmdbd.conf: the credentials are filled in on the controller from its secret (mode 0600).",
            "AuthType=auth/munge",
            f"DbdHost={controller_host(spec)}",
            f"DbdAddr={controller_address(spec)}",
            f"DbdPort={facts.ports.slurmdbd}",
            "SlurmUser=slurm",
            "StorageType=accounting_storage/mysql",
            *storage,
            f"StorageLoc={ACCOUNTING_DATABASE}",
            f"StorageUser={DBD_USER_PLACEHOLDER}",
            f"StoragePass={DBD_PASSWORD_PLACEHOLDER}",
            "LogFile=/var/log/slurm/slurmdbd.log",
            "PidFile=/run/slurmdbd/slurmdbd.pid",
            "",
        ]
    )


def _plugstack_conf() -> str:
    # The slurm_node role writes pyxis.conf there (`required .../spank_pyxis.so`).
    return "include /etc/slurm/plugstack.conf.d/*.conf\n"


def _accounts_cfg(spec: ClusterSpec) -> str:
    """Each team an account under root with its QOS as the default; each user under their first team."""
    lines = [f"Cluster - '{spec.name}'", "Parent - 'root'"]
    for team in spec.teams:
        lines.append(
            f"Account - '{team.name}':Description='{ACCOUNT_DESCRIPTION.format(team=team.name)}'"
            f":Organization='{spec.name}'"
            f":QOS='{team.name}':DefaultQOS='{team.name}'"
        )
    defaults = _default_accounts(spec.teams)
    for team in spec.teams:
        if not team.users:
            continue
        lines.append(f"Parent - '{team.name}'")
        lines += [f"User - '{user}':DefaultAccount='{defaults[user]}'" for user in team.users]
    return "\n".join(lines) + "\n"


def _default_accounts(teams: Iterable[Team]) -> Mapping[str, str]:
    """A user in several teams submits to the first one unless they pass `--account`."""
    defaults: dict[str, str] = {}
    for team in teams:
        for user in team.users:
            defaults.setdefault(user, team.name)
    return defaults


def _qos_cfg(cluster: str, teams: tuple[Team, ...]) -> str:
    """One QOS per team: the concurrent GPU cap, the monthly GPU-minute budget, priority, preemption.

    Every attribute clusterfab manages is written on every line, an unset one with sacctmgr's value that
    clears it (Slurm 23.11 and 24.11 `sacctmgr(1)`, "SPECIFICATIONS FOR QOS"): `GrpTRESMins=gres/gpu=-1`
    and `Flags=-1` without a monthly budget, `Preempt=''` and `PreemptMode=cluster` for a team that
    preempts nobody. A team whose blueprint loses its budget or its rank then loses them in Slurm too;
    writing only what is set would leave the old values in slurmdbd.
    """
    lines = [
        "# NAME attribute=value ...: `sacctmgr add qos NAME`, then `sacctmgr modify qos NAME set ...`",
        "# (values quoted as in a shell); lowest priority first, so that every QOS a line preempts exists",
        "# before it. Unset attributes are written with the value that clears them.",
    ]
    for team in sorted(teams, key=lambda t: QOS_PRIORITY[t.priority]):
        description = QOS_DESCRIPTION.format(team=team.name, cluster=cluster)
        attributes = [
            f"Description={shlex.quote(description)}",
            f"Priority={QOS_PRIORITY[team.priority]}",
            f"GrpTRES=gres/gpu={team.max_gpus}",
        ]
        if team.gpu_hours_per_month is not None:
            attributes += [f"GrpTRESMins=gres/gpu={team.gpu_hours_per_month * 60}", "Flags=NoDecay"]
        else:
            attributes += ["GrpTRESMins=gres/gpu=-1", "Flags=-1"]
        lower = [t.name for t in teams if QOS_PRIORITY[t.priority] < QOS_PRIORITY[team.priority]]
        if lower:
            attributes += [f"Preempt={','.join(lower)}", "PreemptMode=requeue"]
        else:
            attributes += [f"Preempt={shlex.quote('')}", "PreemptMode=cluster"]
        lines.append(f"{team.name} {' '.join(attributes)}")
    return "\n".join(lines) + "\n"
