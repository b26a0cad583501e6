"""Managed accounting on GCP: slurmdbd's database on Cloud SQL for MySQL, with a private address only,
TLS only, backed up and protected like the rest of the cluster's state; no password passes through the
stack, and only the controller may find the instance and give slurmdbd's user its password."""

from __future__ import annotations

from typing import Any

from tests.components.harness import all_of, boot_vars, gcp_plan, one, startup_script
from tests.components.test_gcp_slurm import BODY, INSTANCE

SQL = "gcp:sql/databaseInstance:DatabaseInstance"
IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"
ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
MANAGED = BODY.replace("  login: {count: 1}\n", "  login: {count: 1}\n  accounting: managed\n")
KEY = "projects/test-project/locations/us-central1/keyRings/ring/cryptoKeys/slurm"
NAME = "clusterfab-gac-cluster-prod-slurmdb"


def managed(body: str = MANAGED, env: str | None = "prod") -> Any:
    return gcp_plan(body, name="gac", env=env)


def test_the_database_is_cloud_sql_for_mysql_with_a_private_address_tls_only_and_kept() -> None:
    plan = managed()
    instance = one(plan, SQL, "gac-cluster-slurm-accounting-instance")
    assert instance.inputs == {
        "databaseVersion": "MYSQL_8_4",
        "deletionProtection": True,
        "name": NAME,
        "project": "test-project",
        "region": "us-central1",
        "settings": {
            "availabilityType": "ZONAL",
            "backupConfiguration": {
                "backupRetentionSettings": {"retainedBackups": 7, "retentionUnit": "COUNT"},
                "binaryLogEnabled": True,
                "enabled": True,
                "transactionLogRetentionDays": 7,
            },
            "databaseFlags": [
                {"name": "innodb_lock_wait_timeout", "value": "900"},
                {"name": "max_allowed_packet", "value": "16777216"},
            ],
            "deletionProtectionEnabled": True,
            "diskAutoresize": True,
            "diskAutoresizeLimit": 200,
            "diskSize": 50,
            "diskType": "PD_SSD",
            "edition": "ENTERPRISE",
            # Deleted, it leaves a backup for a year (Cloud SQL's most), as RDS leaves a final snapshot.
            "finalBackupConfig": {"enabled": True, "retentionDays": 365},
            "ipConfiguration": {
                "allocatedIpRange": "gac-cluster-net-psa-range",
                "ipv4Enabled": False,
                "privateNetwork": "gac-cluster-net-sys-id",
                "serverCaMode": "GOOGLE_MANAGED_INTERNAL_CA",
                "sslMode": "ENCRYPTED_ONLY",
            },
            "locationPreference": {"zone": "us-central1-b"},
            "tier": "db-custom-2-8192",
            "userLabels": {
                "clusterfab-blueprint": "gac-cluster",
                "clusterfab-component": "slurm",
                "clusterfab-stack": "prod",
            },
        },
    }
    assert instance.protect is True
    # slurmdbd's database, made by the stack; removing it from the stack would leave the accounting be.
    database = one(plan, "gcp:sql/database:Database", "gac-cluster-slurm-accounting-database")
    assert database.inputs == {
        "deletionPolicy": "ABANDON",
        "instance": NAME,
        "name": "slurm_acct_db",
        "project": "test-project",
    }
    assert database.protect is True
    # Cloud SQL has no master password for us to keep, and the stack makes no user: no password anywhere.
    assert all_of(plan, "gcp:sql/user:User") == []
    assert "rootPassword" not in instance.inputs
    # Its address comes from the system VPC's private services access, which the instance waits for.
    psa = one(plan, "gcp:servicenetworking/connection:Connection", "gac-cluster-net-psa")
    assert psa.urn in instance.dependencies
    assert plan.outputs["scheduler"]["accounting_database"] == (
        "mock-project:mock-region:gac-cluster-slurm-accounting-instance"
    )


def test_managed_accounting_alone_brings_private_services_access() -> None:
    # The cluster has no managed storage: the database is why the network peers with Google's services.
    embedded = managed(MANAGED.replace("accounting: managed", "accounting: embedded"))
    assert all_of(embedded, "gcp:servicenetworking/connection:Connection") == []
    plan = managed()
    block = one(plan, "gcp:compute/globalAddress:GlobalAddress", "gac-cluster-net-psa-range").inputs
    # 10.60.0.0/16: the last of 16 blocks; at least the /24 Cloud SQL asks of an allocated range.
    assert (block["address"], block["prefixLength"], block["purpose"]) == ("10.60.240.0", 20, "VPC_PEERING")


def test_only_the_controller_may_find_this_instance_and_set_its_users_passwords() -> None:
    plan = managed()
    role = one(plan, ROLE, "gac-cluster-slurm-accounting-users-role").inputs
    assert role["permissions"] == [
        "cloudsql.instances.get",
        "cloudsql.users.create",
        "cloudsql.users.list",
        "cloudsql.users.update",
    ]
    assert role["roleId"] == "gac_cluster_prod_sync_acct"
    grant = one(plan, IAM_MEMBER, "gac-cluster-slurm-accounting-users").inputs
    assert grant == {
        "condition": {
            "expression": (
                'resource.type != "sqladmin.googleapis.com/Instance" || '
                f'resource.name == "projects/test-project/instances/{NAME}"'
            ),
            "title": "clusterfab Slurm accounting database only",
        },
        "member": "serviceAccount:gac-cluster-slurm-sa-sa@mock-project.iam.gserviceaccount.com",
        "project": "test-project",
        "role": "gac-cluster-slurm-accounting-users-role",
    }
    granted = [r for r in all_of(plan, IAM_MEMBER) if "cloudsql" in str(r.inputs["role"])]
    assert granted == []  # no predefined Cloud SQL role to anyone
    others = [r.name for r in all_of(plan, ROLE) if any("cloudsql" in p for p in r.inputs["permissions"])]
    assert others == ["gac-cluster-slurm-accounting-users-role"]


def test_the_controller_boots_after_the_database_knowing_where_to_find_it() -> None:
    plan = managed()
    controller = one(plan, INSTANCE, "gac-cluster-slurm-controller")
    host_vars = boot_vars(startup_script(plan, INSTANCE, "gac-cluster-slurm-controller"))
    assert host_vars["slurm_controller_accounting"] == "managed"
    assert host_vars["slurm_controller_database"] == {
        "cloud": "gcp",
        "identifier": NAME,
        "project": "test-project",
        "ca_file": "/etc/slurm/accounting-db-ca.pem",
    }
    assert one(plan, SQL).urn in controller.dependencies


def test_a_customer_key_encrypts_the_database_and_an_unprotected_environment_may_delete_it() -> None:
    keyed = managed(
        MANAGED.replace(
            "  accounting: managed\n", f'  accounting: managed\n  controller: {{kms_key: "{KEY}"}}\n'
        )
    )
    assert one(keyed, SQL).inputs["encryptionKeyName"] == KEY
    dev = one(managed(MANAGED + "  dev: {}\n", env="dev"), SQL)
    assert (
        dev.protect,
        dev.inputs["deletionProtection"],
        dev.inputs["settings"]["deletionProtectionEnabled"],
    ) == (
        False,
        False,
        False,
    )


def test_the_blueprint_sizes_the_cloud_sql_instance() -> None:
    sized = MANAGED.replace(
        "  accounting: managed\n",
        "  accounting: managed\n"
        "  database: {machine_type: db-custom-4-16384, storage_gib: 100, backup_days: 14}\n",
    )
    settings = one(managed(sized), SQL).inputs["settings"]
    assert (settings["tier"], settings["diskSize"], settings["diskAutoresizeLimit"]) == (
        "db-custom-4-16384",
        100,
        400,
    )
    # Cloud SQL counts backups; Enterprise keeps binary logs 7 days at most.
    assert settings["backupConfiguration"]["backupRetentionSettings"]["retainedBackups"] == 14
    assert settings["backupConfiguration"]["transactionLogRetentionDays"] == 7
