"""Resolution: what a blueprint means once the catalog and the defaults are applied, decided once."""

from __future__ import annotations

import pytest

from clusterfab.spec import CapacityBlock, FlexStart, OnDemand, Reservation, Spot, Unresolved
from tests.factories import example_spec, spec

P5 = {"name": "trainers", "machine_type": "p5.48xlarge"}


def test_a_multi_node_fabric_group_is_compact_and_a_single_node_is_not() -> None:
    resolved = spec(node_groups=[{**P5, "count": 4}, {**P5, "name": "solo", "count": 1}])
    many, solo = resolved.node_groups
    assert (many.fabric, many.placement) == ("efa", "compact")
    assert (solo.fabric, solo.placement) == ("efa", "none")


def test_fabric_none_drops_the_fabric_and_with_it_compact_placement() -> None:
    (group,) = spec(node_groups=[{**P5, "count": 4, "fabric": "none"}]).node_groups
    assert (group.fabric, group.placement) == (None, "none")


def test_sizes_come_from_count_or_autoscaling() -> None:
    fixed, scaled = spec(
        node_groups=[{**P5, "count": 3}, {**P5, "name": "burst", "autoscaling": {"min": 1, "max": 9}}]
    ).node_groups
    assert (fixed.min_size, fixed.max_size, fixed.autoscaled) == (3, 3, False)
    assert (scaled.min_size, scaled.max_size, scaled.autoscaled) == (1, 9, True)
    assert scaled.max_gpus == 72


@pytest.mark.parametrize(
    ("capacity", "expected"),
    [
        ({"kind": "on_demand"}, OnDemand()),
        ({"kind": "spot"}, Spot()),
        ({"kind": "reservation", "reservation": "cr-0123456789abcdef0"}, Reservation("cr-0123456789abcdef0")),
        (
            {"kind": "capacity_block", "reservation": "cr-0123456789abcdef0"},
            CapacityBlock("cr-0123456789abcdef0"),
        ),
        ({"kind": "flex_start", "max_run_duration_hours": 6}, FlexStart(6)),
    ],
)
def test_capacity_resolves_to_exactly_one_typed_value(capacity: dict[str, object], expected: object) -> None:
    (group,) = spec(node_groups=[{**P5, "count": 2, "capacity": capacity}]).node_groups
    assert group.capacity == expected


def test_images_default_to_the_catalogs_per_architecture() -> None:
    (group,) = spec(node_groups=[{**P5, "count": 1}]).node_groups
    assert group.image.startswith("resolve:ssm:/aws/service/canonical/ubuntu/server/24.04/")
    assert "/amd64/" in group.image
    assert group.root_device == "/dev/sda1"
    (mine,) = spec(node_groups=[{**P5, "count": 1, "image": "ami-0123456789abcdef0"}]).node_groups
    assert mine.image == "ami-0123456789abcdef0"


def test_tpu_accelerator_types_count_cores_for_v5p_and_chips_for_v6e() -> None:
    v5p, v6e = spec(
        "gcp",
        tpu_slices=[
            {"name": "a", "generation": "v5p", "topology": "8x8x8", "slices": 2},
            {"name": "b", "generation": "v6e", "topology": "2x4", "runtime_version": "custom"},
        ],
    ).tpu_slices
    assert (v5p.accelerator_type, v5p.hosts_per_slice, v5p.chips) == ("v5p-1024", 128, 1024)
    assert (v6e.accelerator_type, v6e.runtime_version, v6e.chips) == ("v6e-8", "custom", 8)


def test_storage_is_protected_in_prod_unless_the_blueprint_decides() -> None:
    storage = [
        {"kind": "lustre", "name": "a", "capacity_gib": 1200, "throughput_mbps_per_tib": 250},
        {
            "kind": "lustre",
            "name": "b",
            "capacity_gib": 1200,
            "throughput_mbps_per_tib": 250,
            "protect": False,
        },
    ]
    prod = spec(env="prod", storage=storage, node_groups=[{**P5, "count": 1}])
    dev = spec(env="dev", storage=storage, node_groups=[{**P5, "count": 1}])
    assert [s.protected for s in prod.storage] == [True, False]
    assert [s.protected for s in dev.storage] == [False, False]
    assert (prod.protected, dev.protected) == (True, False)


def test_attach_picks_storage_in_blueprint_order_and_defaults_to_all() -> None:
    storage = [
        {"kind": "lustre", "name": "a", "capacity_gib": 1200, "throughput_mbps_per_tib": 250},
        {
            "kind": "lustre",
            "name": "b",
            "capacity_gib": 1200,
            "throughput_mbps_per_tib": 250,
            "mount_point": "/b",
        },
    ]
    every, some = spec(
        storage=storage, node_groups=[{**P5, "count": 1}, {**P5, "name": "x", "count": 1, "attach": ["b"]}]
    ).node_groups
    assert (every.storage, some.storage) == (("a", "b"), ("b",))


def test_what_the_catalog_lacks_is_unresolved_not_guessed() -> None:
    resolved = spec(
        node_groups=[{**P5, "count": 1}, {"name": "typo", "machine_type": "p5.48xlarg", "count": 1}],
        storage=[{"kind": "lustre", "name": "s", "capacity_gib": 1200, "throughput_mbps_per_tib": 300}],
    )
    assert [g.name for g in resolved.node_groups] == ["trainers"]
    assert resolved.unresolved == (Unresolved(("storage", 0), "s"), Unresolved(("node_groups", 1), "typo"))
    assert not resolved.complete
    assert resolved.node_groups[0].storage == ()


def test_every_example_resolves_completely() -> None:
    for name in ("aws-p5-efa-fsx", "gcp-a3ultra-roce-lustre", "gcp-tpu-v5p-multislice"):
        assert example_spec(name).complete
