"""Each component built straight from its Args, as a platform team's own Pulumi program would, with
no blueprint, catalog or clusterfab program involved: exact children and the inputs that matter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from clusterfab.plan.engine import PlanError, PlannedResource, run_program
from tests.conftest import REPO


def build(program: Callable[[], None]) -> dict[str, PlannedResource]:
    run = run_program(program, project="team-infra", stack="dev")
    return {r.name: r for r in run.resources}


def types(resources: dict[str, PlannedResource]) -> dict[str, str]:
    return {name: r.type.rsplit(":", 1)[1] for name, r in resources.items()}


def test_aws_gpu_node_group_with_its_defaults() -> None:
    from components.aws.node_group import AwsGpuNodeGroup, AwsGpuNodeGroupArgs

    def program() -> None:
        AwsGpuNodeGroup(
            "infer",
            AwsGpuNodeGroupArgs(
                node_group="infer",
                instance_type="g6e.xlarge",
                image_id="ami-0123456789abcdef0",
                subnet_id="subnet-1",
                security_group_id="sg-1",
                bucket_arn="arn:aws:s3:::team-bucket",
            ),
        )

    made = build(program)
    assert types(made) == {
        "infer": "AwsGpuNodeGroup",
        "infer-role": "Role",
        "infer-node-policy": "RolePolicy",
        "infer-profile": "InstanceProfile",
        "infer-lt": "LaunchTemplate",
        "infer-asg": "Group",
    }
    lt = made["infer-lt"].inputs
    assert lt["instanceType"] == "g6e.xlarge"
    assert [
        (n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]) for n in lt["networkInterfaces"]
    ] == [(0, 0, "interface")]
    assert lt["metadataOptions"]["httpTokens"] == "required"
    assert lt["blockDeviceMappings"][0]["ebs"] == {
        "deleteOnTermination": "true",
        "encrypted": "true",
        "volumeSize": 200,
        "volumeType": "gp3",
    }
    assert "instanceMarketOptions" not in lt
    assert "placement" not in lt
    asg = made["infer-asg"].inputs
    assert (asg["minSize"], asg["maxSize"], asg["desiredCapacity"]) == (1, 1, 1)
    assert {t["key"]: t["value"] for t in asg["tags"]}["clusterfab-node-group"] == "infer"


def test_aws_gpu_node_group_with_efa_spot_and_placement() -> None:
    from components.aws.node_group import AwsGpuNodeGroup, AwsGpuNodeGroupArgs, NetworkInterface

    layout = (
        NetworkInterface(0, 0, "interface"),
        NetworkInterface(0, 1, "efa-only"),
        *(NetworkInterface(card, 0, "efa-only") for card in range(1, 8)),
    )

    def program() -> None:
        AwsGpuNodeGroup(
            "train",
            AwsGpuNodeGroupArgs(
                node_group="train",
                instance_type="p6-b200.48xlarge",
                image_id="ami-0123456789abcdef0",
                subnet_id="subnet-1",
                security_group_id="sg-1",
                bucket_arn="arn:aws:s3:::team-bucket",
                network_interfaces=layout,
                min_size=0,
                max_size=4,
                autoscaled=True,
                market="spot",
                placement_group=True,
            ),
        )

    made = build(program)
    assert "train-placement" in made
    lt = made["train-lt"].inputs
    assert len(lt["networkInterfaces"]) == 9
    assert lt["instanceMarketOptions"]["marketType"] == "spot"
    assert made["train-asg"].inputs["capacityRebalance"] is True


def test_aws_gpu_node_group_reports_every_bad_input_before_creating_anything() -> None:
    from components.aws.node_group import AwsGpuNodeGroup, AwsGpuNodeGroupArgs, NetworkInterface

    def program() -> None:
        AwsGpuNodeGroup(
            "bad",
            AwsGpuNodeGroupArgs(
                node_group="bad",
                instance_type="p5.48xlarge",
                image_id="ami-0123456789abcdef0",
                subnet_id="subnet-1",
                security_group_id="sg-1",
                bucket_arn="arn:aws:s3:::b",
                network_interfaces=(NetworkInterface(1, 0, "efa-only"),),
                min_size=3,
                max_size=2,
                market="capacity-block",
            ),
        )

    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        run_program(program, project="team-infra", stack="dev")
    message = str(info.value)
    for path in ("min_size", "capacity_reservation_id", "network_interfaces"):
        assert path in message


def test_aws_network_and_fsx() -> None:
    from components.aws.lustre import AwsFsxLustre, AwsFsxLustreArgs
    from components.aws.network import AwsNetwork, AwsNetworkArgs

    def program() -> None:
        net = AwsNetwork(
            "lab",
            AwsNetworkArgs(
                cidr="10.9.0.0/16",
                node_subnet_cidr="10.9.0.0/20",
                public_subnet_cidr="10.9.240.0/20",
                region="eu-west-1",
                availability_zone_id="euw1-az1",
            ),
        )
        AwsFsxLustre(
            "lab-fs",
            AwsFsxLustreArgs(
                vpc_id=net.vpc_id,
                subnet_id=net.node_subnet_id,
                client_security_group_id=net.node_security_group_id,
                capacity_gib=2400,
                mount_point="/fsx",
            ),
        )

    made = build(program)
    assert made["lab-nodes"].inputs["availabilityZoneId"] == "euw1-az1"
    assert made["lab-s3"].inputs["serviceName"] == "com.amazonaws.eu-west-1.s3"
    assert not any(n.startswith("lab-ssh-") for n in made)
    fs = made["lab-fs-fs"].inputs
    assert (fs["deploymentType"], fs["storageCapacity"], fs["perUnitStorageThroughput"]) == (
        "PERSISTENT_2",
        2400,
        250,
    )
    assert fs["fileSystemTypeVersion"] == "2.15"
    assert made["lab-fs-fs"].protect is False


def test_aws_network_needs_exactly_one_zone_form() -> None:
    from components.aws.network import AwsNetwork, AwsNetworkArgs

    def program() -> None:
        AwsNetwork(
            "lab",
            AwsNetworkArgs(
                cidr="10.9.0.0/16",
                node_subnet_cidr="10.9.0.0/20",
                public_subnet_cidr="10.9.240.0/20",
                region="x",
            ),
        )

    with pytest.raises((pulumi.InputPropertiesError, PlanError), match="availability_zone"):
        run_program(program, project="team-infra", stack="dev")


def _gcp_group(**overrides: Any) -> None:
    from components.gcp.node_group import GcpGpuNodeGroup, GcpGpuNodeGroupArgs

    args: dict[str, Any] = {
        "node_group": "g",
        "project": "team-project",
        "region": "us-central1",
        "zone": "us-central1-b",
        "machine_type": "g2-standard-8",
        "image": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
        "service_account_id": "team-g-nodes",
        "general_subnetworks": ["projects/p/regions/us-central1/subnetworks/s"],
        "bucket_name": "team-bucket",
        **overrides,
    }
    GcpGpuNodeGroup("g", GcpGpuNodeGroupArgs(**args))


def test_gcp_gpu_node_group_with_its_defaults() -> None:
    made = build(_gcp_group)
    assert types(made) == {
        "g": "GcpGpuNodeGroup",
        "g-sa": "Account",
        "g-log-writer": "IAMMember",
        "g-metric-writer": "IAMMember",
        "g-bucket-reader": "BucketIAMMember",
        "g-template": "InstanceTemplate",
        "g-mig": "InstanceGroupManager",
    }
    template = made["g-template"].inputs
    assert template["scheduling"]["provisioningModel"] == "STANDARD"
    assert template["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert [nic["nicType"] for nic in template["networkInterfaces"]] == ["GVNIC"]
    assert made["g-mig"].inputs["targetSize"] == 1
    assert made["g-mig"].inputs["baseInstanceName"] == "g"


def test_gcp_gpu_node_group_flex_start_needs_a_duration() -> None:
    with pytest.raises((pulumi.InputPropertiesError, PlanError), match="max_run_duration_seconds"):
        run_program(lambda: _gcp_group(provisioning_model="FLEX_START"), project="team-infra", stack="dev")


def test_gcp_storage_and_tpu_from_args() -> None:
    from components.gcp.storage import GcpFilestore, GcpFilestoreArgs, GcpManagedLustre, GcpManagedLustreArgs
    from components.gcp.tpu import GcpTpuSlices, GcpTpuSlicesArgs

    def program() -> None:
        GcpManagedLustre(
            "scratch-2",
            GcpManagedLustreArgs(
                project="p",
                zone="us-central1-b",
                instance_id="team-scratch",
                capacity_gib=18000,
                per_unit_storage_throughput=500,
                network_id="projects/p/global/networks/n",
                mount_point="/scratch",
            ),
        )
        GcpFilestore(
            "home",
            GcpFilestoreArgs(
                project="p",
                location="us-central1-b",
                capacity_gib=1024,
                network_name="n",
                mount_point="/home",
            ),
        )
        GcpTpuSlices(
            "pod",
            GcpTpuSlicesArgs(
                node_group="pod",
                project="p",
                zone="us-east5-a",
                accelerator_type="v6e-8",
                runtime_version="v2-alpha-tpuv6e",
                service_account_id="team-pod",
                network_id="projects/p/global/networks/n",
                subnetwork_id="projects/p/regions/us-east5/subnetworks/s",
                bucket_name="b",
                capacity="spot",
            ),
        )

    made = build(program)
    lustre = made["scratch-2-fs"].inputs
    assert (lustre["filesystem"], lustre["capacityGib"], lustre["perUnitStorageThroughput"]) == (
        "scratch2",
        "18000",
        "500",
    )
    share = made["home-share"].inputs
    assert (share["tier"], share["fileShares"]["name"], share["networks"][0]["connectMode"]) == (
        "ZONAL",
        "share",
        "DIRECT_PEERING",
    )
    tpu = made["pod-0"].inputs
    assert tpu["schedulingConfig"] == {"spot": True}
    assert tpu["labels"]["clusterfab-slice-count"] == "1"


def test_the_documented_example_runs_and_builds_what_it_says() -> None:
    page = (REPO / "docs" / "components.md").read_text()
    start = page.index("```python\n")
    code = page[start + len("```python\n") : page.index("```", start + 3)]
    made = build(lambda: exec(compile(code, "docs/components.md", "exec"), {}))
    assert made["trainers-placement"].type == "aws:ec2/placementGroup:PlacementGroup"
    lt = made["trainers-lt"].inputs
    assert len(lt["networkInterfaces"]) == 9
    assert made["trainers"].type == "clusterfab:compute:AwsGpuNodeGroup"
    assert {r.provider for r in made.values() if r.custom and r.type.startswith("aws:")} == {
        "urn:pulumi:dev::team-infra::pulumi:providers:aws::use1::use1-id"
    }


def test_aws_network_keeps_flow_logs_only_as_long_as_cloudwatch_can() -> None:
    from components.aws.network import AwsNetwork, AwsNetworkArgs

    def program() -> None:
        AwsNetwork(
            "lab",
            AwsNetworkArgs(
                cidr="10.9.0.0/16",
                node_subnet_cidr="10.9.0.0/20",
                public_subnet_cidr="10.9.240.0/20",
                region="eu-west-1",
                availability_zone_id="euw1-az1",
                flow_logs_retention_days=31,
            ),
        )

    with pytest.raises(
        (pulumi.InputPropertiesError, PlanError),
        match="flow_logs_retention_days: CloudWatch Logs keeps logs for one of 1, 3, 5, 7, 14, 30, 60",
    ):
        run_program(program, project="team-infra", stack="dev")


def test_aws_network_without_flow_logs() -> None:
    from components.aws.network import AwsNetwork, AwsNetworkArgs

    def program() -> None:
        AwsNetwork(
            "lab",
            AwsNetworkArgs(
                cidr="10.9.0.0/16",
                node_subnet_cidr="10.9.0.0/20",
                public_subnet_cidr="10.9.240.0/20",
                region="eu-west-1",
                availability_zone_id="euw1-az1",
                flow_logs=False,
            ),
        )

    made = build(program)
    assert not any(
        r.type in {"aws:ec2/flowLog:FlowLog", "aws:cloudwatch/logGroup:LogGroup"} for r in made.values()
    )


def test_aws_fsx_lustre_takes_a_customer_key_only_when_persistent() -> None:
    from components.aws.lustre import AwsFsxLustre, AwsFsxLustreArgs

    def program() -> None:
        AwsFsxLustre(
            "scratch",
            AwsFsxLustreArgs(
                vpc_id="vpc-1",
                subnet_id="subnet-1",
                client_security_group_id="sg-1",
                capacity_gib=1200,
                mount_point="/scratch",
                deployment_type="SCRATCH_2",
                kms_key_arn="arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
            ),
        )

    with pytest.raises(
        (pulumi.InputPropertiesError, PlanError),
        match="kms_key_arn: FSx encrypts scratch file systems with its own key only",
    ):
        run_program(program, project="team-infra", stack="dev")


def test_gcp_filestore_squashes_root_only_for_the_ranges_it_exports_to() -> None:
    from components.gcp.storage import GcpFilestore, GcpFilestoreArgs

    def program() -> None:
        GcpFilestore(
            "home",
            GcpFilestoreArgs(
                project="team-project",
                location="us-central1-b",
                capacity_gib=1024,
                network_name="team-net",
                mount_point="/home/shared",
                root_squash=True,
            ),
        )

    with pytest.raises(
        (pulumi.InputPropertiesError, PlanError), match="root_squash: needs client_ranges to squash root for"
    ):
        run_program(program, project="team-infra", stack="dev")


def test_gcp_filestore_keeps_filestores_default_export_without_client_ranges() -> None:
    from components.gcp.storage import GcpFilestore, GcpFilestoreArgs

    def program() -> None:
        GcpFilestore(
            "home",
            GcpFilestoreArgs(
                project="team-project",
                location="us-central1-b",
                capacity_gib=1024,
                network_name="team-net",
                mount_point="/home/shared",
            ),
        )

    made = build(program)
    assert made["home-share"].inputs["fileShares"] == {"capacityGb": 1024, "name": "share"}


def test_a_slurm_controller_refuses_a_snapshot_schedule_either_cloud_would_refuse() -> None:
    from components.aws.slurm import AwsSlurmController, AwsSlurmControllerArgs

    def program() -> None:
        AwsSlurmController(
            "slurm",
            AwsSlurmControllerArgs(
                cluster="c",
                munge_secret_name="c-munge",
                vpc_id="vpc-1",
                subnet_id="subnet-1",
                availability_zone="us-east-1a",
                node_security_group_id="sg-1",
                egress_ip="198.51.100.7",
                bucket_name="b",
                bucket_arn="arn:aws:s3:::b",
                image_id="ami-1",
                private_ip="10.0.0.10",
                region="us-east-1",
                snapshot_time_utc="03:30",
                snapshots_kept=0,
            ),
        )

    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        run_program(program, project="team-infra", stack="dev")
    assert "snapshot_time_utc: '03:30' is not an hour as HH:00 (UTC)" in str(info.value)
    assert "snapshots_kept: keep between 1 and 1000 daily snapshots" in str(info.value)


def test_a_slurm_controller_refuses_elastic_nodes_it_cannot_name_exactly() -> None:
    """Each elastic right names the groups' templates, profiles, roles and types: a missing list would leave
    the right to a wildcard, or to nothing."""
    from components.aws.slurm import AwsSlurmController, AwsSlurmControllerArgs

    def program() -> None:
        AwsSlurmController(
            "slurm",
            AwsSlurmControllerArgs(
                cluster="c", munge_secret_name="c-munge", vpc_id="vpc-1", subnet_id="subnet-1",
                availability_zone="us-east-1a", node_security_group_id="sg-1", egress_ip="198.51.100.7",
                bucket_name="b",
                bucket_arn="arn:aws:s3:::b", image_id="ami-1", private_ip="10.0.0.10", region="us-east-1",
                elastic_node_role_arns=["arn:aws:iam::111122223333:role/nodes"],
            ),
        )  # fmt: skip

    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        run_program(program, project="team-infra", stack="dev")
    need = "elastic nodes need their roles, profiles, templates and types"
    for key in ("elastic_instance_profile_arns", "elastic_launch_template_arns", "elastic_instance_types"):
        assert f"{key}: {need}" in str(info.value)
    assert "node_instance_profile_arns: the elastic groups' profiles must be among them" in str(info.value)
