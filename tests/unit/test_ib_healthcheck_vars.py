"""What the health check expects of an InfiniBand node: the machine type's HCAs and port rate and the
GPUDirect loopback floor, from the catalog, for node groups whose fabric is infiniband only."""

from __future__ import annotations

from typing import Any

from clusterfab.catalog import load_catalog
from clusterfab.provision.extravars import healthcheck_vars
from tests.factories import example_spec
from tests.factories import spec as spec_of

CATALOG = load_catalog()
BASE = {"gpu_healthcheck_expected_gpu_count": 8, "gpu_healthcheck_expected_driver_version": ""}


def _vars(machine_type: str, count: int = 2) -> dict[str, Any]:
    spec = spec_of("azure", node_groups=[{"name": "g", "machine_type": machine_type, "count": count}])
    return healthcheck_vars(spec, spec.node_groups[0], CATALOG)


def test_the_gdr_floors_are_azure_s() -> None:
    # Azure/azurehpc-health-checks 0e0a1ac: conf/nd96isr_h100_v5.conf `check_ib_bw_gdr 380`,
    # conf/nd96isr_h200_v5.conf `check_ib_bw_gdr 360`; customTests/azure_ib_write_bw_gdr.nhc MESSAGE_SIZE.
    assert CATALOG.gdr_loopback.per_machine_type == {
        "Standard_ND96isr_H100_v5": 380,
        "Standard_ND96isr_H200_v5": 360,
    }
    assert CATALOG.gdr_loopback.message_size_bytes == 8388608
    assert CATALOG.gdr_loopback.source == ["S-AZNHC-IB"]
    for name in CATALOG.gdr_loopback.per_machine_type:
        assert CATALOG.azure.machine_types[name].fabric == "infiniband"


def test_the_example_nd_h100_v5_group() -> None:
    spec = example_spec("azure-ndv5-ib")
    variables = healthcheck_vars(spec, spec.node_groups[0], CATALOG)
    assert {k: v for k, v in variables.items() if k.startswith("gpu_healthcheck_ib_")} == {
        "gpu_healthcheck_ib_expected_hcas": 8,
        "gpu_healthcheck_ib_gbps_per_port": 400,
        "gpu_healthcheck_ib_min_gdr_gbps": 380,
        "gpu_healthcheck_ib_gdr_message_size": 8388608,
    }


def test_h200_gb300_and_a_size_without_infiniband() -> None:
    h200 = _vars("Standard_ND96isr_H200_v5")
    assert (h200["gpu_healthcheck_ib_expected_hcas"], h200["gpu_healthcheck_ib_gbps_per_port"]) == (8, 400)
    assert h200["gpu_healthcheck_ib_min_gdr_gbps"] == 360
    # GB300 v6: 4 x 800 Gb/s, no published loopback floor: measured and reported only.
    gb300 = _vars("Standard_ND128isr_GB300_v6", count=18)
    assert {k: v for k, v in gb300.items() if k.startswith("gpu_healthcheck_ib_")} == {
        "gpu_healthcheck_ib_expected_hcas": 4,
        "gpu_healthcheck_ib_gbps_per_port": 800,
        "gpu_healthcheck_ib_min_gdr_gbps": 0.0,
        "gpu_healthcheck_ib_gdr_message_size": 8388608,
    }
    # ND96is (no `r`): no InfiniBand, so the role skips its InfiniBand checks.
    plain = _vars("Standard_ND96is_H100_v5")
    assert [k for k in plain if k.startswith("gpu_healthcheck_ib_")] == []
    assert {k: plain[k] for k in BASE} == BASE


def test_a_group_with_infiniband_switched_off_gets_no_infiniband_checks() -> None:
    spec = spec_of(
        "azure",
        node_groups=[{"name": "g", "machine_type": "Standard_ND96isr_H100_v5", "count": 2, "fabric": "none"}],
    )
    assert spec.node_groups[0].fabric is None
    variables = healthcheck_vars(spec, spec.node_groups[0], CATALOG)
    assert [k for k in variables if k.startswith("gpu_healthcheck_ib_")] == []
