"""Azure for validate, cost and catalog: the fabric units of a group, the example's findings and cost lines,
the profile's commands, discovery, store and mocks, and that validate never loads pulumi-azure-native."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterfab import cli
from clusterfab.catalog import load_catalog
from clusterfab.clouds import profile
from clusterfab.clouds.azure.fabric import fabric_units, named_units
from clusterfab.clouds.azure.store import AzureBlobHealthStore
from clusterfab.outputs import BlueprintOutput
from tests.conftest import REPO

EXAMPLE = "blueprints/examples/azure-ndv5-ib.yaml"
H100 = "Standard_ND96isr_H100_v5"
VM = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Compute"


@pytest.mark.parametrize(
    ("machine", "count", "units"),
    [
        (H100, 16, (16,)),
        (H100, 100, (100,)),
        (H100, 101, (51, 50)),
        (H100, 200, (100, 100)),
        (H100, 250, (84, 83, 83)),
        ("Standard_ND128isr_GB300_v6", 36, (18, 18)),
        ("Standard_ND96is_H100_v5", 250, (250,)),
        (H100, 0, ()),
    ],
)
def test_a_group_is_cut_into_fabric_units_of_at_most_the_sizes_unit(
    machine: str, count: int, units: tuple[int, ...]
) -> None:
    assert fabric_units(load_catalog().azure.machine_types[machine], count) == units


@pytest.mark.parametrize(
    ("count", "static", "units"),
    [
        (6, 2, [("h100-0", 0, 2), ("h100-1", 2, 4)]),
        (250, 50, [("h100-0", 0, 50), ("h100-1", 50, 100), ("h100-2", 150, 100)]),
        (8, 0, [("h100", 0, 8)]),
        (8, 8, [("h100", 0, 8)]),
    ],
)
def test_an_elastic_groups_always_up_nodes_and_elastic_ones_are_units_apart(
    count: int, static: int, units: list[tuple[str, int, int]]
) -> None:
    machine = load_catalog().azure.machine_types[H100]
    found = named_units("h100", machine, count, static)
    assert [(u.name, u.first, u.size) for u in found] == units
    assert [u.always_up(static) for u in found] == [size if first < static else 0 for _, first, size in units]


def test_the_catalog_holds_the_size_pages_figures() -> None:
    h100 = load_catalog().azure.machine_types[H100]
    # ND H100 v5 size page: 8 x 400 Gb/s NDR, 96 vCPU, 1900 GiB; setup-infiniband: 100 VMs per scale set.
    assert (h100.ib_hcas, h100.ib_gbps_per_port, h100.vcpus, h100.memory_gib) == (8, 400, 96, 1900)
    assert (h100.fabric, h100.fabric_unit, h100.fabric_unit_kind) == ("infiniband", 100, "scale_set")
    assert str(load_catalog().azure.rdma_network.network) == "172.16.0.0/16"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.app, list(args))
    return result.exit_code, result.output


HINT = (
    "   hint: no stored source lists the regions of ND H100 v5; check with `az vm list-skus --size "
    "Standard_ND96isr_H100_v5\n         --location <region>`\n"
)


def test_validate_takes_the_example_with_a_warning_about_its_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFAB_TODAY", "2026-11-29")
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.chdir(REPO)
    assert _cli("validate", EXAMPLE) == (
        0,
        f"{EXAMPLE}:17:19: warning[BP202] node_groups[0].machine_type: the catalog lists no regions for "
        f"{H100}\n"
        f"   17 |     machine_type: {H100}\n"
        "      |                   ^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f"{HINT}\n"
        f"{EXAMPLE}: valid (0 errors, 1 warning, 0 notes; checked: base, dev, prod)\n",
    )


def test_cost_says_what_is_unpriced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFAB_TODAY", "2026-11-29")
    monkeypatch.chdir(REPO)
    code, out = _cli("cost", EXAMPLE, "--format", "json")
    cost = json.loads(out)
    assert code == 0
    assert (cost["hourly_usd"], cost["monthly_usd"]) == (0, 0)
    assert [
        (i["name"], i["sku"], i["pricing_model"], i["quantity"], i["unit_price_usd"]) for i in cost["items"]
    ] == [
        ("trainers", H100, "on_demand", 16, None),
        ("lustre", "amlfs/AMLFS-Durable-Premium-125", "on_demand", 32768, None),
    ]
    assert cost["warnings"] == [
        f"trainers: no on_demand price for {H100} in southcentralus; left out of the totals",
        "lustre: no price for amlfs/AMLFS-Durable-Premium-125 in southcentralus; left out of the totals",
    ]


def test_validate_and_cost_never_import_pulumi_azure_native() -> None:
    probe = (
        "import sys\nfrom typer.testing import CliRunner\nfrom clusterfab import cli\n"
        f"for args in (['validate', '{EXAMPLE}'], ['cost', '{EXAMPLE}']):\n"
        "    assert CliRunner().invoke(cli.app, args).exit_code == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pulumi_azure_native', 'pulumi'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


WHERE = BlueprintOutput(
    name="c", file="c.yaml", digest="0", bundle_sha256="0", environment=None, catalog_version="1",
    cloud="azure", region="southcentralus", zone="1",
)  # fmt: skip


def test_commands_reach_hosts_through_the_az_cli() -> None:
    azure = profile("azure")
    assert azure.host_access_tools == ("az",)
    instance = f"{VM}/virtualMachineScaleSets/trainers-0/virtualMachines/3"
    assert azure.run_command(WHERE, instance, "uptime") == [
        "az", "vmss", "run-command", "invoke",
        "--subscription", "00000000-0000-0000-0000-000000000000", "--resource-group", "rg1",
        "--name", "trainers-0", "--instance-id", "3",
        "--command-id", "RunShellScript", "--scripts", "uptime",
        "--query", "value[0].message", "--output", "tsv",
    ]  # fmt: skip
    controller = f"{VM}/virtualMachines/ctl"
    assert azure.forward_port(WHERE, controller, 3000, loopback="127.0.0.1", local_port=8080) == [
        "az", "network", "bastion", "ssh",
        "--subscription", "00000000-0000-0000-0000-000000000000", "--resource-group", "rg1",
        "--name", "rg1-bastion", "--target-resource-id", f"{VM}/virtualMachines/ctl", "--auth-type", "AAD",
        "--", "-N", "-L", "8080:127.0.0.1:3000", "-o", "ExitOnForwardFailure=yes",
    ]  # fmt: skip


def test_discovery_keeps_the_clusters_tagged_machines() -> None:
    found = profile("azure").scrape_discovery(WHERE, stack="prod", port=9400, project="sub-1")
    assert found["azure_sd_configs"] == [
        {
            "environment": "AzurePublicCloud",
            "authentication_method": "ManagedIdentity",
            "subscription_id": "sub-1",
            "resource_group": "clusterfab-c-prod",
            "port": 9400,
        }
    ]
    assert found["relabel_configs"][:3] == [
        {"source_labels": ["__meta_azure_machine_tag_clusterfab_blueprint"], "regex": "c", "action": "keep"},
        {"source_labels": ["__meta_azure_machine_tag_clusterfab_stack"], "regex": "prod", "action": "keep"},
        {
            "source_labels": ["__meta_azure_machine_tag_clusterfab_node_group"],
            "regex": ".+",
            "action": "keep",
        },
    ]


def test_tag_rules_are_azures() -> None:
    azure = profile("azure")
    assert [p.message for p in azure.label_problems("a/b", "x")] == [
        "tag name 'a/b' has characters Azure does not take in a tag name: /"
    ]
    assert [p.message for p in azure.label_problems("k" * 129, "v" * 257)] == [
        "tag name of 129 characters",
        "tag value is longer than 256 characters",
    ]


def test_the_health_store_uses_az_storage_blob_with_login(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls"
    fake = tmp_path / "az"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {log}\n'
        'case "$3" in\n'
        '  show) echo \'{"etag": "0x1", "at": "2026-11-29T10:00:00+00:00"}\' ;;\n'
        '  download) for a in "$@"; do\n'
        '    if [ "$prev" = --file ]; then printf body > "$a"; fi; prev=$a; done ;;\n'
        "esac\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    store = AzureBlobHealthStore("acct/bundles")
    store.put("health/a.json", b"{}")
    got = store.get("health/a.json")
    assert got is not None
    assert (got.body, got.written_at.isoformat(), got.location) == (
        b"body",
        "2026-11-29T10:00:00+00:00",
        "https://acct.blob.core.windows.net/bundles/health/a.json",
    )
    calls = log.read_text().splitlines()
    assert [c.split()[:3] for c in calls] == [
        ["storage", "blob", "upload"],
        ["storage", "blob", "show"],
        ["storage", "blob", "download"],
    ]
    assert all(
        "--auth-mode login --account-name acct --container-name bundles --name health/a.json" in c
        for c in calls
    )


def test_mocks_answer_what_the_realizer_reads() -> None:
    outputs = profile("azure").plan_mocks.outputs
    assert (
        outputs["azure-native:storagecache:AmlFilesystem"]("t", "fs")["clientInfo"]["mgsAddress"]
        == "192.0.2.10"
    )
    assert outputs["azure-native:storage:StorageAccount"]("t", "acct")["primaryEndpoints"] == {
        "blob": "https://acct.blob.core.windows.net/"
    }
    assert outputs["azure-native:network:PublicIPAddress"]("t", "nat")["ipAddress"] == "203.0.113.10"


def test_the_split_warning_counts_an_elastic_groups_units(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BP225 names the scale sets the realizer makes: the always-up 50 apart from the elastic 200."""
    monkeypatch.setenv("CLUSTERFAB_TODAY", "2026-11-29")
    monkeypatch.setenv("COLUMNS", "200")
    blueprint = tmp_path / "elastic.yaml"
    blueprint.write_text(
        "version: 1\nname: hpc\ncloud: azure\nregion: southcentralus\nzone: '1'\n"
        "network: {cidr: 10.20.0.0/16}\n"
        f"node_groups:\n  - name: h100\n    machine_type: {H100}\n    autoscaling: {{min: 50, max: 250}}\n"
        "scheduler: {kind: slurm}\n"
        "teams:\n  - {name: research, max_gpus: 64, users: [alice]}\n"
    )
    code, out = _cli("validate", str(blueprint))
    assert code == 0, out
    assert (
        f"250 {H100} VMs are more than one InfiniBand fabric holds (100): the group becomes 3 scale sets "
        "(50, 100 and 100 VMs), and InfiniBand does not span scale sets"
    ) in out
