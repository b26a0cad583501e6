"""Wrong catalog facts that the vendor-answer tests must refuse, one small edit each.

Every mutation names a file of the repository, a pure function from that file's text to the mutated text,
and the pytest node ids that must fail once it is applied (on a copy of the tree, or in place and then
restored). A runner applies one mutation at a time and runs those ids; a mutation that leaves them all
passing is a test that agrees with a wrong answer.

This module is data for such a runner, not a test module (pytest does not collect it).
"""

from __future__ import annotations

from tests.mutations import Mutation, replace_once

STACK = "tests/unit/test_software_stack.py"
APT = "tests/unit/test_apt_pins.py"
PRICES = "tests/unit/test_price_excerpts.py"
TAGS = "tests/unit/test_release_tags.py"

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        name="nonexistent-nccl-build",
        path="clusterfab/catalog/data/nccl_builds.yaml",
        edit=replace_once(
            '  - {nccl: "2.28.7", cuda_major: 13, released: 2025-10-21}\n',
            '  - {nccl: "2.28.7", cuda_major: 13, released: 2025-10-21}\n'
            '  - {nccl: "2.28.8", cuda_major: 13, released: 2025-11-04}\n',
        ),
        must_fail=(f"{STACK}::test_the_catalogs_nccl_builds_are_the_ones_pypi_answered",),
        why="NVIDIA never uploaded NCCL 2.28.8 to nvidia-nccl-cu13 (nor tagged it)",
    ),
    Mutation(
        name="changed-nccl-release-date",
        path="clusterfab/catalog/data/nccl_builds.yaml",
        edit=replace_once(
            '  - {nccl: "2.28.9", cuda_major: 13, released: 2025-11-18}\n',
            '  - {nccl: "2.28.9", cuda_major: 13, released: 2025-11-19}\n',
        ),
        must_fail=(f"{STACK}::test_the_catalogs_nccl_builds_are_the_ones_pypi_answered",),
        why="PyPI's first upload of nvidia-nccl-cu13 2.28.9 is 2025-11-18",
    ),
    Mutation(
        name="nonexistent-driver-release",
        path="clusterfab/catalog/data/releases.yaml",
        edit=replace_once('"580.95.05", "580.105.08"', '"580.95.05", "580.95.06", "580.105.08"'),
        must_fail=(f"{TAGS}::test_driver_releases_are_the_open_kernel_module_tags",),
        why="open-gpu-kernel-modules has no tag 580.95.06",
    ),
    Mutation(
        name="wrong-apt-version-ubuntu",
        path="clusterfab/catalog/data/packages.yaml",
        edit=replace_once(
            '    name: openmpi-bin\n    version: "4.1.6-7ubuntu2"\n',
            '    name: openmpi-bin\n    version: "4.1.6-7ubuntu3"\n',
        ),
        must_fail=(f"{APT}::test_a_pinned_version_is_in_the_vendors_index[packages.yaml:openmpi-bin]",),
        why="noble/universe carries openmpi-bin 4.1.6-7ubuntu2 only",
    ),
    Mutation(
        name="wrong-apt-version-slurm",
        path="clusterfab/catalog/data/slurm.yaml",
        edit=replace_once('package_version: "23.11.4-1.2ubuntu5"', 'package_version: "23.11.4-1.2ubuntu6"'),
        must_fail=(
            f"{APT}::test_a_pinned_version_is_in_the_vendors_index[slurm.yaml:slurmctld]",
            f"{APT}::test_a_pinned_version_is_in_the_vendors_index[slurm.yaml:slurmd]",
        ),
        why="noble/universe carries Slurm 23.11.4-1.2ubuntu5 only",
    ),
    Mutation(
        name="wrong-apt-version-cuda-repository",
        path="clusterfab/catalog/data/packages.yaml",
        edit=replace_once(
            '    name: libnccl-dev\n    version: "2.28.9-1+cuda13.0"\n',
            '    name: libnccl-dev\n    version: "2.28.8-1+cuda13.0"\n',
        ),
        must_fail=(f"{APT}::test_every_pin_is_recorded_or_declared_unreadable",),
        why="a CUDA-repository pin that differs from the one written out while its index is unrecorded",
    ),
    Mutation(
        name="wrong-price-aws-on-demand",
        path="clusterfab/catalog/data/prices.yaml",
        edit=replace_once(
            "sku: p5.48xlarge, pricing_model: on_demand, unit: hour, usd: 55.04, regions: [us-east-1]",
            "sku: p5.48xlarge, pricing_model: on_demand, unit: hour, usd: 56.04, regions: [us-east-1]",
        ),
        must_fail=(f"{PRICES}::test_aws_on_demand_prices_are_the_price_lists[p5.48xlarge]",),
        why="the price list's p5.48xlarge us-east-1 on-demand hour is 55.04",
    ),
    Mutation(
        name="wrong-price-tpu-spot",
        path="clusterfab/catalog/data/prices.yaml",
        edit=replace_once(
            "sku: tpu-v6e, pricing_model: spot, unit: chip_hour, usd: 0.57285,",
            "sku: tpu-v6e, pricing_model: spot, unit: chip_hour, usd: 0.58285,",
        ),
        must_fail=(
            f"{PRICES}::test_tpu_chip_prices_are_the_slice_prices_per_chip[tpu-v6e-spot-us-central1]",
        ),
        why="the tpu-v6e-1 spot hour in us-central1, us-east1 and us-west1 is 0.57285",
    ),
    Mutation(
        name="azure-mysql-retiring-root",
        path="clusterfab/catalog/data/slurm.yaml",
        edit=replace_once(
            "      - /usr/share/ca-certificates/mozilla/DigiCert_Global_Root_G2.crt\n",
            "      - /usr/share/ca-certificates/mozilla/DigiCert_Global_Root_CA.crt\n",
        ),
        must_fail=(
            "tests/unit/test_slurm_accounting_azure.py::"
            "test_the_catalog_names_the_roots_azure_signs_with_in_the_hosts_trust_store",
        ),
        why="Azure Database for MySQL chains to DigiCert Global Root G2 and Microsoft RSA Root CA 2017; the "
        "older DigiCert Global Root CA is being retired",
    ),
    Mutation(
        name="azure-mysql-undocumented-version",
        path="clusterfab/catalog/data/slurm.yaml",
        edit=replace_once(
            '    engine: mysql\n    version: "8.4"\n', '    engine: mysql\n    version: "8.5"\n'
        ),
        must_fail=(
            "tests/components/test_azure_slurm_accounting.py::"
            "test_the_server_is_mysql_8_4_general_purpose_private_tls_only_and_protected",
            "tests/apimodels/test_azure_specs.py::"
            "test_every_planned_azure_resource_is_valid_for_its_rest_api_specification"
            "[azure-slurm-managed-accounting]",
        ),
        why="flexible server offers 5.7, 8.0 and 8.4 (GA); the specification's enum lists 5.7 and 8.0.21",
    ),
)
