"""AWS GPU node groups: exact launch template NICs per machine type, placement, capacity, security."""

from __future__ import annotations

import json

from tests.components.harness import all_of, aws_plan, boot_vars, children, one, plan_text, user_data

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"


def group(machine: str, extra: str = "", count: str = "count: 4") -> str:
    return f"node_groups:\n  - name: g\n    machine_type: {machine}\n    {count}\n{extra}"


def nics(machine: str) -> list[tuple[int, int, str]]:
    plan = aws_plan(group(machine), name="nic")
    interfaces = one(plan, LT).inputs["networkInterfaces"]
    assert all(i["securityGroups"] == ["nic-cluster-net-nodes-sg-id"] for i in interfaces)
    # EC2 refuses associatePublicIpAddress on multi-interface launches (audit item 10): never set it.
    assert all("associatePublicIpAddress" not in i for i in interfaces)
    assert all(i["deleteOnTermination"] == "true" for i in interfaces)
    assert all("subnetId" not in i for i in interfaces)  # the ASG places them in its subnet
    return [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in interfaces]


def test_p5_48xlarge_gets_33_interfaces_for_32_efa_devices() -> None:
    expected = [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, 32)]
    assert nics("p5.48xlarge") == expected


def test_p5en_48xlarge_uses_its_16_cards() -> None:
    expected = [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, 16)]
    assert nics("p5en.48xlarge") == expected


def test_p6_b200_48xlarge_uses_its_8_cards() -> None:
    expected = [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, 8)]
    assert nics("p6-b200.48xlarge") == expected


def test_p4d_uses_the_efa_form_on_its_4_cards() -> None:
    assert nics("p4d.24xlarge") == [(card, 0, "efa") for card in range(4)]


def test_fabric_none_leaves_only_the_primary_interface_and_no_placement_group() -> None:
    plan = aws_plan(group("p5.48xlarge", "    fabric: none\n"), name="nofab")
    assert [
        (i["networkCardIndex"], i["deviceIndex"], i["interfaceType"])
        for i in one(plan, LT).inputs["networkInterfaces"]
    ] == [(0, 0, "interface")]
    assert all_of(plan, "aws:ec2/placementGroup:PlacementGroup") == []


def test_launch_template_security_and_placement() -> None:
    plan = aws_plan(group("p5.48xlarge", "    boot_disk_gib: 750\n"), name="lt")
    inputs = one(plan, LT).inputs
    assert inputs["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
        "instanceMetadataTags": "enabled",
    }
    assert inputs["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/sda1",
            "ebs": {
                "volumeSize": 750,
                "volumeType": "gp3",
                "encrypted": "true",
                "deleteOnTermination": "true",
            },
        }
    ]
    assert inputs["instanceType"] == "p5.48xlarge"
    assert inputs["imageId"] == (
        "resolve:ssm:/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
    )
    assert inputs["iamInstanceProfile"] == {"arn": "arn:aws:mock:::instanceprofile/lt-cluster-g-profile"}
    placement = one(plan, "aws:ec2/placementGroup:PlacementGroup")
    assert placement.inputs["strategy"] == "cluster"
    assert inputs["placement"] == {"groupName": "lt-cluster-g-placement"}
    assert "instanceMarketOptions" not in inputs
    assert "capacityReservationSpecification" not in inputs
    node = one(plan, "clusterfab:compute:AwsGpuNodeGroup")
    assert children(plan, node) == [
        ("aws:autoscaling/group:Group", "lt-cluster-g-asg"),
        ("aws:ec2/launchTemplate:LaunchTemplate", "lt-cluster-g-lt"),
        ("aws:ec2/placementGroup:PlacementGroup", "lt-cluster-g-placement"),
        ("aws:iam/instanceProfile:InstanceProfile", "lt-cluster-g-profile"),
        ("aws:iam/role:Role", "lt-cluster-g-role"),
        ("aws:iam/rolePolicy:RolePolicy", "lt-cluster-g-node-policy"),
    ]


def test_fixed_group_sizes_the_asg_exactly() -> None:
    plan = aws_plan(group("p5.48xlarge", count="count: 16"), name="fixed")
    asg = one(plan, ASG).inputs
    assert (asg["minSize"], asg["maxSize"], asg["desiredCapacity"]) == (16, 16, 16)
    assert asg["vpcZoneIdentifiers"] == ["fixed-cluster-net-nodes-id"]
    assert asg["launchTemplate"] == {"id": "fixed-cluster-g-lt-id", "version": "1"}
    assert asg["capacityRebalance"] is False
    assert asg["waitForCapacityTimeout"] == "0"


def test_autoscaled_group_starts_at_min() -> None:
    plan = aws_plan(group("p5.48xlarge", count="autoscaling: {min: 2, max: 12}"), name="auto")
    asg = one(plan, ASG).inputs
    assert (asg["minSize"], asg["maxSize"], asg["desiredCapacity"]) == (2, 12, 2)


def test_spot_uses_market_options_and_capacity_rebalance() -> None:
    plan = aws_plan(group("p5.48xlarge", "    capacity: {kind: spot}\n"), name="spot")
    assert one(plan, LT).inputs["instanceMarketOptions"] == {
        "marketType": "spot",
        "spotOptions": {"instanceInterruptionBehavior": "terminate", "spotInstanceType": "one-time"},
    }
    assert one(plan, ASG).inputs["capacityRebalance"] is True


def test_capacity_block_targets_the_block_with_a_fixed_size() -> None:
    plan = aws_plan(
        group(
            "p6-b200.48xlarge",
            "    capacity: {kind: capacity_block, reservation: cr-0a1b2c3d4e5f60718}\n",
            count="count: 8",
        ),
        name="cb",
    )
    inputs = one(plan, LT).inputs
    assert inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert inputs["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f60718"}
    }
    asg = one(plan, ASG).inputs
    assert (asg["minSize"], asg["maxSize"], asg["desiredCapacity"]) == (8, 8, 8)
    # A new placement group can strand part of the block (audit item 12; ParallelCluster refuses it).
    assert all_of(plan, "aws:ec2/placementGroup:PlacementGroup") == []
    assert "placement" not in inputs


def test_reservation_targets_the_odcr_without_market_options() -> None:
    plan = aws_plan(
        group("p5.48xlarge", "    capacity: {kind: reservation, reservation: cr-0123456789abcdef0}\n"),
        name="odcr",
    )
    inputs = one(plan, LT).inputs
    assert "instanceMarketOptions" not in inputs
    assert inputs["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": "cr-0123456789abcdef0"
    }
    assert all_of(plan, "aws:ec2/placementGroup:PlacementGroup") == []


def test_node_role_can_read_only_the_cluster_bucket_and_tag_its_own_health() -> None:
    plan = aws_plan(group("p5.48xlarge"), name="iam")
    policy = json.loads(
        one(plan, "aws:iam/rolePolicy:RolePolicy", "iam-cluster-g-node-policy").inputs["policy"]
    )
    bucket = "arn:aws:mock:::bucket/iam-cluster-artifacts-bucket"
    assert [(s["Sid"], s["Action"], s["Resource"]) for s in policy["Statement"]] == [
        ("ReadClusterBucket", ["s3:GetObject", "s3:GetObjectVersion"], f"{bucket}/*"),
        ("ListClusterBucket", "s3:ListBucket", bucket),
        ("RecordOwnHealth", "ec2:CreateTags", "${ec2:SourceInstanceARN}"),
        (
            "SessionManager",
            [
                "ssm:UpdateInstanceInformation",
                "ssmmessages:CreateControlChannel",
                "ssmmessages:CreateDataChannel",
                "ssmmessages:OpenControlChannel",
                "ssmmessages:OpenDataChannel",
            ],
            "*",
        ),
    ]
    assert policy["Statement"][2]["Condition"] == {
        "StringEquals": {
            "aws:ResourceTag/clusterfab-node-group": "g",
            "aws:ResourceTag/clusterfab-stack": "plan",
            "aws:ResourceTag/clusterfab-blueprint": "iam-cluster",
        },
        "ForAllValues:StringEquals": {"aws:TagKeys": ["clusterfab-health"]},
    }
    # No managed policy: AmazonSSMManagedInstanceCore would let a node read every SSM parameter.
    assert all_of(plan, "aws:iam/rolePolicyAttachment:RolePolicyAttachment") == []
    trust = json.loads(one(plan, "aws:iam/role:Role", "iam-cluster-g-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}


def test_nodes_are_tagged_for_inventory() -> None:
    plan = aws_plan(group("p5.48xlarge"), name="tags")
    specs = one(plan, LT).inputs["tagSpecifications"]
    assert [s["resourceType"] for s in specs] == ["instance", "volume", "network-interface"]
    assert specs[0]["tags"] == {
        "clusterfab-blueprint": "tags-cluster",
        "clusterfab-stack": "plan",
        "clusterfab-component": "node-group-g",
        "clusterfab-node-group": "g",
        "Name": "tags-cluster-g",
    }


def test_user_data_configures_the_node_and_mounts_the_attached_file_systems_only() -> None:
    body = (
        group("p5.48xlarge", "    attach: [data]\n")
        + "storage:\n"
        + "  - {name: data, kind: lustre, capacity_gib: 2400, throughput_mbps_per_tib: 250,"
        + " mount_point: /data}\n"
        + "  - {name: other, kind: lustre, deployment: scratch, capacity_gib: 1200}\n"
    )
    script = user_data(aws_plan(body, name="ud"), "ud-cluster-g-lt")
    variables = boot_vars(script)
    assert variables["storage_mounts_list"] == [
        {
            "name": "data",
            "fstype": "lustre",
            "source": "ud-cluster-data-fs.fsx.mock@tcp:/mockmnt",
            "mount_point": "/data",
            "options": "relatime,flock",
        }
    ]
    assert (
        variables["storage_mounts_lustre_repo_url"]
        == "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu"
    )
    assert (variables["gpu_node_fabric"], variables["gpu_node_nvlink_services"]) == (
        "efa",
        ["fabric_manager"],
    )
    assert boot_vars(script, "healthcheck-vars") == {
        "gpu_healthcheck_expected_gpu_count": 8,
        "gpu_healthcheck_min_busbw_gbps": 3200,
        "gpu_healthcheck_expected_driver_version": "580.95.05",
    }
    assert "readonly BUCKET=ud-cluster-artifacts-bucket-mock" in script
    assert 'ansible-playbook" -i localhost, -c local gpu_node.yml' in script
    assert len(script.encode()) < 16384  # EC2's user-data limit


def test_default_image_follows_the_cpu_architecture() -> None:
    x86 = aws_plan(group("p5.48xlarge"), name="img")
    assert "/amd64/" in one(x86, LT).inputs["imageId"]
    grace = plan_text(
        "version: 1\nname: gb\ncloud: aws\nregion: us-east-1\nzone: use1-dfw2-az1\n"
        + group(
            "p6e-gb200.36xlarge",
            "    capacity: {kind: capacity_block, reservation: cr-0123456789abcdef0}\n",
            count="count: 9",
        )
    )
    assert "/arm64/" in one(grace, LT).inputs["imageId"]
    assert [
        (i["networkCardIndex"], i["interfaceType"]) for i in one(grace, LT).inputs["networkInterfaces"]
    ] == [(0, "interface"), (1, "efa-only"), (5, "efa-only"), (9, "efa-only"), (13, "efa-only")]


def test_explicit_image_wins() -> None:
    plan = aws_plan(group("p5.48xlarge", "    image: ami-0123456789abcdef0\n"), name="ami")
    assert one(plan, LT).inputs["imageId"] == "ami-0123456789abcdef0"
