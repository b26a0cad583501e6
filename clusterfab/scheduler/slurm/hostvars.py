"""The playbook variables of the Slurm hosts: the controller (playbooks/slurm_controller.yml), the login
nodes (playbooks/slurm_login.yml) and the GPU nodes (the slurm_node role in gpu_node.yml)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from clusterfab.catalog import Catalog
from clusterfab.catalog.health_models import PairBandwidthFloors
from clusterfab.catalog.models import SlurmFacts
from clusterfab.clouds import profile
from clusterfab.core.naming import physical
from clusterfab.core.vocab import FABRIC_UNIT_TAG, MUNGE_KEY_PORT, label_value
from clusterfab.monitoring.host import PROMETHEUS_USER, monitoring_host_vars
from clusterfab.scheduler.slurm.nodes.clouds import CLOUDS as NODE_PROGRAM_CLOUDS
from clusterfab.scheduler.slurm.render import (
    ACCOUNTING_CA_FILE,
    controller_address,
    controller_host,
    fabric_units,
    render_slurm,
    require_slurm,
    slurm_groups,
)
from clusterfab.scheduler.slurm.users import user_ids
from clusterfab.spec import ClusterSpec, NodeGroup
from clusterfab.spec.capacity import CapacityBlock, Spot

SLURM_USER = "slurm"
"""slurm.conf's SlurmUser: slurmctld, slurmdbd and the programs slurmctld runs."""


def munge_secret_name(spec: ClusterSpec, stack: str) -> str:
    """The munge key's secret (AWS Secrets Manager / GCP Secret Manager): one per cluster and stack."""
    return f"clusterfab-{spec.name}-{stack}-munge-key"


def accounting_database_name(spec: ClusterSpec, stack: str) -> str:
    """The managed accounting database's name (the RDS DB instance identifier, the Cloud SQL instance name):
    the stack creates it by this name and the controller finds it by it."""
    return physical("clusterfab", spec.name, stack, "slurmdb")


def _database(spec: ClusterSpec, stack: str, project: str | None) -> dict[str, Any]:
    """Managed accounting: what the controller's accounting program needs to find the database."""
    database = require_slurm(spec).database
    if database is None:
        return {}
    where: dict[str, Any] = dict(profile(spec.cloud).service_location(spec.region, project))
    if database.ca_bundle_url is not None:
        # The database's CA, where the cloud publishes it by region (RDS's trust store).
        where["ca_bundle_url"] = database.ca_bundle_url.format(region=spec.region)
    if database.ca_certificates is not None:
        # The roots in the controller's own trust store (Azure Database for MySQL's).
        where["ca_certificates"] = list(database.ca_certificates)
    return {
        "slurm_controller_database": {
            "cloud": spec.cloud,
            "identifier": accounting_database_name(spec, stack),
            **where,
            "ca_file": ACCOUNTING_CA_FILE,
        }
    }


def _munge(spec: ClusterSpec, stack: str, *, controller: bool, project: str | None) -> dict[str, Any]:
    """The controller keeps the key in the secret store (it makes it at first boot) and serves it to root on
    the cluster's hosts; every other host fetches it from there and holds no right to the secret, so a job
    that took a node's cloud credentials still could not read the key."""
    if not controller:
        return {
            "munge_key_source": "controller",
            "munge_key_server": controller_address(spec),
            "munge_key_port": MUNGE_KEY_PORT,
        }
    where = profile(spec.cloud).service_location(spec.region, project)
    return {
        "munge_key_source": spec.cloud,
        "munge_key_secret": munge_secret_name(spec, stack),
        **{f"munge_key_{key}": value for key, value in where.items()},
        "munge_key_generate": True,
        "munge_key_serve": True,
        "munge_key_port": MUNGE_KEY_PORT,
        "munge_key_serve_networks": [spec.cidr],
    }


def _users(spec: ClusterSpec) -> dict[str, Any]:
    ids = user_ids(user for team in spec.teams for user in team.users)
    return {"slurm_users_accounts": [{"name": name, "uid": uid} for name, uid in ids.items()]}


def controller_vars(
    spec: ClusterSpec, facts: SlurmFacts, *, stack: str, files_dir: str, project: str | None = None
) -> dict[str, Any]:
    """Extravars of slurm_controller.yml: the rendered files, the state disk, accounting."""
    slurm = require_slurm(spec)
    return {
        **_munge(spec, stack, controller=True, project=project),
        **_users(spec),
        "slurm_controller_cluster": spec.name,
        "slurm_controller_hostname": controller_host(spec),
        "slurm_controller_config_dir": files_dir,
        "slurm_controller_accounting": slurm.accounting,
        "slurm_controller_state_device_name": profile(spec.cloud).controller_state_device,
        "slurm_controller_packages": list(facts.release.packages.controller),
        "slurm_controller_version": slurm.package_version,
        # A cloud without node programs runs no node sync.
        "slurm_controller_nodes_lib": f"{files_dir}/{NODES_LIB}" if spec.cloud in NODE_PROGRAM_CLOUDS else "",
        # Where nodes claim their Slurm nodes themselves, the controller keeps the claims across restarts.
        "slurm_controller_node_claims": _claims(spec),
        "slurm_controller_sync_config": f"{files_dir}/{SYNC_CONFIG}",
        "slurm_controller_health_program": f"{files_dir}/{HEALTH_PROGRAM}",
        "slurm_controller_health_config": f"{files_dir}/{HEALTH_CONFIG}",
        "slurm_controller_state_services": _state_services(spec),
        **_database(spec, stack, project),
        # slurmctld runs the elastic resume and suspend programs as SlurmUser; they call the cloud's API.
        "metadata_guard_allowed_users": ["root", SLURM_USER],
    }


PROMETHEUS_DATA = {"directory": "prometheus", "path": "/var/lib/prometheus", "unit": "prometheus.service"}
"""Where Ubuntu's prometheus package keeps its samples (its unit's default storage path lies under it)."""


def _state_services(spec: ClusterSpec) -> list[dict[str, str]]:
    """With the monitoring stack on the controller, Prometheus keeps its samples on the state disk (sized
    for them: Slurm.disk_gib), not on the root disk, where they could fill the disk slurmctld runs from."""
    monitoring = spec.monitoring
    return [dict(PROMETHEUS_DATA)] if monitoring is not None and monitoring.host == "controller" else []


def _conf_server(spec: ClusterSpec, facts: SlurmFacts) -> str:
    return f"{controller_address(spec)}:{facts.ports.slurmctld}"


def _pyxis(
    spec: ClusterSpec, facts: SlurmFacts, *, enroot: bool, scratch: str | None = None
) -> dict[str, Any]:
    """The pyxis role's inputs with `containers: pyxis` (none without): the pinned archives it builds and the
    Slurm its plugin builds against. Nodes get enroot too, with the users' containers and the image layer
    cache under `scratch` (local NVMe) when they have it."""
    slurm = require_slurm(spec)
    if slurm.containers != "pyxis":
        return {}
    pins = facts.containers
    result: dict[str, Any] = {
        "clusterfab_pyxis_enabled": True,
        "pyxis_version": pins.pyxis.version,
        "pyxis_url": pins.pyxis.url,
        "pyxis_checksum": pins.pyxis.checksum,
        "pyxis_slurm_version": slurm.package_version,
        "pyxis_slurm_dev_package": facts.release.packages.development,
        "pyxis_enroot": enroot,
        "pyxis_restart_slurmd": enroot,
    }
    if enroot:
        result |= {
            "pyxis_enroot_version": pins.enroot.version,
            "pyxis_enroot_url": pins.enroot.url,
            "pyxis_enroot_checksum": pins.enroot.checksum,
            "pyxis_enroot_makeself_url": pins.enroot_makeself.url,
            "pyxis_enroot_makeself_checksum": pins.enroot_makeself.checksum,
            "pyxis_enroot_kernel_headers_url": pins.enroot_kernel_headers.url,
            "pyxis_enroot_kernel_headers_checksum": pins.enroot_kernel_headers.checksum,
        }
        if scratch is not None:
            result["pyxis_enroot_data_dir"] = f"{scratch}/enroot/data"
            result["pyxis_enroot_cache_dir"] = f"{scratch}/enroot/cache"
    return result


def client_vars(
    spec: ClusterSpec, facts: SlurmFacts, *, stack: str, project: str | None = None
) -> dict[str, Any]:
    """Extravars of slurm_login.yml: where the configuration comes from, which packages, the users."""
    return {
        **_munge(spec, stack, controller=False, project=project),
        **_users(spec),
        "slurm_login_conf_server": _conf_server(spec, facts),
        "slurm_login_packages": list(facts.release.packages.login),
        "slurm_login_version": require_slurm(spec).package_version,
        # srun, salloc and sbatch load the plugin for their --container-* options.
        **_pyxis(spec, facts, enroot=False),
    }


def node_vars(
    spec: ClusterSpec, facts: SlurmFacts, group: NodeGroup, *, stack: str, project: str | None = None
) -> dict[str, Any]:
    """Extravars of gpu_node.yml's Slurm part for one node group: slurmd configless, named by the node
    sync's instance tag, the GPUs its health check expects, and on spot capacity the watcher that sets the
    node DOWN on the cloud's interruption notice (the group's capacity is all its nodes': static and
    elastic nodes boot from the one template)."""
    return {
        **_munge(spec, stack, controller=False, project=project),
        **_users(spec),
        "clusterfab_slurm_enabled": True,
        "slurm_node_conf_server": _conf_server(spec, facts),
        "slurm_node_packages": list(facts.release.packages.node),
        "slurm_node_version": require_slurm(spec).package_version,
        "slurm_node_name_source": spec.cloud,
        **_name_tag(spec, group),
        "slurm_node_gpus": group.gpus_per_node,
        "slurm_node_spot_watch": isinstance(group.capacity, Spot),
        # Images and their unpacked copies are large (tens of GB each): on the local NVMe when there is one.
        **_pyxis(
            spec,
            facts,
            enroot=True,
            scratch=group.local_scratch.mount_point if group.local_scratch.enabled else None,
        ),
    }


def _units(spec: ClusterSpec) -> dict[str, dict[str, Any]]:
    """Where nodes join by fabric unit, each unit's node group, its nodes (`<group>-<first>` and the `nodes`
    after it) and how many of them are always up: the node sync finds each unit's machines by the unit's
    tag and keeps it at least that size; the resume program grows it by one machine per elastic node."""
    return {
        unit.name: {
            "group": group.name,
            "first": unit.first,
            "nodes": unit.size,
            "static": unit.always_up(group.static_size),
        }
        for group in slurm_node_groups(spec)
        for unit in fabric_units(spec, group) or ()
    }


def _claims(spec: ClusterSpec) -> bool:
    """Whether any Slurm node group's nodes claim their Slurm nodes (they join by fabric unit)."""
    return any(fabric_units(spec, g) is not None for g in slurm_node_groups(spec))


def _name_tag(spec: ClusterSpec, group: NodeGroup) -> dict[str, Any]:
    """Where nodes join by fabric unit, the tag their start program reads the unit's name from."""
    if fabric_units(spec, group) is None:
        return {}
    # The node claims its Slurm node with client commands before its slurmd runs: they need the cluster's
    # name (slurm.conf's ClusterName) in the small configuration they start from.
    return {"slurm_node_name_tag": FABRIC_UNIT_TAG, "slurm_node_cluster_name": spec.name}


def controller_host_vars(
    spec: ClusterSpec, catalog: Catalog, *, stack: str, files_dir: str, project: str | None = None
) -> dict[str, Any]:
    """Everything the controller's boot passes to slurm_controller.yml: the Slurm controller's vars and,
    when the controller hosts the cluster's monitoring, monitoring.yml's (its rendered files under
    `monitoring/` of the same archive) and the Slurm exporter."""
    host_vars = controller_vars(spec, catalog.slurm, stack=stack, files_dir=files_dir, project=project)
    if spec.monitoring is not None and spec.monitoring.host == "controller":
        monitoring_dir = f"{files_dir}/{MONITORING_DIR}"
        port = catalog.monitoring.exporters.slurm_exporter_port
        host_vars |= monitoring_host_vars(spec, catalog, files_dir=monitoring_dir, project=project)
        host_vars |= {
            "metadata_guard_allowed_users": ["root", SLURM_USER, PROMETHEUS_USER],
            "clusterfab_monitoring_enabled": True,
            "slurm_controller_exporter_program": f"{files_dir}/{EXPORTER_PROGRAM}",
            "slurm_controller_exporter_listen": f"127.0.0.1:{port}",
        }
    return host_vars


NODES_LIB = "lib"
NODES_PACKAGE = "clusterfab_slurm_nodes"
"""The node sync and power programs, shipped as this package under `lib/` of the controller's files."""
EXPORTER_PROGRAM = "bin/clusterfab-slurm-exporter"
MONITORING_DIR = "monitoring"
SYNC_CONFIG = "nodesync.json"


def controller_files(
    spec: ClusterSpec,
    facts: SlurmFacts,
    *,
    stack: str,
    project: str | None = None,
    cloud_settings: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """What the controller's boot fetches: the rendered configuration (`clusterfab render slurm`), the
    node sync and power programs and their settings (the node groups' static and full sizes, the
    cluster's tags, the region, when the cloud takes the machines of groups whose capacity ends; on GCP
    the project, the zone and, from the stack, how each elastic group's template is found and its VMs
    named, as `cloud_settings`, which the cloud's stack computes)."""
    from importlib import resources  # noqa: PLC0415 - only the program's build needs it

    files = render_slurm(spec, facts)
    groups = _group_sizes(spec)
    package = resources.files("clusterfab.scheduler.slurm")
    nodes = package.joinpath("nodes")
    for module in sorted(m.name for m in nodes.iterdir() if m.name.endswith(".py")):
        files[f"{NODES_LIB}/{NODES_PACKAGE}/{module}"] = nodes.joinpath(module).read_text()
    files[EXPORTER_PROGRAM] = package.joinpath("exporter.py").read_text()
    where: dict[str, Any] = dict(profile(spec.cloud).instance_location(spec.region, spec.zone, project))
    where |= cloud_settings or {}
    if units := _units(spec):
        where["units"] = units
    if ends := _group_ends(spec):
        where["ends"] = ends
    files[SYNC_CONFIG] = json.dumps(
        {"cloud": spec.cloud, "groups": groups, "blueprint": spec.name, "stack": label_value(stack), **where},
        indent=2,
        sort_keys=True,
    )
    return files


HEALTH_PROGRAM = "bin/clusterfab-slurm-healthcheck"
HEALTH_CONFIG = "healthcheck.json"
HEALTH_IB_PAIR = "bin/clusterfab_slurm_ibpair.py"


def health_files(spec: ClusterSpec, floors: PairBandwidthFloors) -> dict[str, str]:
    """The deep health check (`clusterfab health`) beside the controller's files: the program, its
    InfiniBand pair module and its settings, each Slurm node group's machine type and two-node bandwidth
    floors with their source."""
    from importlib import resources  # noqa: PLC0415 - only the program's build needs it

    slurm = require_slurm(spec)
    wanted = {name for partition in slurm.partitions for name in partition.node_groups}
    groups = {
        g.name: {
            "machine_type": g.machine.name,
            "min_pair_busbw_gbytes_per_s": floors.floor(g.machine.name),
            "floor_source": ",".join(floors.source) if floors.floor(g.machine.name) is not None else None,
            **floors.ib_write_bw.settings(g.machine),
        }
        for g in spec.node_groups
        if g.name in wanted
    }
    package = resources.files("clusterfab.scheduler.slurm")
    config = json.dumps({"groups": groups}, indent=2, sort_keys=True)
    return {
        HEALTH_PROGRAM: package.joinpath("healthcheck.py").read_text(),
        HEALTH_IB_PAIR: package.joinpath("ibpair.py").read_text(),  # imported from the program's directory
        HEALTH_CONFIG: config,
    }


def slurm_node_groups(spec: ClusterSpec) -> list[NodeGroup]:
    """The node groups slurm.conf has nodes of: those in a partition, with nodes."""
    require_slurm(spec)  # a spec without Slurm is a caller's error, not an empty list
    return list(slurm_groups(spec))


def _group_ends(spec: ClusterSpec) -> dict[str, str]:
    """When the cloud takes each Slurm group's machines whatever runs on them (a capacity block's instances
    are terminated from `terminates_at`), for the node sync to reserve their nodes before then."""
    return {
        g.name: f"{end:%Y-%m-%dT%H:%M:%SZ}"
        for g in slurm_node_groups(spec)
        if isinstance(g.capacity, CapacityBlock) and (end := g.capacity.terminates_at) is not None
    }


def _group_sizes(spec: ClusterSpec) -> dict[str, dict[str, int]]:
    return {g.name: {"static": g.static_size, "size": g.max_size} for g in slurm_node_groups(spec)}
