"""The policy pack's checks of Azure resources, per resource type: public addresses on nodes (and a public
endpoint on the accounting database), encryption
at host, SSH / RDP open to the internet in network security groups, and role assignments that reach
further than the cluster's own resources. clusterfab.policy.checks and .access add these tables to theirs.

Properties are the Pulumi inputs of pulumi-azure-native, whose `properties` objects are flattened: a
security rule's `access`, an IP configuration's `publicIPAddressConfiguration` sit where the REST API
nests them one level deeper.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from clusterfab.clouds.azure.profile import SCALE_SET
from clusterfab.core import exposure
from clusterfab.policy.resources import Resource, items, strings, truthy

VIRTUAL_MACHINE = "azure-native:compute:VirtualMachine"
NETWORK_INTERFACE = "azure-native:network:NetworkInterface"
SECURITY_GROUP = "azure-native:network:NetworkSecurityGroup"
SECURITY_RULE = "azure-native:network:SecurityRule"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
ROLE_DEFINITION = "azure-native:authorization:RoleDefinition"
MYSQL_SERVER = "azure-native:dbformysql:Server"

ADMIN_PORTS = {22: "SSH", 3389: "RDP"}
INTERNET_TAGS = {"*", "internet", "any"}
"""Source address prefixes that mean anyone: the wildcard and the Internet service tag (Azure's
network security groups, "Service tags" and "Security rules")."""
BROAD_ROLES = {
    "8e3af657-a8ff-443c-a75c-2fe8c4bcb635": "Owner",
    "b24988ac-6180-42a0-ab88-20f7382dd24c": "Contributor",
    "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9": "User Access Administrator",
}
"""Built-in roles that allow every action (Owner, Contributor) or granting any role (User Access
Administrator), by their role definition ids (learn.microsoft.com/azure/role-based-access-control/
built-in-roles)."""
Check = Callable[[Resource], list[str]]


# --- public addresses ----------------------------------------------------------------------------------


def _public_configs(what: str, ip_configurations: list[Mapping[str, Any]]) -> list[str]:
    return [
        f"{what} gives its VMs a public IP address (ipConfigurations {config.get('name', '?')}): remove "
        "publicIPAddressConfiguration; nodes reach the internet through the NAT gateway"
        for config in ip_configurations
        if config.get("publicIPAddressConfiguration") or config.get("publicIPAddress")
    ]


def _scale_set_ips(resource: Resource) -> list[str]:
    profile = next(iter(items(resource.props.get("virtualMachineProfile"))), {})
    network = next(iter(items(profile.get("networkProfile"))), {})
    nics = items(network.get("networkInterfaceConfigurations"))
    configs = [c for nic in nics for c in items(nic.get("ipConfigurations"))]
    return _public_configs(f"scale set {resource.name}", configs)


def _nic_ips(resource: Resource) -> list[str]:
    return _public_configs(
        f"network interface {resource.name}", items(resource.props.get("ipConfigurations"))
    )


def _mysql_public(resource: Resource) -> list[str]:
    """A flexible server takes connections from the internet unless it is in a delegated subnet (private
    access, which has no public endpoint) with public network access disabled."""
    network = next(iter(items(resource.props.get("network"))), {})
    if network.get("delegatedSubnetResourceId") and network.get("publicNetworkAccess") == "Disabled":
        return []
    return [
        f"MySQL flexible server {resource.name} has a public endpoint: give it a delegated subnet "
        "(network.delegatedSubnetResourceId) and set network.publicNetworkAccess to Disabled"
    ]


PUBLIC_IP_CHECKS: dict[str, Check] = {
    SCALE_SET: _scale_set_ips,
    NETWORK_INTERFACE: _nic_ips,
    MYSQL_SERVER: _mysql_public,
}


# --- encryption ----------------------------------------------------------------------------------------


def _encrypted_at_host(what: str, profile: Mapping[str, Any]) -> list[str]:
    security = next(iter(items(profile.get("securityProfile"))), {})
    storage = next(iter(items(profile.get("storageProfile"))), {})
    os_disk = next(iter(items(storage.get("osDisk"))), {})
    managed = next(iter(items(os_disk.get("managedDisk"))), {})
    if truthy(security.get("encryptionAtHost")) or managed.get("diskEncryptionSet"):
        return []
    return [
        f"{what} does not encrypt at host: set securityProfile.encryptionAtHost to true (its temporary and "
        "cache disks are otherwise unencrypted), or give the OS disk a disk encryption set"
    ]


def _scale_set_encryption(resource: Resource) -> list[str]:
    profile = next(iter(items(resource.props.get("virtualMachineProfile"))), {})
    return _encrypted_at_host(f"scale set {resource.name}", profile)


def _vm_encryption(resource: Resource) -> list[str]:
    return _encrypted_at_host(f"virtual machine {resource.name}", resource.props)


ENCRYPTION_CHECKS: dict[str, Check] = {SCALE_SET: _scale_set_encryption, VIRTUAL_MACHINE: _vm_encryption}


# --- SSH / RDP from the internet ----------------------------------------------------------------------


def _ports(rule: Mapping[str, Any]) -> list[int]:
    opened: set[int] = set()
    for text in strings(rule.get("destinationPortRange")) + strings(rule.get("destinationPortRanges")):
        if text.strip() == "*":
            return sorted(ADMIN_PORTS)
        low, _, high = text.partition("-")
        if low.strip().isdigit() and (high or low).strip().isdigit():
            opened |= {p for p in ADMIN_PORTS if int(low) <= p <= int(high or low)}
    return sorted(opened)


def _rule_problems(what: str, rule: Mapping[str, Any]) -> Iterator[str]:
    inbound = str(rule.get("direction", "")).lower() == "inbound"
    if not inbound or str(rule.get("access", "")).lower() != "allow":
        return
    if str(rule.get("protocol", "*")).lower() not in ("*", "tcp"):
        return
    ports = _ports(rule)
    for source in strings(rule.get("sourceAddressPrefix")) + strings(rule.get("sourceAddressPrefixes")):
        net = exposure.network(source)
        if source.strip().lower() in INTERNET_TAGS:
            reach = "the whole internet"
        elif net is not None and exposure.too_public(net):
            reach = exposure.describe(net)
        else:
            continue
        for port in ports:
            yield (
                f"{what} opens {ADMIN_PORTS[port]} (port {port}) to {reach} (source {source}): reach nodes "
                "through Run Command or Azure Bastion, or allow only an office or VPN range "
                f"(a /{exposure.PUBLIC_PREFIX_MIN} or narrower)"
            )


def _security_group(resource: Resource) -> list[str]:
    return [
        problem
        for rule in items(resource.props.get("securityRules"))
        for problem in _rule_problems(f"security rule {rule.get('name', '?')} of {resource.name}", rule)
    ]


def _security_rule(resource: Resource) -> list[str]:
    return list(_rule_problems(f"security rule {resource.name}", resource.props))


INGRESS_CHECKS: dict[str, Check] = {SECURITY_GROUP: _security_group, SECURITY_RULE: _security_rule}


# --- role assignments ---------------------------------------------------------------------------------


_BROAD_SCOPE = re.compile(
    r"/?|/subscriptions/[^/]+/?|/providers/microsoft\.management/managementgroups/[^/]+/?", re.IGNORECASE
)
"""The root, a subscription, a management group: scopes that reach beyond the cluster's own resources."""


def _scope_problem(what: str, scope: str) -> list[str]:
    if _BROAD_SCOPE.fullmatch(scope.strip()):
        return [f"{what} is scoped to {scope or '/'}: scope it to the one resource it needs"]
    return []


def _role_assignment(resource: Resource) -> list[str]:
    what = f"role assignment {resource.name}"
    role = str(resource.props.get("roleDefinitionId", "")).rstrip("/").rsplit("/", 1)[-1].lower()
    found = _scope_problem(what, str(resource.props.get("scope", "")))
    if role in BROAD_ROLES:
        found.append(f"{what} grants {BROAD_ROLES[role]}, which allows every action: grant a narrower role")
    return found


def _role_definition(resource: Resource) -> list[str]:
    actions = [
        action
        for permission in items(resource.props.get("permissions"))
        for action in strings(permission.get("actions")) + strings(permission.get("dataActions"))
    ]
    if "*" in actions:
        return [f"role definition {resource.name} allows every action (*): list the actions it needs"]
    return []


ROLE_CHECKS: dict[str, Check] = {ROLE_ASSIGNMENT: _role_assignment, ROLE_DEFINITION: _role_definition}
