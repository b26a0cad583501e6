"""Customer-managed keys (`kms_key`, `bucket_kms_key`): each reaches exactly the inputs that encrypt its
resource, and whoever reads the AWS cluster bucket may decrypt with its key, through S3 only."""

from __future__ import annotations

import json

import pytest

from clusterfab.plan.project import Plan
from tests.components.harness import all_of, aws_plan, gcp_plan, one

AWS_KEY = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
AWS_BUCKET_KEY = "arn:aws:kms:us-east-1:111122223333:key/mrk-0123456789abcdef0123456789abcdef"
AWS_KEYED = f"""bucket_kms_key: {AWS_BUCKET_KEY}
node_groups:
  - {{name: g, machine_type: p5.48xlarge, count: 2, kms_key: '{AWS_KEY}'}}
storage:
  - {{name: data, kind: lustre, capacity_gib: 2400, throughput_mbps_per_tib: 125, kms_key: '{AWS_KEY}'}}
scheduler:
  kind: slurm
  controller: {{kms_key: '{AWS_KEY}'}}
monitoring: {{kind: prometheus}}
"""
GCP_KEY = "projects/test-project/locations/us-central1/keyRings/cluster/cryptoKeys/data"
GCP_DISK_KEY = "projects/keys-project/locations/global/keyRings/cluster/cryptoKeys/disks"
GCP_KEYED = f"""bucket_kms_key: {GCP_KEY}
node_groups:
  - {{name: g, machine_type: a3-megagpu-8g, count: 2, kms_key: '{GCP_DISK_KEY}'}}
storage:
  - {{name: home, kind: filestore, tier: ZONAL, capacity_gib: 1024, kms_key: '{GCP_KEY}'}}
  - {{name: fast, kind: lustre, capacity_gib: 18000, throughput_mbps_per_tib: 500, kms_key: '{GCP_KEY}'}}
"""


def aws_keyed() -> Plan:
    return aws_plan(AWS_KEYED, name="cmk")


def gcp_keyed() -> Plan:
    return gcp_plan(GCP_KEYED, name="cmek")


# --- AWS --------------------------------------------------------------------------------------------


def test_aws_cluster_bucket_encrypts_with_its_key_by_default_and_on_every_upload() -> None:
    plan = aws_keyed()
    sse = one(plan, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert sse.inputs["rules"] == [
        {
            "applyServerSideEncryptionByDefault": {
                "kmsMasterKeyId": AWS_BUCKET_KEY,
                "sseAlgorithm": "aws:kms",
            },
            "bucketKeyEnabled": True,
        }
    ]
    # An upload that asks for aws:kms without a key id gets aws/s3, not the bucket's default key.
    uploads = {r.name: r.inputs for r in all_of(plan, "aws:s3/bucketObjectv2:BucketObjectv2")}
    assert sorted(uploads) == [
        "cmk-cluster-artifacts-bundle",
        # The controller's and login nodes' current boot scripts, which they follow.
        "cmk-cluster-slurm-boot",
        # With Slurm the monitoring stack's files travel in the controller's archive (no monitoring node).
        "cmk-cluster-slurm-files",
        "cmk-cluster-slurm-login-boot",
    ]
    assert all(
        (u["serverSideEncryption"], u["kmsKeyId"]) == ("aws:kms", AWS_BUCKET_KEY) for u in uploads.values()
    )


DECRYPT = {
    "Sid": "DecryptClusterBucket",
    "Effect": "Allow",
    "Action": "kms:Decrypt",
    "Resource": AWS_BUCKET_KEY,
    "Condition": {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}},
}


@pytest.mark.parametrize(
    "policy",
    ["cmk-cluster-g-node-policy", "cmk-cluster-slurm-role-policy", "cmk-cluster-slurm-login-role-policy"],
)
def test_aws_bucket_readers_may_decrypt_with_its_key_through_s3_only(policy: str) -> None:
    statements = json.loads(one(aws_keyed(), "aws:iam/rolePolicy:RolePolicy", policy).inputs["policy"])[
        "Statement"
    ]
    assert [s for s in statements if "kms:Decrypt" in json.dumps(s)] == [DECRYPT]


def test_aws_without_a_bucket_key_no_role_may_use_kms() -> None:
    plan = aws_plan(AWS_KEYED.replace(f"bucket_kms_key: {AWS_BUCKET_KEY}\n", ""), name="cmk")
    policies = [r.inputs["policy"] for r in all_of(plan, "aws:iam/rolePolicy:RolePolicy")]
    assert policies
    assert not any("kms:" in p for p in policies)
    sse = one(plan, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "aws:kms"}
    assert all("kmsKeyId" not in r.inputs for r in all_of(plan, "aws:s3/bucketObjectv2:BucketObjectv2"))


def test_aws_node_root_volumes_file_system_and_controller_disks_use_their_keys() -> None:
    plan = aws_keyed()
    lt = one(plan, "aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert [m["ebs"].get("kmsKeyId") for m in lt["blockDeviceMappings"]] == [AWS_KEY]
    assert one(plan, "aws:fsx/lustreFileSystem:LustreFileSystem").inputs["kmsKeyId"] == AWS_KEY
    assert one(plan, "aws:ebs/volume:Volume", "cmk-cluster-slurm-state").inputs["kmsKeyId"] == AWS_KEY
    instances = {r.name: r.inputs["rootBlockDevice"] for r in all_of(plan, "aws:ec2/instance:Instance")}
    # the controller's disks hold the cluster's state; a login node's only its boot files
    assert instances["cmk-cluster-slurm-controller"]["kmsKeyId"] == AWS_KEY
    assert "kmsKeyId" not in instances["cmk-cluster-slurm-login-0"]


def test_aws_default_plan_names_no_key() -> None:
    plan = aws_plan("node_groups:\n  - {name: g, machine_type: p5.48xlarge, count: 2}\n", name="nokey")
    assert "kmsKeyId" not in json.dumps([r.inputs for r in plan.resources])


# --- GCP --------------------------------------------------------------------------------------------


def test_gcp_bucket_boot_disks_and_file_systems_use_their_keys() -> None:
    plan = gcp_keyed()
    assert one(plan, "gcp:storage/bucket:Bucket").inputs["encryption"] == {"defaultKmsKeyName": GCP_KEY}
    disks = one(plan, "gcp:compute/instanceTemplate:InstanceTemplate").inputs["disks"]
    assert [d["diskEncryptionKey"] for d in disks] == [{"kmsKeySelfLink": GCP_DISK_KEY}]
    assert one(plan, "gcp:filestore/instance:Instance").inputs["kmsKeyName"] == GCP_KEY
    assert one(plan, "gcp:lustre/instance:Instance").inputs["kmsKey"] == GCP_KEY


def test_gcp_default_plan_names_no_key() -> None:
    plan = gcp_plan("node_groups:\n  - {name: g, machine_type: a3-megagpu-8g, count: 2}\n", name="nokey")
    text = json.dumps([r.inputs for r in plan.resources])
    assert "kmsKey" not in text
    assert "encryption" not in one(plan, "gcp:storage/bucket:Bucket").inputs
