"""Managed accounting on AWS: slurmdbd's database on RDS for MariaDB, reachable from the controller only,
TLS only, encrypted, backed up and protected like the rest of the cluster's state; its master password
stays in the secret RDS manages, which only the controller may read."""

from __future__ import annotations

import json
from typing import Any

from tests.components.harness import all_of, boot_vars, one, plan_text
from tests.components.test_aws_slurm import INSTANCE, POLICY, RULE, instance_script, policy

RDS = "aws:rds/instance:Instance"
HEAD = """version: 1
name: acct
cloud: aws
region: us-east-1
zone: us-east-1a
"""
BODY = """network:
  cidr: 10.40.0.0/16
node_groups:
  - name: h100
    machine_type: p5.48xlarge
    count: 2
scheduler:
  kind: slurm
  accounting: managed
environments:
  prod: {}
"""
KEY = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
KEYED = BODY.replace(
    "  accounting: managed\n", f'  accounting: managed\n  controller: {{kms_key: "{KEY}"}}\n'
)


def managed(env: str | None = "prod", body: str = BODY) -> Any:
    return plan_text(HEAD + body, env)


def test_the_database_is_rds_for_mariadb_in_the_clusters_zone_private_encrypted_and_kept() -> None:
    plan = managed()
    instance = one(plan, RDS, "acct-slurm-accounting-instance")
    assert instance.inputs == {
        "allocatedStorage": 50,
        "autoMinorVersionUpgrade": True,
        "availabilityZone": "us-east-1a",
        "backupRetentionPeriod": 7,
        "caCertIdentifier": "rds-ca-rsa2048-g1",
        "copyTagsToSnapshot": True,
        "dbSubnetGroupName": "acct-slurm-accounting-subnets",
        "deletionProtection": True,
        "engine": "mariadb",
        "engineVersion": "11.8",
        "finalSnapshotIdentifier": "clusterfab-acct-prod-slurmdb-final",
        "identifier": "clusterfab-acct-prod-slurmdb",
        "instanceClass": "db.m7g.large",
        "manageMasterUserPassword": True,
        "maxAllocatedStorage": 200,
        "multiAz": False,
        "parameterGroupName": "acct-slurm-accounting-parameters",
        "publiclyAccessible": False,
        "skipFinalSnapshot": False,
        "storageEncrypted": True,
        "storageType": "gp3",
        "tags": {
            "clusterfab-blueprint": "acct",
            "clusterfab-component": "slurm",
            "clusterfab-stack": "prod",
        },
        "username": "clusterfab",
        "vpcSecurityGroupIds": ["acct-slurm-accounting-sg-id"],
    }
    assert instance.protect is True
    # No password anywhere in the stack: RDS makes and rotates it in its own secret.
    assert "password" not in instance.inputs
    assert all_of(plan, "aws:secretsmanager/secretVersion:SecretVersion") == []
    assert (
        plan.outputs["scheduler"]["accounting_database"]
        == "acct-slurm-accounting-instance.mock.rds.amazonaws.com"
    )


def test_an_unprotected_environment_can_delete_it_but_gets_a_final_snapshot() -> None:
    instance = one(managed(env=None), RDS)
    assert (instance.protect, instance.inputs["deletionProtection"]) == (False, False)
    assert (instance.inputs["skipFinalSnapshot"], instance.inputs["finalSnapshotIdentifier"]) == (
        False,
        "clusterfab-acct-plan-slurmdb-final",
    )


def test_the_subnet_group_spans_the_clusters_zone_and_another_with_no_route_out() -> None:
    plan = managed()
    group = one(plan, "aws:rds/subnetGroup:SubnetGroup").inputs
    assert group["subnetIds"] == ["acct-net-nodes-id", "acct-slurm-accounting-second-subnet-id"]
    second = one(plan, "aws:ec2/subnet:Subnet", "acct-slurm-accounting-second-subnet").inputs
    # The block before the public subnet's, in the first other zone the account lists.
    assert (second["cidrBlock"], second["availabilityZone"], second["mapPublicIpOnLaunch"]) == (
        "10.40.224.0/20",
        "us-east-1b",
        False,
    )
    associations = [
        a.inputs["subnetId"] for a in all_of(plan, "aws:ec2/routeTableAssociation:RouteTableAssociation")
    ]
    assert "acct-slurm-accounting-second-subnet-id" not in associations


def test_only_the_controller_reaches_it_and_only_over_tls() -> None:
    plan = managed()
    group = one(plan, "aws:ec2/securityGroup:SecurityGroup", "acct-slurm-accounting-sg").inputs
    assert group["egress"] == []
    rules = [
        r.inputs for r in all_of(plan, RULE) if r.inputs["securityGroupId"] == "acct-slurm-accounting-sg-id"
    ]
    assert rules == [
        {
            "description": "slurmdbd on the Slurm controller",
            "fromPort": 3306,
            "ipProtocol": "tcp",
            "referencedSecurityGroupId": "acct-slurm-sg-id",
            "securityGroupId": "acct-slurm-accounting-sg-id",
            "toPort": 3306,
        }
    ]
    parameters = one(plan, "aws:rds/parameterGroup:ParameterGroup").inputs
    assert parameters["family"] == "mariadb11.8"
    assert {p["name"]: (p["value"], p["applyMethod"]) for p in parameters["parameters"]} == {
        "require_secure_transport": ("1", "immediate"),
        "innodb_lock_wait_timeout": ("900", "immediate"),
        "max_allowed_packet": ("16777216", "immediate"),
    }


def test_the_controller_may_find_the_database_and_read_its_master_secret_and_nobody_else() -> None:
    plan = managed()
    arn = one(plan, RDS).computed["arn"]
    secret = "arn:aws:secretsmanager:mock:123456789012:secret:rds!acct-slurm-accounting-instance"
    controller = policy(plan, "acct-slurm-role-policy")["Statement"]
    assert [s for s in controller if "AccountingDatabase" in s["Sid"]] == [
        {
            "Sid": "FindAccountingDatabase",
            "Effect": "Allow",
            "Action": "rds:DescribeDBInstances",
            "Resource": arn,
        },
        {
            "Sid": "ReadAccountingDatabaseMaster",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": secret,
        },
    ]
    for resource in all_of(plan, POLICY):
        if resource.name != "acct-slurm-role-policy":
            assert secret not in resource.inputs["policy"], resource.name
            assert "rds:" not in resource.inputs["policy"], resource.name


def test_the_controller_boots_after_the_database_knowing_its_name_and_certificate_authority() -> None:
    plan = managed()
    controller = one(plan, INSTANCE, "acct-slurm-controller")
    host_vars = boot_vars(instance_script(controller))
    assert host_vars["slurm_controller_accounting"] == "managed"
    assert host_vars["slurm_controller_database"] == {
        "cloud": "aws",
        "region": "us-east-1",
        "identifier": "clusterfab-acct-prod-slurmdb",
        "ca_bundle_url": "https://truststore.pki.rds.amazonaws.com/us-east-1/us-east-1-bundle.pem",
        "ca_file": "/etc/slurm/accounting-db-ca.pem",
    }
    # It boots once the database is up: the accounting program finds it at the first boot.
    assert one(plan, RDS).urn in controller.dependencies


def test_a_customer_key_encrypts_the_storage_and_the_master_secret() -> None:
    plan = managed(body=KEYED)
    instance = one(plan, RDS).inputs
    assert (instance["kmsKeyId"], instance["masterUserSecretKmsKeyId"]) == (KEY, KEY)
    controller = policy(plan, "acct-slurm-role-policy")["Statement"]
    assert [s for s in controller if s["Sid"] == "DecryptAccountingDatabaseMaster"] == [
        {
            "Sid": "DecryptAccountingDatabaseMaster",
            "Effect": "Allow",
            "Action": "kms:Decrypt",
            "Resource": KEY,
            "Condition": {"StringLike": {"kms:ViaService": "secretsmanager.*.amazonaws.com"}},
        }
    ]


def test_embedded_accounting_has_no_database_service() -> None:
    plan = managed(body=BODY.replace("accounting: managed", "accounting: embedded"))
    assert all_of(plan, RDS) == []
    assert "accounting_database" not in plan.outputs["scheduler"]
    assert "slurm_controller_database" not in boot_vars(
        instance_script(one(plan, INSTANCE, "acct-slurm-controller"))
    )
    assert json.dumps(policy(plan, "acct-slurm-role-policy")).count("AccountingDatabase") == 0


def test_the_blueprint_sizes_the_database_and_its_backups() -> None:
    sized = BODY.replace(
        "accounting: managed\n",
        "accounting: managed\n  database: {machine_type: db.r7g.xlarge, storage_gib: 200, backup_days: 14}\n",
    )
    instance = one(managed(body=sized), RDS).inputs
    assert (
        instance["instanceClass"],
        instance["allocatedStorage"],
        instance["maxAllocatedStorage"],
        instance["backupRetentionPeriod"],
    ) == ("db.r7g.xlarge", 200, 800, 14)
    # Only what the blueprint says changes; the rest is the catalog's.
    partly = BODY.replace("accounting: managed\n", "accounting: managed\n  database: {storage_gib: 100}\n")
    instance = one(managed(body=partly), RDS).inputs
    assert (instance["instanceClass"], instance["allocatedStorage"], instance["backupRetentionPeriod"]) == (
        "db.m7g.large",
        100,
        7,
    )
