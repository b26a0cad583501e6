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


def test_ansible_core_comes_from_the_checked_bundle_by_hash() -> None:
    script = user_data(plan_file(AWS_EXAMPLES[0], "dev"), "llm-pretrain-trainers-lt")
    digest_check = script.index("sha256sum --check --status")
    install = script.index("--require-hashes --only-binary :all:")
    assert digest_check < install  # the requirements are trusted because the bundle was checked first
    assert '-r "$BUNDLE_DIR/requirements/ansible-core.txt"' in script
    assert "ansible-core==$ANSIBLE_CORE" not in script  # no unhashed install left
