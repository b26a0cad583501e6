"""Boot scripts nodes run (AWS user-data, GCP startup-script) as rendered for the examples: golden files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.components.harness import plan_file, stable, startup_script, user_data
from tests.conftest import EXAMPLES, assert_golden

AWS_EXAMPLES = [p for p in EXAMPLES if p.name.startswith("aws-")]
GCP_EXAMPLES = [p for p in EXAMPLES if p.name.startswith("gcp-")]
GCP_BOOTED = ("gcp:compute/instanceTemplate:InstanceTemplate", "gcp:tpu/v2Vm:V2Vm")


@pytest.mark.parametrize("path", AWS_EXAMPLES, ids=[p.stem for p in AWS_EXAMPLES])
def test_user_data_golden(path: Path) -> None:
    plan = plan_file(path, "dev")
    for resource in plan.resources:
        if resource.type == "aws:ec2/launchTemplate:LaunchTemplate":
            assert_golden(f"boot/{path.stem}.dev.{resource.name}.sh", stable(user_data(plan, resource.name)))


@pytest.mark.parametrize("path", GCP_EXAMPLES, ids=[p.stem for p in GCP_EXAMPLES])
def test_startup_script_golden(path: Path) -> None:
    plan = plan_file(path, "dev")
    booted = [r for r in plan.resources if r.type in GCP_BOOTED]
    assert booted, "every GCP example has GPU nodes or TPU VMs"
    for resource in booted:
        assert_golden(
            f"boot/{path.stem}.dev.{resource.name}.sh",
            stable(startup_script(plan, resource.type, resource.name)),
        )
