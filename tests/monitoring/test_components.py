"""The monitoring components built from their Args alone (as a team's own Pulumi program would), and the
monitoring node as the cluster's program builds it: exact children and the inputs that matter."""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clusterfab.plan.engine import PlannedResource, run_program
from tests.components.harness import plan_file, plan_text
from tests.conftest import REPO

READ_BOOT_DIGEST = {"Sid": "ReadBootDigest", "Effect": "Allow", "Action": "ec2:DescribeTags", "Resource": "*"}
"""What a following host's role needs to read its instance's digest tag: DescribeTags takes no resource
(the EC2 service authorization reference lists no resource type for it), so it is granted on `*`."""

EXAMPLE = REPO / "blueprints" / "examples" / "aws-p5-monitored.yaml"
GCP_CLUSTER = REPO / "tests" / "fixtures" / "monitoring" / "cluster-gcp.yaml"


def build(program: Callable[[], None]) -> dict[str, PlannedResource]:
    return {r.name: r for r in run_program(program, project="team-infra", stack="dev").resources}


def kinds(resources: dict[str, PlannedResource]) -> dict[str, str]:
    return {name: r.type.rsplit(":", 1)[1] for name, r in resources.items()}


def test_aws_monitoring_node_from_its_args(tmp_path: Path) -> None:
    from components.aws.monitoring import AwsMonitoringNode, AwsMonitoringNodeArgs

    files = tmp_path / "files.tar.gz"
    files.write_bytes(b"rendered")

    def program() -> None:
        AwsMonitoringNode(
            "mon",
            AwsMonitoringNodeArgs(
                vpc_id="vpc-1",
                subnet_id="subnet-1",
                node_security_group_id="sg-nodes",
                bucket_name="team-bucket",
                bucket_arn="arn:aws:s3:::team-bucket",
                image_id="ami-0123456789abcdef0",
                region="us-east-1",
                files=("monitoring/abc.tar.gz", files),
                smtp_secret="team/smtp",
            ),
        )

    made = build(program)
    assert kinds(made) == {
        "mon": "AwsMonitoringNode",
        "mon-role": "Role",
        "mon-bucket": "RolePolicy",
        "mon-profile": "InstanceProfile",
        "mon-sg": "SecurityGroup",
        "mon-files": "BucketObjectv2",
        "mon-instance": "Instance",
        "mon-access": "AwsMonitoringAccess",
        "mon-access-policy": "RolePolicy",
        "mon-access-scrape-9100": "SecurityGroupIngressRule",
        "mon-access-scrape-9400": "SecurityGroupIngressRule",
    }
    instance = made["mon-instance"].inputs
    assert instance["associatePublicIpAddress"] is False
    assert instance["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
    }
    assert instance["rootBlockDevice"]["encrypted"] is True
    assert (instance["instanceType"], instance["rootBlockDevice"]["volumeSize"]) == ("m7i.large", 50)
    assert made["mon-sg"].inputs.get("ingress") in (None, [])
    host = json.loads(made["mon-bucket"].inputs["policy"])
    assert [(st["Sid"], st["Action"]) for st in host["Statement"]] == [
        ("ReadClusterBucket", ["s3:GetObject", "s3:GetObjectVersion"]),
        ("ListClusterBucket", "s3:ListBucket"),
        (
            "SessionManager",
            # AWS's minimal Session Manager permissions for an instance role ("Create a custom IAM role
            # with minimal Session Manager permissions"), not AmazonSSMManagedInstanceCore.
            [
                "ssm:UpdateInstanceInformation",
                "ssmmessages:CreateControlChannel",
                "ssmmessages:CreateDataChannel",
                "ssmmessages:OpenControlChannel",
                "ssmmessages:OpenDataChannel",
            ],
        ),
    ]
    policy = json.loads(made["mon-access-policy"].inputs["policy"])
    assert policy["Statement"] == [
        {"Sid": "DiscoverNodes", "Effect": "Allow", "Action": "ec2:DescribeInstances", "Resource": "*"},
        {
            "Sid": "ReadSmtpPassword",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": "arn:aws:secretsmanager:us-east-1:123456789012:secret:team/smtp-??????",
        },
    ]
    # IAM's wildcards (? one character, * any): the secret itself, not every secret named after it.
    granted = policy["Statement"][1]["Resource"]
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:team/smtp"
    assert fnmatch.fnmatchcase(f"{arn}-AbC123", granted)
    assert not fnmatch.fnmatchcase(f"{arn.replace('123456789012', '111122223333')}-AbC123", granted)
    assert not fnmatch.fnmatchcase(f"{arn}-relay-AbC123", granted)
    assert not fnmatch.fnmatchcase(f"{arn}-prod-AbC123", granted)
    scrape = made["mon-access-scrape-9400"].inputs
    assert (scrape["securityGroupId"], scrape["fromPort"], scrape["toPort"], scrape["ipProtocol"]) == (
        "sg-nodes",
        9400,
        9400,
        "tcp",
    )
    assert "cidrIpv4" not in scrape


def test_aws_monitoring_node_refuses_a_disk_too_small_before_creating_anything() -> None:
    from components.aws.monitoring import AwsMonitoringNode, AwsMonitoringNodeArgs

    def program() -> None:
        AwsMonitoringNode(
            "mon",
            AwsMonitoringNodeArgs(
                vpc_id="v", subnet_id="s", node_security_group_id="sg", bucket_name="b",
                bucket_arn="arn:aws:s3:::b", image_id="ami-1", region="us-east-1", volume_gib=8,
            ),
        )  # fmt: skip

    with pytest.raises(Exception, match="volume_gib"):
        build(program)


@pytest.mark.parametrize(
    "secret",
    [
        "*",  # every secret of the region
        "team/smtp*",  # every secret whose name starts so
        "team/smtp-??????",
        "arn:aws:secretsmanager:us-east-1:*:secret:team/smtp-AbC123",  # any account's
        "arn:aws:secretsmanager:us-east-1:111122223333:secret:team/smtp",  # a partial ARN: a prefix
    ],
)
def test_aws_monitoring_access_refuses_a_secret_that_is_not_one_secret(secret: str) -> None:
    from components.aws.monitoring import AwsMonitoringAccess, AwsMonitoringAccessArgs

    def program() -> None:
        AwsMonitoringAccess(
            "access",
            AwsMonitoringAccessArgs(
                role_name="r", host_security_group_id="sg-h", node_security_group_id="sg-n",
                region="us-east-1", smtp_secret=secret,
            ),
        )  # fmt: skip

    with pytest.raises(Exception, match=r"smtp_secret: .* is neither a Secrets Manager secret name nor a"):
        build(program)


def test_aws_monitoring_access_grants_a_full_arn_as_it_is() -> None:
    from components.aws.monitoring import AwsMonitoringAccess, AwsMonitoringAccessArgs

    arn = "arn:aws:secretsmanager:us-east-1:111122223333:secret:team/smtp-AbC123"

    def program() -> None:
        AwsMonitoringAccess(
            "access",
            AwsMonitoringAccessArgs(
                role_name="r", host_security_group_id="sg-h", node_security_group_id="sg-n",
                region="us-east-1", smtp_secret=arn,
            ),
        )  # fmt: skip

    policy = json.loads(build(program)["access-policy"].inputs["policy"])
    assert policy["Statement"][1] == {
        "Sid": "ReadSmtpPassword",
        "Effect": "Allow",
        "Action": "secretsmanager:GetSecretValue",
        "Resource": arn,
    }


def test_gcp_monitoring_node_from_its_args() -> None:
    from components.gcp.monitoring import GcpMonitoringNode, GcpMonitoringNodeArgs

    def program() -> None:
        GcpMonitoringNode(
            "mon",
            GcpMonitoringNodeArgs(
                project="p-123456",
                zone="us-central1-a",
                subnetwork_id="projects/p/regions/us-central1/subnetworks/s",
                bucket_name="team-bucket",
                image="projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
                service_account_id="mon-sa-account",
                role_id="clusterfab_monitoring_dev",
            ),
        )

    made = build(program)
    # No firewall rule: Grafana listens on the host's loopback, reached through SSH over IAP.
    assert sorted(kinds(made).values()) == sorted(
        ["GcpMonitoringNode", "Account", "IAMMember", "IAMMember", "BucketIAMMember", "Instance",
         "GcpMonitoringAccess", "IAMCustomRole", "IAMMember"]
    )  # fmt: skip
    instance = made["mon-instance"].inputs
    assert [nic.get("accessConfigs") for nic in instance["networkInterfaces"]] == [None]
    assert instance["shieldedInstanceConfig"]["enableSecureBoot"] is True
    assert instance["machineType"] == "e2-standard-2"
    role = made["mon-access-discovery-role"].inputs
    assert (role["roleId"], role["permissions"]) == ("clusterfab_monitoring_dev", ["compute.instances.list"])


def test_the_example_gets_a_monitoring_node_with_the_catalogs_machine_and_its_outputs() -> None:
    plan = plan_file(EXAMPLE, "prod")
    resources = {r.name: r for r in plan.resources}
    instance = resources["llm-monitored-monitoring-instance"].inputs
    assert instance["instanceType"] == "m7i.large"
    assert instance["rootBlockDevice"]["volumeSize"] == 50
    assert instance["tags"]["clusterfab-component"] == "monitoring"
    scrape = resources["llm-monitored-monitoring-access-scrape-9100"].inputs
    assert scrape["securityGroupId"] == "llm-monitored-net-nodes-sg-id"
    files = resources["llm-monitored-monitoring-files"].inputs
    assert files["key"].startswith("monitoring/")
    assert files["key"].endswith(".tar.gz")
    assert plan.outputs["monitoring"] == {
        "host": "llm-monitored-monitoring-instance-id",
        "grafana_port": 3000,
        "retention_days": 30,
    }
    # The node follows the bucket's copy of its boot script; `up` leaves its user data (a stop and start).
    boot = resources["llm-monitored-monitoring-boot"]
    launched = resources["llm-monitored-monitoring-instance"]
    assert boot.inputs["key"] == "boot/monitoring.sh"
    assert base64.b64decode(instance["userDataBase64"]).decode() == boot.inputs["content"]
    assert "systemctl enable --now clusterfab-follow.timer" in boot.inputs["content"]
    assert launched.ignore_changes == ("userDataBase64",)
    assert (
        instance["tags"]["clusterfab-boot-sha256"]
        == hashlib.sha256(boot.inputs["content"].encode()).hexdigest()
    )
    host_policy = json.loads(resources["llm-monitored-monitoring-bucket"].inputs["policy"])
    assert READ_BOOT_DIGEST in host_policy["Statement"]
    assert boot.urn in launched.dependencies


def test_a_gcp_cluster_gets_its_monitoring_node_in_the_system_subnet() -> None:
    plan = plan_file(GCP_CLUSTER, None)
    resources = {r.name: r for r in plan.resources}
    instance = resources["mega-monitoring-instance"].inputs
    assert instance["machineType"] == "e2-standard-2"
    assert instance["networkInterfaces"] == [{"subnetwork": "mega-net-sys-subnet-id"}]
    assert instance["name"] == "mega-plan-monitoring"
    assert resources["mega-monitoring-access-smtp-secret"].inputs["secretId"] == "llm-alertmanager-smtp"


FIREWALL = "gcp:compute/firewall:Firewall"


def _firewalls(plan_resources: list[PlannedResource]) -> dict[str, tuple[list[str], list[Any]]]:
    return {
        r.name: (r.inputs["sourceRanges"], r.inputs["allows"]) for r in plan_resources if r.type == FIREWALL
    }


def test_no_firewall_rule_opens_grafanas_port_on_gcp() -> None:
    """The planned rules of a monitored GCP cluster are the network's alone: traffic within the cluster's
    range and SSH from IAP. Grafana's port had a rule of its own for IAP's TCP forwarding, which connects
    to the VM's address, where Grafana then had to listen, reachable from every job on the network."""
    firewalls = _firewalls(plan_file(GCP_CLUSTER, None).resources)
    assert firewalls == {
        "mega-net-sys-internal": (["10.0.0.0/16"], [{"protocol": "all"}]),
        "mega-net-sys-iap-ssh": (["35.235.240.0/20"], [{"protocol": "tcp", "ports": ["22"]}]),
        # A3 Mega's eight GPUDirect-TCPXO networks, each open within its own subnet
        **{
            f"mega-gpudirect-tcpxo-gpu-{i}-internal": ([f"10.0.{32 + 16 * i}.0/20"], [{"protocol": "all"}])
            for i in range(8)
        },
    }


def test_no_firewall_rule_opens_grafanas_port_on_a_gcp_slurm_controller() -> None:
    """With Slurm the controller hosts monitoring (its access component made the rule before)."""
    resources = plan_text(GCP_CLUSTER.read_text() + "scheduler: {kind: slurm}\n").resources
    assert "mega-monitoring-access-discovery-role" in {r.name for r in resources}
    opened = {name: allows for name, (_, allows) in _firewalls(resources).items()}
    assert [
        name for name, allows in opened.items() if any("3000" in a.get("ports", []) for a in allows)
    ] == []
