"""The policy pack's Azure checks on resources as pulumi-azure-native plans them (flattened properties):
each check refuses the unsafe form with its exact message and passes the safe one; and the accounting
databases of every cloud, which the same public-address policy covers."""

from __future__ import annotations

import copy
from typing import Any

from clusterfab.plan.project import Plan
from clusterfab.policy import access, checks
from clusterfab.policy.resources import Resource
from tests.components.test_aws_slurm_accounting import managed as aws_managed
from tests.components.test_azure_slurm_accounting import managed as azure_managed
from tests.components.test_gcp_slurm_accounting import managed as gcp_managed

URN = "urn:pulumi:prod::clusterfab::t::x"
SCALE_SET = "azure-native:compute:VirtualMachineScaleSet"
EVERYONE = "the whole internet"
ADVICE = (
    "reach nodes through Run Command or Azure Bastion, or allow only an office or VPN range "
    "(a /24 or narrower)"
)


def _scale_set(ip_config: dict[str, Any], security: dict[str, Any]) -> Resource:
    profile = {
        "securityProfile": security,
        "storageProfile": {"osDisk": {"createOption": "FromImage", "managedDisk": {}}},
        "networkProfile": {
            "networkInterfaceConfigurations": [
                {"name": "nic", "primary": True, "ipConfigurations": [ip_config]}
            ]
        },
    }
    return Resource(SCALE_SET, "trainers", URN, {"virtualMachineProfile": profile})


def test_a_scale_set_with_a_public_ip_configuration_is_refused() -> None:
    private = _scale_set({"name": "ip", "subnet": {"id": "s"}}, {"encryptionAtHost": True})
    public = _scale_set(
        {"name": "ip", "subnet": {"id": "s"}, "publicIPAddressConfiguration": {"name": "pip"}},
        {"encryptionAtHost": True},
    )
    assert checks.public_ips(private) == []
    assert checks.public_ips(public) == [
        "scale set trainers gives its VMs a public IP address (ipConfigurations ip): remove "
        "publicIPAddressConfiguration; nodes reach the internet through the NAT gateway"
    ]


def test_a_mysql_server_with_a_public_endpoint_is_refused() -> None:
    def server(network: dict[str, Any]) -> Resource:
        return Resource("azure-native:dbformysql:Server", "acct", URN, {"network": network})

    private = {"delegatedSubnetResourceId": "db-subnet", "publicNetworkAccess": "Disabled"}
    refusal = [
        "MySQL flexible server acct has a public endpoint: give it a delegated subnet "
        "(network.delegatedSubnetResourceId) and set network.publicNetworkAccess to Disabled"
    ]
    assert checks.public_ips(server(private)) == []
    assert checks.public_ips(server({"publicNetworkAccess": "Enabled"})) == refusal
    assert checks.public_ips(server({**private, "publicNetworkAccess": "Enabled"})) == refusal
    assert checks.public_ips(server({})) == refusal


def test_a_scale_set_encrypts_at_host_or_names_a_disk_encryption_set() -> None:
    assert checks.encryption(_scale_set({"name": "ip"}, {"encryptionAtHost": True})) == []
    set_ = _scale_set({"name": "ip"}, {})
    set_.props["virtualMachineProfile"]["storageProfile"]["osDisk"]["managedDisk"] = {
        "diskEncryptionSet": {
            "id": "/subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/diskEncryptionSets/z"
        }
    }
    assert checks.encryption(set_) == []
    assert checks.encryption(_scale_set({"name": "ip"}, {"encryptionAtHost": False})) == [
        "scale set trainers does not encrypt at host: set securityProfile.encryptionAtHost to true (its "
        "temporary and cache disks are otherwise unencrypted), or give the OS disk a disk encryption set"
    ]


def _nsg(*rules: dict[str, Any]) -> Resource:
    return Resource(
        "azure-native:network:NetworkSecurityGroup", "nodes-nsg", URN, {"securityRules": list(rules)}
    )


def _rule(name: str, source: str, ports: str, **more: Any) -> dict[str, Any]:
    return {
        "name": name, "direction": "Inbound", "access": "Allow", "protocol": "Tcp", "priority": 100,
        "sourceAddressPrefix": source, "destinationPortRange": ports, **more,
    }  # fmt: skip


def test_ssh_open_to_the_internet_in_a_security_group_is_refused() -> None:
    assert (
        access.admin_ports_from_internet(
            _nsg(
                _rule("vnet-ssh", "VirtualNetwork", "22"),
                _rule("office", "198.51.100.0/24", "22"),
                _rule("deny", "Internet", "*", access="Deny"),
                _rule("out", "*", "22", direction="Outbound"),
            )
        )
        == []
    )
    assert access.admin_ports_from_internet(
        _nsg(_rule("anyone", "*", "20-30"), _rule("wide", "8.0.0.0/8", "3389"), _rule("tag", "Internet", "*"))
    ) == [
        f"security rule anyone of nodes-nsg opens SSH (port 22) to the whole internet (source *): {ADVICE}",
        "security rule wide of nodes-nsg opens RDP (port 3389) to 16,777,216 public addresses (8.0.0.0/8) "
        f"(source 8.0.0.0/8): {ADVICE}",
        f"security rule tag of nodes-nsg opens SSH (port 22) to {EVERYONE} (source Internet): {ADVICE}",
        f"security rule tag of nodes-nsg opens RDP (port 3389) to {EVERYONE} (source Internet): {ADVICE}",
    ]


def _assignment(scope: str, role: str) -> Resource:
    props = {
        "scope": scope,
        "roleDefinitionId": f"/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/{role}",
        "principalId": "p",
    }
    return Resource("azure-native:authorization:RoleAssignment", "nodes-read", URN, props)


READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"  # Storage Blob Data Reader
CONTAINER = (
    "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/a/blobServices/default/"
    "containers/c"
)


def test_role_assignments_stay_on_the_clusters_own_resources() -> None:
    assert access.wildcard_iam(_assignment(CONTAINER, READER)) == []
    group_scope = "/subscriptions/s/resourceGroups/g"
    assert access.wildcard_iam(_assignment(group_scope, READER)) == []  # the cluster's own resource group
    assert access.wildcard_iam(_assignment("/subscriptions/s", "b24988ac-6180-42a0-ab88-20f7382dd24c")) == [
        "role assignment nodes-read is scoped to /subscriptions/s: scope it to the one resource it needs",
        "role assignment nodes-read grants Contributor, which allows every action: grant a narrower role",
    ]
    group = "/providers/Microsoft.Management/managementGroups/root"
    assert access.wildcard_iam(_assignment(group, READER)) == [
        f"role assignment nodes-read is scoped to {group}: scope it to the one resource it needs"
    ]
    definition = Resource(
        "azure-native:authorization:RoleDefinition", "custom", URN, {"permissions": [{"actions": ["*"]}]}
    )
    assert access.wildcard_iam(definition) == [
        "role definition custom allows every action (*): list the actions it needs"
    ]


def _database(plan: Plan, type_: str) -> Resource:
    [found] = [r for r in plan.resources if r.type == type_]
    return Resource(found.type, found.name, found.urn, copy.deepcopy(dict(found.inputs)))


def test_every_clouds_accounting_database_is_private_and_a_public_one_is_refused() -> None:
    """The policy pack refuses a managed accounting database the internet could reach, on every cloud: RDS
    unless publiclyAccessible is false (CreateDBInstance defaults it to true without a DB subnet group,
    botocore's rds model), Cloud SQL unless ipv4Enabled is false, Azure's flexible server unless it has a
    delegated subnet and public network access off. The stacks' own plans pass."""
    rds = _database(aws_managed(), "aws:rds/instance:Instance")
    cloud_sql = _database(gcp_managed(), "gcp:sql/databaseInstance:DatabaseInstance")
    mysql = _database(azure_managed(), "azure-native:dbformysql:Server")
    assert [checks.public_ips(r) for r in (rds, cloud_sql, mysql)] == [[], [], []]

    rds.props["publiclyAccessible"] = True
    cloud_sql.props["settings"]["ipConfiguration"]["ipv4Enabled"] = True
    mysql.props["network"]["publicNetworkAccess"] = "Enabled"
    assert checks.public_ips(rds) == [
        f"RDS instance {rds.name} may be publicly accessible: set publiclyAccessible to false (the "
        "accounting database is reached from the controller alone)"
    ]
    assert checks.public_ips(cloud_sql) == [
        f"Cloud SQL instance {cloud_sql.name} has a public IP address: set settings.ipConfiguration."
        "ipv4Enabled to false and give it a private network"
    ]
    assert checks.public_ips(mysql) == [
        f"MySQL flexible server {mysql.name} has a public endpoint: give it a delegated subnet "
        "(network.delegatedSubnetResourceId) and set network.publicNetworkAccess to Disabled"
    ]
    # Left out, each takes its service's default, which is public.
    del rds.props["publiclyAccessible"], cloud_sql.props["settings"]["ipConfiguration"]["ipv4Enabled"]
    assert all(checks.public_ips(r) for r in (rds, cloud_sql))
