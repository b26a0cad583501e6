"""The proof that a cloud and a scheduler are new files (architecture §11.1): the toy cloud and the toy
scheduler, defined only in this package and registered at run time, go through `validate`, `cost`,
`plan` (the mock engine, running the project's own Pulumi program) and `render` like the built-in ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterfab import cli
from clusterfab.catalog import load_catalog
from clusterfab.core import plugins
from clusterfab.outputs import read_outputs
from clusterfab.plan.project import plan_blueprint
from tests.components.harness import PROJECT
from tests.plugins import toy_cloud, toy_scheduler

REALIZER = "tests.plugins.toy_realizer"
"""Imported by the stack program only, with its directory on the path (the realizer imports `cluster`)."""

BLUEPRINT = """\
version: 1
name: toy-cluster
cloud: toy
region: toy-east
zone: toy-east-1
labels:
  team: research
node_groups:
  - name: trainers
    machine_type: toy.gpu8
    count: 2
scheduler:
  kind: toy
  controller:
    machine_type: toy.cpu4
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy cloud and scheduler registered; the working directory a folder with toy.yaml in it."""
    plugins.register_cloud("toy", toy_cloud.__name__, REALIZER, catalog=toy_cloud.__name__)
    plugins.register_scheduler("toy", toy_scheduler.__name__)
    monkeypatch.setenv("CLUSTERFAB_TODAY", "2026-11-22")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "toy.yaml").write_text(BLUEPRINT)
    yield tmp_path
    plugins.unregister("toy")


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.app, list(args))
    return result.exit_code, result.output


def test_validate_takes_the_toy_blueprint(toy: Path) -> None:
    assert _cli("validate", "toy.yaml") == (
        0,
        "toy.yaml: valid (0 errors, 0 warnings, 0 notes; checked: base)\n",
    )


def test_validate_reports_what_the_toy_profile_refuses(toy: Path) -> None:
    bad = BLUEPRINT.replace("zone: toy-east-1", "zone: toy-east-2").replace(
        "team: research", "Team: research"
    )
    (toy / "bad.yaml").write_text(bad)
    assert _cli("validate", "bad.yaml") == (
        1,
        "bad.yaml:7:3: error[BP114] labels.Team: label key 'Team' is not a toy label key\n"
        "    7 |   Team: research\n"
        "      |   ^^^^\n"
        "   hint: lowercase letters, digits and -, starting with a letter, at most 32 characters\n"
        "\n"
        "bad.yaml:10:19: error[BP202] node_groups[0].machine_type: "
        "toy.gpu8 is not offered in zone toy-east-2\n"
        "   10 |     machine_type: toy.gpu8\n"
        "      |                   ^^^^^^^^\n"
        "   hint: zones of toy-east that offer it: toy-east-1\n"
        "\n"
        "bad.yaml: invalid (2 errors, 0 warnings, 0 notes; checked: base)\n",
    )


def test_cost_prices_the_nodes_and_the_controller_from_the_toy_catalog(toy: Path) -> None:
    code, output = _cli("cost", "toy.yaml", "--format", "json")
    assert code == 0
    report = json.loads(output)
    items = [
        (
            i["name"],
            i["kind"],
            i["sku"],
            i["pricing_model"],
            i["quantity"],
            i["unit_price_usd"],
            i["monthly_usd"],
        )
        for i in report["items"]
    ]
    assert items == [
        ("trainers", "node_group", "toy.gpu8", "on_demand", 2, 20.0, 29200.0),
        ("toy-controller", "controller", "toy.cpu4", "on_demand", 1, 0.25, 182.5),
    ]
    assert (report["cloud"], report["hourly_usd"], report["monthly_usd"]) == ("toy", 40.25, 29382.5)
    assert {i["source"] for i in report["items"]} == {"toy-price-list"}


def test_plan_runs_the_toy_realizer_in_the_stack_program(toy: Path) -> None:
    plan = plan_blueprint(toy / "toy.yaml", env=None, project=PROJECT, display="toy.yaml")
    assert sorted((r.type, r.name) for r in plan.resources) == [
        ("pulumi-python:dynamic/clusterfab:HealthSigningKey", "health-signing-key"),
        ("toy:compute:NodePool", "toy-cluster-trainers"),
        ("toy:network:Network", "toy-cluster-network"),
        ("toy:scheduler:Controller", "toy-cluster-controller"),
        ("toy:storage:Bucket", "toy-cluster-bucket"),
    ]
    resources = {r.name: r for r in plan.resources}
    assert resources["toy-cluster-controller"].inputs == {
        "machineType": "toy.cpu4",
        "network": "toy-cluster-network-id",
        "privateIp": "10.0.0.10",
        "tags": {
            "clusterfab-blueprint": "toy-cluster",
            "clusterfab-component": "scheduler",
            "clusterfab-stack": "plan",
            "team": "research",
        },
    }
    pool = resources["toy-cluster-trainers"].inputs
    assert {k: v for k, v in pool.items() if k not in {"tags", "userData"}} == {
        "capacity": "on_demand",
        "image": "toy-os-1",
        "machineType": "toy.gpu8",
        "maxSize": 2,
        "minSize": 2,
        "network": "toy-cluster-network-id",
        "zone": "toy-east-1",
    }
    # The nodes boot with clusterfab's script, the toy cloud's parts in it (templates/*-toy.sh.j2).
    boot = pool["userData"].splitlines()
    assert boot[1] == "# clusterfab node bootstrap: cluster toy-cluster, stack plan, trainers (toy)."
    assert 'fetch_bundle() { toyctl bucket get "$BUCKET" "$BUNDLE_KEY" "$1"; }' in boot
    # What the program exports reads back as the toy's outputs, the toy scheduler's own field included.
    outputs = read_outputs(plan.outputs)
    assert (outputs.blueprint.cloud, outputs.bucket, outputs.network) == (
        "toy",
        "toy-cluster-bucket-id",
        {"network_id": "toy-cluster-network-id"},
    )
    assert outputs.node_groups["trainers"].group == "toy-cluster-trainers-id"
    assert outputs.node_selector == {"clusterfab-blueprint": "toy-cluster", "clusterfab-stack": "plan"}
    # read_outputs checked the scheduler's output against the toy's model (ToyOutput): here it is.
    assert plan.outputs["scheduler"] == {
        "kind": "toy",
        "controller": "toy-cluster-controller-id",
        "controller_address": "10.0.0.10",
        "login": [],
        "queue_url": "toyq://toy-cluster-controller.scheduler.toy.mock/queue",
    }


def test_render_writes_the_toy_schedulers_files(toy: Path) -> None:
    # `render toy` exists only because the toy is registered: the command comes from the registry.
    assert _cli("render", "toy", "toy.yaml", "--out", "out") == (0, "out/toy.conf\n")
    assert (toy / "out" / "toy.conf").read_text() == (
        "cluster=toy-cluster\ncontroller=toy.cpu4\npool trainers toy.gpu8 2-2\n"
    )
    code, help_text = _cli("render", "--help")
    assert code == 0
    assert "  toy         Write the toy scheduler's queue file." in help_text.splitlines()


def test_render_of_another_scheduler_says_the_blueprint_has_none(toy: Path) -> None:
    assert _cli("render", "slurm", "toy.yaml", "--out", "out") == (
        1,
        "toy.yaml: no Slurm scheduler (scheduler.kind is toy); nothing to render\n",
    )
    assert not (toy / "out").exists()


def test_the_toy_rows_leave_the_catalog_with_the_toy(toy: Path) -> None:
    assert {p.sku for p in load_catalog().prices if p.cloud == "toy"} == {"toy.gpu8", "toy.cpu4"}
    plugins.unregister("toy")
    assert not [p for p in load_catalog().prices if p.cloud == "toy"]


def test_kubernetes_on_a_cloud_without_a_managed_service_is_refused_at_the_kind(toy: Path) -> None:
    bad = BLUEPRINT.replace(
        "  kind: toy\n  controller:\n    machine_type: toy.cpu4\n", "  kind: kubernetes\n"
    )
    (toy / "kube.yaml").write_text(bad)
    assert _cli("validate", "kube.yaml") == (
        1,
        "kube.yaml:13:9: error[BP172] scheduler.kind: clusterfab has no managed Kubernetes service on toy\n"
        "   13 |   kind: kubernetes\n"
        "      |         ^^^^^^^^^^\n"
        "   hint: use cloud gcp (GKE) or aws (EKS), or scheduler kind slurm\n"
        "\n"
        "kube.yaml: invalid (1 error, 0 warnings, 0 notes; checked: base)\n",
    )


def test_an_elastic_slurm_group_on_a_cloud_whose_node_programs_create_no_nodes_is_refused(toy: Path) -> None:
    """BP232: the toy cloud has no node programs (clusterfab_slurm_nodes knows aws, gcp and azure), so no
    resume program could create an elastic node there."""
    bad = BLUEPRINT.replace(
        "  kind: toy\n  controller:\n    machine_type: toy.cpu4\n", "  kind: slurm\n"
    ).replace("    count: 2\n", "    autoscaling: {min: 0, max: 4}\n")
    (toy / "elastic.yaml").write_text(bad)
    code, out = _cli("validate", "elastic.yaml")
    assert code == 1
    assert (
        "elastic.yaml:11:18: error[BP232] node_groups[0].autoscaling: node group 'trainers' is elastic, but "
        "Slurm's node programs create no machines on toy: nothing would start a node a queued job is given\n"
    ) in out
    assert "   hint: use `count: 4` (static nodes), or an elastic group on aws or azure or gcp\n" in out


def test_managed_accounting_on_a_cloud_without_a_managed_database_is_refused(toy: Path) -> None:
    """BP233: the catalog records no managed database for the toy cloud (AWS, Azure and GCP each have
    theirs), so managed accounting is refused rather than booting a controller without its database."""
    bad = BLUEPRINT.replace(
        "  kind: toy\n  controller:\n    machine_type: toy.cpu4\n", "  kind: slurm\n  accounting: managed\n"
    )
    (toy / "managed.yaml").write_text(bad)
    code, out = _cli("validate", "managed.yaml")
    assert code == 1
    assert (
        "managed.yaml:14:15: error[BP233] scheduler.accounting: clusterfab builds no managed accounting "
        "database on toy yet: the catalog records none for it\n"
    ) in out
    # The hint, as the terminal wraps it at 120 columns.
    assert (
        "   hint: use accounting: embedded (MariaDB on the controller's state disk) on toy, or managed "
        "accounting on aws or azure\n         or gcp\n"
    ) in out


def test_slurm_on_a_cloud_without_slurm_hosts_is_refused_at_the_kind(toy: Path) -> None:
    """BP228: the catalog records no Slurm controller machine for the toy cloud, so Slurm is refused
    there instead of planning a cluster without its scheduler."""
    bad = BLUEPRINT.replace("  kind: toy\n  controller:\n    machine_type: toy.cpu4\n", "  kind: slurm\n")
    (toy / "slurm.yaml").write_text(bad)
    assert _cli("validate", "slurm.yaml") == (
        1,
        "slurm.yaml:13:9: error[BP228] scheduler.kind: clusterfab builds no Slurm hosts on toy yet: the "
        "catalog has no Slurm controller machine for it\n"
        "   13 |   kind: slurm\n"
        "      |         ^^^^^\n"
        "   hint: use scheduler kind none on toy, or Slurm on aws or azure or gcp\n"
        "\n"
        "slurm.yaml: invalid (1 error, 0 warnings, 0 notes; checked: base)\n",
    )
