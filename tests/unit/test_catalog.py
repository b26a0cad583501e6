"""Catalog integrity: every figure has provenance, layouts fit the hardware, grids and topologies add up."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import math
import re
from functools import reduce
from pathlib import Path

import pytest

from clusterfab.catalog import at_least, load_catalog
from clusterfab.clouds import profile
from tests.conftest import REPO

CATALOG = load_catalog()


def test_every_price_has_a_declared_source_and_a_date_not_in_the_future() -> None:
    for price in CATALOG.prices:
        assert price.source in CATALOG.sources, price
        assert price.as_of <= CATALOG.index.as_of, price
        assert price.usd > 0
        assert math.isfinite(price.usd)


def test_every_sourced_record_names_declared_sources() -> None:
    records = [
        *CATALOG.aws_machine_types.values(),
        *CATALOG.gcp_machine_types.values(),
        *CATALOG.tpu_generations.values(),
        *CATALOG.storage_tiers,
        *CATALOG.network_layouts.values(),
        *CATALOG.gpus.values(),
        *CATALOG.fabric_software.values(),
        CATALOG.cuda_drivers,
        CATALOG.recommended,
        CATALOG.healthcheck,
        CATALOG.aws_regions,
        CATALOG.capacity_blocks,
        CATALOG.capacity_block_times,
        *CATALOG.images,
        *CATALOG.lustre_clients.values(),
        *CATALOG.stateful_types.values(),
        *CATALOG.node_packages.values(),
        *CATALOG.releases.values(),
    ]
    for record in records:
        assert record.source, record
        assert all(s in CATALOG.sources for s in record.source), record.source
        # `unconfirmed` notes must name real fields, or they document nothing
        for field in record.unconfirmed:
            assert field in type(record).model_fields, (type(record).__name__, field)


def test_records_without_any_source_are_marked_unconfirmed() -> None:
    for gpu in CATALOG.gpus.values():
        if gpu.source == ["S-NONE"]:
            assert gpu.confidence == "unconfirmed", gpu.model
    assert CATALOG.healthcheck.confidence == "unconfirmed"


@pytest.mark.parametrize("name", sorted(load_catalog().aws_machine_types))
def test_efa_layout_fits_the_machine(name: str) -> None:
    machine = CATALOG.aws_machine_types[name]
    interfaces = CATALOG.efa_interfaces(machine)
    slots = [(i.network_card_index, i.device_index) for i in interfaces]
    assert len(slots) == len(set(slots)), "two interfaces on the same card/device"
    assert all(card < machine.network_cards for card, _ in slots)
    # exactly one primary interface, and it can carry IP traffic (efa-only cannot be primary)
    primary = [i for i in interfaces if (i.network_card_index, i.device_index) == (0, 0)]
    assert len(primary) == 1
    assert primary[0].interface_type in {"interface", "efa"}
    efa_devices = [i for i in interfaces if i.interface_type in {"efa", "efa-only"}]
    assert len(efa_devices) == machine.max_efa_interfaces


def test_p5_layout_is_the_full_bandwidth_uc1_form() -> None:
    interfaces = CATALOG.efa_interfaces(CATALOG.aws_machine_types["p5.48xlarge"])
    assert len(interfaces) == 33
    assert [(i.network_card_index, i.device_index, i.interface_type) for i in interfaces[:3]] == [
        (0, 0, "interface"),
        (0, 1, "efa-only"),
        (1, 0, "efa-only"),
    ]
    assert (interfaces[-1].network_card_index, interfaces[-1].device_index) == (31, 0)


def test_aws_locations_are_zone_ids_of_their_region() -> None:
    for machine in CATALOG.aws_machine_types.values():
        for region, zones in machine.locations.items():
            for zone in zones:
                assert profile("aws").region_of_zone(CATALOG, zone) == region, (machine.name, zone)


def test_gcp_zones_belong_to_known_regions_and_networks_add_up() -> None:
    for machine in CATALOG.gcp_machine_types.values():
        for zone in machine.zones:
            assert profile("gcp").region_of_zone(CATALOG, zone) is not None
        net = machine.network
        # one NIC per GPU NIC: extra GPU VPCs (TCPX/TCPXO) or RDMA subnets (RoCE), never both
        assert (net.gpu_vpcs == 0) != (net.rdma_subnets == 0)
        assert net.gpu_vpcs + net.rdma_subnets == machine.gpu_nics
        if net.rdma_subnets:
            assert net.gpu_nic_type == "MRDMA"
            assert net.rdma_profile == "vpc-roce"
            assert net.rdma_mtu == 8896


def test_gcp_boot_disks_follow_the_machine_generation() -> None:
    disks = {name: m.boot_disk_type for name, m in CATALOG.gcp_machine_types.items()}
    # A3 Ultra, A4 and A4X take Hyperdisk only; the Cluster Toolkit boots A3 High / Mega from pd-ssd.
    assert disks == {
        "a3-highgpu-8g": "pd-ssd",
        "a3-megagpu-8g": "pd-ssd",
        "a3-ultragpu-8g": "hyperdisk-balanced",
        "a4-highgpu-8g": "hyperdisk-balanced",
        "a4x-highgpu-4g": "hyperdisk-balanced",
    }


def test_gcp_compact_placement_is_a_distance_or_an_accelerator_topology() -> None:
    for machine in CATALOG.gcp_machine_types.values():
        placement = machine.placement
        # a workload policy takes either a max topology distance or an accelerator topology, never both
        assert (placement.accelerator_topology is None) != (placement.min_max_distance is None), machine.name
        assert all((placement.min_max_distance or 1) <= d <= 3 for d in placement.max_vms_by_distance)
    a4x = CATALOG.gcp_machine_types["a4x-highgpu-4g"].placement
    assert (a4x.accelerator_topology, a4x.max_vms) == ("1x72", 18)


@pytest.mark.parametrize("generation", sorted(load_catalog().tpu_generations))
def test_tpu_topologies_multiply_to_their_chip_count(generation: str) -> None:
    gen = CATALOG.tpu_generations[generation]
    for topology, spec in gen.topologies.items():
        dims = [int(d) for d in topology.split("x")]
        assert len(dims) == gen.dimensions, topology
        assert reduce(lambda a, b: a * b, dims) == spec.chips, topology
        assert spec.chips % spec.hosts == 0, topology
        assert spec.chips // spec.hosts in gen.host_shapes, topology
        if spec.hosts > 1:
            assert spec.chips // spec.hosts == gen.chips_per_host, topology


@pytest.mark.parametrize(
    ("generation", "topology", "accelerator_type"),
    [
        ("v5p", "2x2x1", "v5p-8"),
        ("v5p", "4x4x4", "v5p-128"),
        ("v5p", "16x16x24", "v5p-12288"),
        ("v6e", "4x4", "v6e-16"),
        ("v6e", "16x16", "v6e-256"),
        ("v5e", "2x4", "v5litepod-8"),
    ],
)
def test_tpu_accelerator_type_names(generation: str, topology: str, accelerator_type: str) -> None:
    assert CATALOG.tpu_generations[generation].accelerator_type(topology) == accelerator_type


def test_no_topology_is_larger_than_the_largest_slice_google_offers() -> None:
    for generation in CATALOG.tpu_generations.values():
        largest = max(t.chips for t in generation.topologies.values())
        limit = generation.max_chips_per_slice
        assert limit is None or largest <= limit, generation.name
    v5p = CATALOG.tpu_generations["v5p"]
    assert (v5p.max_chips_per_slice, v5p.topologies["16x16x24"].chips) == (6144, 6144)


def test_storage_grids_are_well_formed() -> None:
    for tier in CATALOG.storage_tiers:
        previous_max = 0
        for band in tier.capacity_bands:
            assert band.min_gib % band.step_gib == 0, (tier.tier, band)
            assert band.min_gib > previous_max, (tier.tier, band)
            if band.max_gib is not None:
                assert band.max_gib % band.step_gib == 0, (tier.tier, band)
                previous_max = band.max_gib


@pytest.mark.parametrize(
    ("cloud", "kind", "tier", "capacity", "fits", "nearest"),
    [
        ("aws", "lustre", "PERSISTENT_2", 1200, True, [1200]),
        ("aws", "lustre", "PERSISTENT_2", 1800, False, [1200, 2400]),
        ("aws", "lustre", "PERSISTENT_2", 36100, False, [36000, 38400]),
        ("aws", "lustre", "PERSISTENT_2", 600, False, [1200]),
        ("gcp", "lustre", "1000", 1540000, False, [1530000, 1584000]),
        ("gcp", "lustre", "1000", 10008000, True, [10008000]),
        ("gcp", "lustre", "1000", 10080000, False, [10008000]),
        ("gcp", "filestore", "ZONAL", 10000, False, [9984, 10240]),
    ],
)
def test_capacity_grid(
    cloud: str, kind: str, tier: str, capacity: int, fits: bool, nearest: list[int]
) -> None:
    found = CATALOG.storage_tier(cloud, kind, tier)  # type: ignore[arg-type]
    assert found is not None
    assert found.fits(capacity) is fits
    assert found.nearest(capacity) == nearest


def test_cuda_driver_minimums() -> None:
    assert CATALOG.min_driver_for_cuda("13.0").driver == "580.65.06"  # type: ignore[union-attr]
    assert CATALOG.min_driver_for_cuda("13.0.2").driver == "580.95.05"  # type: ignore[union-attr]
    # an update the table lacks falls back to the closest older one of the same release
    assert CATALOG.min_driver_for_cuda("12.6.2").driver == "560.28.03"  # type: ignore[union-attr]
    assert CATALOG.min_driver_for_cuda("12.7") is None


def test_recommended_stack_is_consistent_with_every_gpu_and_its_cuda() -> None:
    stack = CATALOG.recommended
    release = CATALOG.min_driver_for_cuda(stack.cuda)
    assert release is not None
    assert at_least(stack.nvidia_driver, release.driver)
    for gpu in CATALOG.gpus.values():
        assert at_least(stack.nvidia_driver, gpu.min_driver), gpu.model
        assert at_least(stack.cuda, gpu.min_cuda), gpu.model


def test_version_comparison_treats_a_branch_as_the_branch() -> None:
    assert at_least("580", "580.65.06")
    assert not at_least("570", "580.65.06")
    assert at_least("580.95.05", "580.65.06")
    assert not at_least("580.65.05", "580.65.06")


def test_newest_price_wins_and_regions_are_respected() -> None:
    price = CATALOG.price("aws", "p5.48xlarge", "us-east-1", "on_demand")
    assert price is not None
    assert (price.usd, price.source) == (55.04, "S-PL")
    # sa-east-1 offers p5 (S-MOTO) but has no sourced price: a declared gap in prices.yaml
    assert CATALOG.price("aws", "p5.48xlarge", "sa-east-1", "on_demand") is None
    spot = CATALOG.price("gcp", "tpu-v6e", "us-east4", "spot")
    assert spot is not None
    assert spot.usd == 0.64185


def test_every_machine_has_a_default_image_for_its_architecture() -> None:
    for machine in [*CATALOG.aws_machine_types.values(), *CATALOG.gcp_machine_types.values()]:
        image = CATALOG.default_image(machine.cloud, machine.cpu_architecture)
        assert image.cpu_architecture == machine.cpu_architecture


def test_aws_records_carry_what_a_launch_template_and_fsx_need() -> None:
    for image in CATALOG.images:
        if image.cloud == "aws":
            assert (image.root_device, image.root_volume_type) == ("/dev/sda1", "gp3"), image.image
    for tier in CATALOG.storage_tiers_for("aws", "lustre"):
        assert tier.lustre_version is not None, tier.tier


# --- replacement rules (replacements.yaml) --------------------------------------------------------


def _planned_types() -> set[str]:
    plans = (REPO / "tests" / "golden" / "plans").glob("*.json")
    return {r["type"] for p in plans for r in json.loads(p.read_text())["resources"] if r["custom"]}


_CONSTRUCTED = re.compile(r"\b(aws|gcp)\.(\w+)\.([A-Z]\w*)\(")


def _constructed_types() -> set[str]:
    """Type tokens of the cloud resources components/ constructs, read from the installed SDKs' sources."""
    tokens = set()
    for source in (REPO / "components").rglob("*.py"):
        for cloud, module, name in _CONSTRUCTED.findall(source.read_text()):
            spec = importlib.util.find_spec(f"pulumi_{cloud}")
            assert spec is not None
            assert spec.origin is not None
            for candidate in (Path(spec.origin).parent / module).glob("*.py"):
                text = candidate.read_text()
                if f"class {name}(pulumi.CustomResource)" in text:
                    found = re.search(rf"super\({name}, __self__\).__init__\(\s*'([^']+)'", text)
                    assert found is not None, candidate
                    tokens.add(found.group(1))
    return tokens


def test_every_resource_type_the_plans_create_has_a_replacement_rule() -> None:
    # A type without a rule would be diffed as "replaced on any change"; a missing rule is a data gap.
    planned = _planned_types()
    assert "aws:fsx/lustreFileSystem:LustreFileSystem" in planned
    assert planned - set(CATALOG.replacements.types) == set()


def test_every_cloud_resource_the_components_construct_has_a_replacement_rule() -> None:
    constructed = _constructed_types()
    assert {"aws:ec2/vpc:Vpc", "gcp:filestore/instance:Instance", "gcp:billing/budget:Budget"} <= constructed
    assert constructed - set(CATALOG.replacements.types) == set()


def test_replacement_rules_are_for_the_locked_provider_packages() -> None:
    # Regenerate replacements.yaml (scripts/replacement_data.py) when uv.lock moves a provider.
    for cloud, read in CATALOG.replacements.providers.items():
        assert read.pulumi_package == f"pulumi-{cloud}"
        assert read.pulumi_version == importlib.metadata.version(read.pulumi_package)
        assert read.source
        assert all(s in CATALOG.sources for s in read.source)


def test_replacement_rules_name_properties_the_sdk_has() -> None:
    # Every top-level property a rule names is an input of the installed SDK's resource (its Args class).
    import pulumi_aws

    vpc = set(pulumi_aws.ec2.VpcArgs.__init__.__code__.co_varnames)
    rule = CATALOG.replacements.types["aws:ec2/vpc:Vpc"]
    assert {"cidrBlock", "region"} <= set(rule.replace_on)
    assert {"cidr_block", "region"} <= vpc
    fsx = CATALOG.replacements.types["aws:fsx/lustreFileSystem:LustreFileSystem"]
    assert {"subnetIds", "securityGroupIds", "deploymentType"} <= set(fsx.replace_on)
    assert [(w.property, w.when) for w in fsx.replace_when][:1] == [("storageCapacity", "decrease")]
    for rule in CATALOG.replacements.types.values():
        assert rule.source, rule.type
        assert all(s in CATALOG.sources for s in rule.source), rule.type
        for field in rule.unconfirmed:
            assert field in type(rule).model_fields, (rule.type, field)
