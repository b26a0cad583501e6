"""Managed accounting on Azure: slurmdbd's database on Azure Database for MySQL flexible server, in a subnet
delegated to it that the controller subnet alone reaches, with no public access, TLS only, backed up and
protected like the rest of the cluster's state; the controller alone may read the server and set its
administrator password, and its boot script says how to find the server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest

from clusterfab.plan.compare import compare
from clusterfab.plan.engine import PlanError
from clusterfab.plan.project import Plan
from components.azure.slurm_database import (
    AzureSlurmDatabase,
    AzureSlurmDatabaseArgs,
    AzureSlurmDatabaseSettings,
)
from tests.components.azure_harness import build
from tests.components.harness import all_of, boot_vars, one, plan_text
from tests.components.test_azure_slurm import BLUEPRINT, _script
from tests.conftest import REPO
from tests.factories import TODAY

SERVER = "azure-native:dbformysql:Server"
SUBNET = "azure-native:network:Subnet"
NSG = "azure-native:network:NetworkSecurityGroup"
ROLE = "azure-native:authorization:RoleAssignment"
ROLE_DEFINITION = "azure-native:authorization:RoleDefinition"
VM = "azure-native:compute:VirtualMachine"
MANAGED = BLUEPRINT.replace("  login: {count: 1}\n", "  login: {count: 1}\n  accounting: managed\n")
NAME = "clusterfab-hpc-prod-slurmdb"
"""The server's name: <cluster>-<stack>, as the controller looks for it."""


def managed(body: str = MANAGED, env: str | None = "prod") -> Plan:
    return plan_text(body, env)


PLAN = managed()


def test_the_server_is_mysql_8_4_general_purpose_private_tls_only_and_protected() -> None:
    server = one(PLAN, SERVER, "hpc-slurm-db-server")
    assert server.protect
    inputs = dict(server.inputs)
    assert inputs.pop("administratorLoginPassword") == "[secret]"
    assert inputs == {
        "administratorLogin": "clusterfab",
        "availabilityZone": "1",
        "backup": {"backupRetentionDays": 7, "geoRedundantBackup": "Disabled"},
        "highAvailability": {"mode": "Disabled"},
        "location": "southcentralus",
        "network": {
            "delegatedSubnetResourceId": "hpc-net-database-id",
            "privateDnsZoneResourceId": "hpc-slurm-db-dns-id",
            "publicNetworkAccess": "Disabled",
        },
        "resourceGroupName": "hpc-rg-rg",
        "serverName": NAME,
        "sku": {"name": "Standard_D2ads_v5", "tier": "GeneralPurpose"},
        # Storage grows on its own (the API's default is Disabled), in the server's zone (the SDK's defaults).
        "storage": {
            "autoGrow": "Enabled",
            "autoIoScaling": "Enabled",
            "logOnDisk": "Disabled",
            "storageRedundancy": "LocalRedundancy",
            "storageSizeGB": 50,
        },
        "tags": server.inputs["tags"],
        "version": "8.4",
    }
    assert server.inputs["tags"] == {
        "clusterfab-blueprint": "hpc",
        "clusterfab-component": "slurm-db",
        "clusterfab-stack": "prod",
    }


def test_tls_is_required_and_slurmdbds_database_is_made_and_kept() -> None:
    configurations = all_of(PLAN, "azure-native:dbformysql:Configuration")
    settings = {r.inputs["configurationName"]: r.inputs["value"] for r in configurations}
    assert settings == {
        "innodb_lock_wait_timeout": "900",
        "max_allowed_packet": "16777216",
        "require_secure_transport": "ON",
    }
    database = one(PLAN, "azure-native:dbformysql:Database", "hpc-slurm-db-database")
    assert database.protect
    assert database.inputs["databaseName"] == "slurm_acct_db"


def test_the_server_resolves_in_its_own_private_zone_linked_to_the_vnet() -> None:
    zone = one(PLAN, "azure-native:privatedns:PrivateZone", "hpc-slurm-db-dns").inputs
    assert zone["privateZoneName"] == f"{NAME}.private.mysql.database.azure.com"
    assert zone["location"] == "global"
    link = one(PLAN, "azure-native:privatedns:VirtualNetworkLink", "hpc-slurm-db-dns-link").inputs
    assert link["virtualNetwork"] == {"id": "hpc-net-vnet-id"}
    assert link["registrationEnabled"] is False


def test_the_delegated_subnet_takes_mysql_from_the_controller_subnet_alone() -> None:
    subnet = one(PLAN, SUBNET, "hpc-net-database").inputs
    # The first /28 of block 14 of 10.20.0.0/16 (blocks of /20): the block before the Bastion's.
    assert subnet["addressPrefix"] == "10.20.224.0/28"
    assert subnet["delegations"] == [
        {"name": "mysql-flexible-server", "serviceName": "Microsoft.DBforMySQL/flexibleServers"}
    ]
    assert subnet["defaultOutboundAccess"] is False
    assert "natGateway" not in subnet
    rules = {
        r["name"]: (r["priority"], r["access"], r.get("sourceAddressPrefix"), r.get("destinationPortRange"))
        for r in one(PLAN, NSG, "hpc-net-database-nsg").inputs["securityRules"]
    }
    assert rules == {
        "AllowMySqlFromController": (100, "Allow", "10.20.16.0/20", "3306"),
        "AllowOwnSubnet": (110, "Allow", "10.20.224.0/28", "*"),
        "DenyVnetInbound": (4095, "Deny", "VirtualNetwork", "*"),
        "DenyInternetInbound": (4096, "Deny", "Internet", "*"),
    }


def test_the_controller_may_read_the_server_and_set_its_password_nothing_more() -> None:
    role = one(PLAN, ROLE_DEFINITION, "hpc-slurm-db-password-role").inputs
    assert role["permissions"] == [
        {
            "actions": [
                "Microsoft.DBforMySQL/flexibleServers/read",
                "Microsoft.DBforMySQL/flexibleServers/write",
            ]
        }
    ]
    # Assignable in the stack's resource group alone, and assigned on the one server.
    assert role["assignableScopes"] == ["hpc-rg-rg-id"]
    assert role["scope"] == "hpc-rg-rg-id"
    assert role["roleName"] == f"clusterfab accounting password {NAME} hpc-rg-rg-id"
    assert role["roleType"] == "CustomRole"
    grant = one(PLAN, ROLE, "hpc-slurm-db-password").inputs
    assert grant["scope"] == "hpc-slurm-db-server-id"
    assert grant["roleDefinitionId"] == "hpc-slurm-db-password-role-id"
    assert grant["principalType"] == "ServicePrincipal"


def test_the_controller_boot_says_where_the_server_is_and_which_roots_sign_it() -> None:
    controller = boot_vars(_script(one(PLAN, VM, "hpc-slurm-controller").inputs))
    found: Any = controller["slurm_controller_database"]
    assert found == {
        "cloud": "azure",
        "identifier": NAME,
        "region": "southcentralus",
        "ca_certificates": [
            "/usr/share/ca-certificates/mozilla/DigiCert_Global_Root_G2.crt",
            "/usr/share/ca-certificates/mozilla/Microsoft_RSA_Root_Certificate_Authority_2017.crt",
        ],
        "ca_file": "/etc/slurm/accounting-db-ca.pem",
    }
    assert controller["slurm_controller_accounting"] == "managed"


def test_embedded_accounting_makes_no_server_and_no_delegated_subnet() -> None:
    plan = managed(BLUEPRINT)
    assert all_of(plan, SERVER) == []
    assert "hpc-net-database" not in {r.name for r in all_of(plan, SUBNET)}


# --- diff: what a change of accounting does to the stack -------------------------------------------------

EXAMPLE = REPO / "blueprints" / "examples" / "azure-ndv5-ib-slurm.yaml"
EXAMPLE_SERVER = "ndv5-slurm-slurm-db-server"


def _example(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = EXAMPLE.read_text()
    assert old in text, old
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return path


def test_turning_managed_accounting_on_adds_the_server_and_destroys_nothing(tmp_path: Path) -> None:
    managed_example = _example(tmp_path, "managed.yaml", "accounting: embedded", "accounting: managed")
    report = compare(EXAMPLE, managed_example, env="prod", today=TODAY)
    created = {(r.type, r.name) for r in report.resources.create}
    assert {
        (SERVER, EXAMPLE_SERVER),
        ("azure-native:dbformysql:Database", "ndv5-slurm-slurm-db-database"),
        ("azure-native:privatedns:PrivateZone", "ndv5-slurm-slurm-db-dns"),
        (SUBNET, "ndv5-slurm-net-database"),
        (ROLE_DEFINITION, "ndv5-slurm-slurm-db-password-role"),
    } <= created
    assert report.resources.delete == ()
    assert report.resources.destructive() == []
    assert not report.refused(allow_replace=False)


def test_turning_managed_accounting_off_deletes_the_accounting_and_is_refused(tmp_path: Path) -> None:
    managed_example = _example(tmp_path, "managed.yaml", "accounting: embedded", "accounting: managed")
    report = compare(managed_example, EXAMPLE, env="prod", today=TODAY)
    assert sorted(r.name for r, _ in report.resources.destructive()) == [
        "ndv5-slurm-slurm-db-database",
        EXAMPLE_SERVER,
    ]
    assert report.refused(allow_replace=False)


def test_a_larger_database_machine_changes_the_server_in_place(tmp_path: Path) -> None:
    before = _example(tmp_path, "before.yaml", "accounting: embedded", "accounting: managed")
    after = _example(
        tmp_path,
        "after.yaml",
        "accounting: embedded",
        "accounting: managed\n  database: {machine_type: Standard_E4ads_v5, storage_gib: 100}",
    )
    report = compare(before, after, env="prod", today=TODAY)
    [server] = [u for u in report.resources.update if u.after.name == EXAMPLE_SERVER]
    assert (server.changed, server.replace) == (("sku.name", "sku.tier", "storage.storageSizeGB"), False)
    assert report.resources.destructive() == []


def test_the_database_component_refuses_what_the_service_does_not_take_all_at_once() -> None:
    settings = AzureSlurmDatabaseSettings(
        name="Clusterfab_Acct", sku_tier="Premium", storage_gib=10, backup_retention_days=36
    )

    def program() -> None:
        AzureSlurmDatabase(
            "hpc-slurm-db",
            AzureSlurmDatabaseArgs(
                settings=settings,
                resource_group_name="rg",
                resource_group_id="/subscriptions/s/resourceGroups/rg",
                location="southcentralus",
                vnet_id="vnet",
                subnet_id="db-subnet",
                controller_principal_id="p",
            ),
        )

    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        build(program)
    assert (
        "settings.name: 'Clusterfab_Acct' is not a flexible server name: 3-63 lowercase letters, digits or "
        "hyphens, no hyphen first or last; "
        "settings.sku_tier: 'Premium' is not one of Burstable, GeneralPurpose, MemoryOptimized; "
        "settings.storage_gib: a flexible server has 20 to 16384 GiB of storage; "
        "settings.backup_retention_days: keep backups 1 to 35 days"
    ) in str(info.value)
