"""Azure Managed Lustre subnets without Pulumi: the sizes Microsoft's table gives per capacity, where the
layout puts each file system's subnet in the cluster range, and BP229 where it has none.

Microsoft's table (learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites, "Network size
requirements", read 2026-11-29): 4 TiB to 16 TiB /27, 20 TiB to 40 TiB /26, 44 TiB to 92 TiB /25, 96 TiB to
196 TiB /24, 200 TiB to 400 TiB /23, each "or larger"."""

from __future__ import annotations

import ipaddress

import pytest

from clusterfab.addressing import azure_lustre_subnets
from clusterfab.catalog import load_catalog
from clusterfab.clouds.azure.lustre import LustreSubnet, lustre_subnets
from clusterfab.load import load_bytes
from tests.factories import TODAY

TIB = 1024


def _net(cidr: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(cidr)


@pytest.mark.parametrize(
    ("tib", "prefix"),
    [(4, 27), (16, 27), (20, 26), (40, 26), (44, 25), (92, 25), (96, 24), (196, 24), (200, 23), (400, 23)],
)
def test_the_catalog_gives_microsofts_subnet_size_for_a_capacity(tib: int, prefix: int) -> None:
    assert load_catalog().azure.amlfs_subnets.prefix_for(tib) == prefix


def test_a_capacity_beyond_the_table_has_no_size_and_takes_no_room() -> None:
    table = load_catalog().azure.amlfs_subnets
    assert lustre_subnets("10.20.0.0/16", [480 * TIB, 48 * TIB, 16 * TIB], table) == [
        LustreSubnet(480, None, None),
        LustreSubnet(48, 25, _net("10.20.32.0/20")),
        LustreSubnet(16, 27, _net("10.20.48.0/27")),
    ]


def test_the_first_takes_block_2_and_the_others_pack_in_order_from_block_3_aligned() -> None:
    assert azure_lustre_subnets("10.20.0.0/16", [26, 27, 23, 27]) == [
        _net("10.20.32.0/20"),
        _net("10.20.48.0/27"),
        _net("10.20.50.0/23"),
        _net("10.20.52.0/27"),
    ]


def test_adding_a_file_system_at_the_end_moves_none_before_it() -> None:
    two = azure_lustre_subnets("10.20.0.0/16", [26, 25])
    assert (
        azure_lustre_subnets("10.20.0.0/16", [26, 25, 23])[:2]
        == two
        == [
            _net("10.20.32.0/20"),
            _net("10.20.48.0/25"),
        ]
    )


def test_no_room_is_none_the_last_two_blocks_staying_free() -> None:
    # a /20 range: blocks of /24; block 2 cannot hold a /23, blocks 3-13 hold five /23s (from .4.0)
    assert azure_lustre_subnets("10.20.0.0/20", [23]) == [None]
    assert azure_lustre_subnets("10.20.0.0/20", [27, 23, 23, 23, 23, 23, 23]) == [
        _net("10.20.2.0/24"),
        _net("10.20.4.0/23"),
        _net("10.20.6.0/23"),
        _net("10.20.8.0/23"),
        _net("10.20.10.0/23"),
        _net("10.20.12.0/23"),
        None,
    ]


def _storage(name: str, gib: int, throughput: int) -> str:
    return (
        f"  - name: {name}\n    kind: lustre\n    capacity_gib: {gib}\n"
        f"    throughput_mbps_per_tib: {throughput}\n    mount_point: /{name}\n"
    )


HEAD = """version: 1
name: many
cloud: azure
region: southcentralus
zone: "1"
scheduler: {kind: none}
network: {cidr: 10.20.0.0/20}
node_groups:
  - name: trainers
    machine_type: Standard_ND96isr_H100_v5
    count: 4
storage:
"""


def test_a_file_system_after_the_first_with_no_room_left_is_bp229_at_its_entry() -> None:
    # 16 TiB on the 500 tier, then six of 240 TiB on the 40 tier: five /23s fit, the sixth does not
    text = (
        HEAD
        + _storage("home", 16 * TIB, 500)
        + "".join(_storage(f"d{i}", 240 * TIB, 40) for i in range(1, 7))
    )
    result = load_bytes(text.encode(), "many.yaml", today=TODAY)
    found = [
        (f.severity.value, f.code, f.field, f.line, f.column, f.message, f.hint) for f in result.findings
    ]
    assert [f for f in found if f[1] == "BP229"] == [
        (
            "error",
            "BP229",
            "storage[6]",
            43,
            5,
            "storage d6 (240 TiB) needs a subnet of /23 or larger, but the other file systems' blocks of "
            "10.20.0.0/20 (3-13: 10.20.3.0-10.20.13.255) have no room left for it (taken before it: "
            "/23, /23, /23, /23, /23)",
            "use a larger network.cidr (a /19 holds them all), or fewer or smaller file systems",
        )
    ]


def test_a_file_system_that_fits_and_a_blueprint_without_lustre_have_no_bp229() -> None:
    fits = (HEAD + _storage("home", 32 * TIB, 125)).replace("10.20.0.0/20", "10.20.0.0/16")
    no_lustre = HEAD.removesuffix("storage:\n")
    for text in (fits, no_lustre):
        result = load_bytes(text.encode(), "ok.yaml", today=TODAY)
        assert [f.code for f in result.findings if f.code == "BP229"] == []
