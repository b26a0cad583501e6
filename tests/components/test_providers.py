"""One explicit provider per cluster, built from the blueprint: the stack config cannot move it."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterfab.plan.engine import PlanError
from clusterfab.stackinput import StackConfigError, StackSettings, load_stack_input
from tests.components.harness import plan_configured, plan_file
from tests.conftest import PLANNED_EXAMPLES, REPO


@pytest.mark.parametrize("path", PLANNED_EXAMPLES, ids=[p.stem for p in PLANNED_EXAMPLES])
def test_every_resource_is_created_by_the_blueprints_provider(path: Path) -> None:
    plan = plan_file(path, "dev")
    providers = [r for r in plan.resources if r.type.startswith("pulumi:providers:")]
    # A Kubernetes cluster's own objects are applied through a provider of the cluster the plan creates.
    in_cluster = [r for r in providers if r.type == "pulumi:providers:kubernetes"]
    (provider,) = [r for r in providers if r not in in_cluster]
    cloud = provider.type.rsplit(":", 1)[1]
    assert provider.type == f"pulumi:providers:{cloud}"
    # azure-native names the region `location`.
    assert (
        provider.inputs.get("region", provider.inputs.get("location")) == plan.outputs["blueprint"]["region"]
    )
    if cloud == "gcp":
        assert provider.inputs["project"] == plan.outputs["blueprint"]["project"]
    # The health signing key (and Azure's administrator key) are no cloud's: their dynamic providers keep
    # them in the stack's state.
    keys = [r for r in plan.resources if r.type.startswith("pulumi-python:dynamic/clusterfab:")]
    assert sorted(r.name for r in keys) == (
        ["health-signing-key", f"{plan.outputs['blueprint']['name']}-admin-key"]
        if cloud == "azure-native"
        else ["health-signing-key"]
    )
    objects = [r for r in plan.resources if r.type.startswith("kubernetes:")]
    assert {r.provider for r in objects} <= {f"{p.urn}::{p.name}-id" for p in in_cluster}
    custom = [
        r for r in plan.resources if r.custom and r not in providers and r not in keys and r not in objects
    ]
    assert custom
    assert {r.provider for r in custom} == {f"{provider.urn}::{provider.name}-id"}


def test_a_stack_whose_aws_region_disagrees_with_the_blueprint_is_refused() -> None:
    text = (REPO / "blueprints/examples/aws-p5-efa-fsx.yaml").read_text()
    with pytest.raises(
        PlanError,
        match=r"the stack config aws:region is us-west-2 but .* says region us-east-1\. "
        r"The program builds its cloud provider from the blueprint: remove the stack setting",
    ):
        plan_configured(text, (("aws:region", "us-west-2"),), "dev")
    agreeing = plan_configured(text, (("aws:region", "us-east-1"),), "dev")
    assert agreeing.outputs["blueprint"]["region"] == "us-east-1"


def test_a_stack_whose_gcp_project_disagrees_is_refused_without_the_program() -> None:
    settings = StackSettings(gcp_project="someone-else", provider_regions={"gcp:region": "us-central1"})
    with pytest.raises(StackConfigError) as info:
        load_stack_input(
            "blueprints/examples/gcp-a3mega-tcpxo-filestore.yaml", "dev", REPO, settings=settings
        )
    assert "gcp:project is someone-else but" in str(info.value)
    assert info.value.exit_code == 2


def test_a_stack_whose_azure_location_disagrees_with_the_blueprint_is_refused() -> None:
    """azure-native names its region `location` (stack setting azure-native:location)."""
    text = (REPO / "blueprints/examples/azure-ndv5-ib.yaml").read_text()
    with pytest.raises(
        PlanError,
        match=r"the stack config azure-native:location is westus3 but .* says region southcentralus\. ",
    ):
        plan_configured(text, (("azure-native:location", "westus3"),), "dev")
    agreeing = plan_configured(text, (("azure-native:location", "southcentralus"),), "dev")
    assert agreeing.outputs["blueprint"]["region"] == "southcentralus"
