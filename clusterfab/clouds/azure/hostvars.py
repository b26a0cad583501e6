"""Where an Azure cluster's hosts find what they call: the region's services, and the region's VMs."""

from __future__ import annotations

from clusterfab.core.naming import physical

RESOURCE_GROUP_NAME_MAX = 90
"""A resource group name: 1-90 letters, digits, underscores, hyphens, periods and parentheses
(learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules, Microsoft.Resources)."""

NODE_BLOCK = 0
CONTROLLER_BLOCK = 1
"""Blocks of the cluster range (clusterfab.addressing.blocks): the GPU nodes' subnet, and the subnet of the
Slurm controller and login hosts (the profile's `host_subnet`, where the controller has its fixed address)."""

CONTROLLER_STATE_DEVICE = "/dev/disk/azure/data/by-lun/0"
"""The link Azure's udev rules (azure-vm-utils / waagent, 66-azure-storage.rules) make for the data disk
at LUN 0: the realizer attaches the controller's state disk there."""


def resource_group_name(cluster: str, stack: str) -> str:
    """The stack's resource group: named, not auto-named, so that what runs on the hosts can name it before
    it exists (Prometheus's discovery lists that group's VMs alone, which the controller may read)."""
    return physical("clusterfab", cluster, stack, max_length=RESOURCE_GROUP_NAME_MAX)


def service_location(region: str, project: str | None) -> dict[str, str]:
    """Key Vault and Azure Database for MySQL are addressed by name; the region is what a host needs."""
    del project  # Azure has subscriptions, which a host's managed identity already belongs to
    return {"region": region}


def instance_location(region: str, zone: str, project: str | None) -> dict[str, str]:
    """Scale sets are listed per region; a cluster's nodes are in one zone of it."""
    del project
    return {"region": region, "zone": zone}
