"""Boot scripts nodes run (AWS user-data, GCP startup-script, Azure user and custom data) as rendered for the
examples: golden files."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.components.harness import one, plan_file, stable, startup_script, user_data
from tests.conftest import GOLDEN, PLANNED_EXAMPLES, assert_golden

AWS_EXAMPLES = [p for p in PLANNED_EXAMPLES if p.name.startswith("aws-")]
GCP_EXAMPLES = [p for p in PLANNED_EXAMPLES if p.name.startswith("gcp-")]
AZURE_EXAMPLES = [p for p in PLANNED_EXAMPLES if p.name.startswith("azure-")]
SCALE_SET = "azure-native:compute:VirtualMachineScaleSet"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE_TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
BOOT_OBJECT = "gcp:storage/bucketObject:BucketObject"
BOOTED: dict[str, set[tuple[str, str]]] = {
    "aws-eks-p5": set(),
    "aws-p5-efa-fsx": {(LAUNCH_TEMPLATE, "llm-pretrain-trainers-lt")},
    "aws-p5-monitored": {(LAUNCH_TEMPLATE, "llm-monitored-trainers-lt")},
    "aws-p5-slurm": {(LAUNCH_TEMPLATE, "llm-slurm-h100-lt")},
    "aws-p6-b200-capacity-block": {(LAUNCH_TEMPLATE, "b200-finetune-gpus-lt")},
    "azure-ndv5-ib": {(SCALE_SET, "ndv5-train-trainers-vmss")},
    "azure-ndv5-ib-slurm": {(SCALE_SET, "ndv5-slurm-h100-vmss")},
    "gcp-a3mega-tcpxo-filestore": {(INSTANCE_TEMPLATE, "mega-train-trainers-template")},
    "gcp-a3ultra-roce-lustre": {(INSTANCE_TEMPLATE, "ultra-train-trainers-template")},
    # GKE's node pools boot GKE's own node images: no startup script of clusterfab's.
    "gcp-gke-a3mega": set(),
    "gcp-tpu-v5p-multislice": {(BOOT_OBJECT, "v5p-pretrain-pretrain-boot")},
    "gcp-tpu-v6e-spot": {(BOOT_OBJECT, "trillium-spot-trillium-boot")},
}
"""What each example's dev plan boots a node group or TPU slice from: its launch templates (AWS user
data), instance templates (GCP startup-script), the TPU slices' boot script objects in the bucket
(their startup-script only fetches it) and Azure scale sets (user data, with the custom data that runs
it); one node group or slice each. EKS managed node groups boot the EKS AMI with the user data EKS
writes: their launch templates carry none."""


def _booted(path: Path) -> set[tuple[str, str]]:
    types = (
        (LAUNCH_TEMPLATE,) if path.name.startswith("aws-") else (INSTANCE_TEMPLATE, BOOT_OBJECT, SCALE_SET)
    )
    resources = plan_file(path, "dev").resources
    return {
        (r.type, r.name)
        for r in resources
        if r.type in types
        and r.name.endswith(("-lt", "-template", "-boot", "-vmss"))
        and (r.type != LAUNCH_TEMPLATE or "userData" in r.inputs)
    }


def test_every_example_is_listed_and_every_golden_boot_script_is_one_of_them() -> None:
    assert sorted(BOOTED) == sorted(p.stem for p in PLANNED_EXAMPLES)
    goldens = sorted(p.name for p in (GOLDEN / "boot").iterdir())
    made = [f"{stem}.dev.{name}.sh" for stem, made in BOOTED.items() for _, name in made]
    launchers = [f"{p.stem}.dev.{name}.custom-data.sh" for p in AZURE_EXAMPLES for _, name in BOOTED[p.stem]]
    assert goldens == sorted(made + launchers)


@pytest.mark.parametrize("path", AWS_EXAMPLES, ids=[p.stem for p in AWS_EXAMPLES])
def test_user_data_golden(path: Path) -> None:
    plan = plan_file(path, "dev")
    assert _booted(path) == BOOTED[path.stem]  # a plan without its launch template fails here
    for _, name in sorted(BOOTED[path.stem]):
        assert_golden(f"boot/{path.stem}.dev.{name}.sh", stable(user_data(plan, name)))


@pytest.mark.parametrize("path", GCP_EXAMPLES, ids=[p.stem for p in GCP_EXAMPLES])
def test_startup_script_golden(path: Path) -> None:
    plan = plan_file(path, "dev")
    assert _booted(path) == BOOTED[path.stem]  # a plan without its template or TPU VM fails here
    for type_, name in sorted(BOOTED[path.stem]):
        assert_golden(f"boot/{path.stem}.dev.{name}.sh", stable(startup_script(plan, type_, name)))


@pytest.mark.parametrize("path", AZURE_EXAMPLES, ids=[p.stem for p in AZURE_EXAMPLES])
def test_scale_set_boot_golden(path: Path) -> None:
    """A scale set's user data is the boot script; its custom data the launcher that runs it at every boot."""
    plan = plan_file(path, "dev")
    assert _booted(path) == BOOTED[path.stem]
    for type_, name in sorted(BOOTED[path.stem]):
        profile = one(plan, type_, name).inputs["virtualMachineProfile"]
        scripts = {
            "": base64.b64decode(profile["userData"]).decode(),
            ".custom-data": base64.b64decode(profile["osProfile"]["customData"]).decode(),
        }
        for suffix, script in scripts.items():
            assert_golden(f"boot/{path.stem}.dev.{name}{suffix}.sh", stable(script))


def test_ansible_core_comes_from_the_checked_bundle_by_hash() -> None:
    [example] = [p for p in AWS_EXAMPLES if p.stem == "aws-p5-efa-fsx"]
    script = user_data(plan_file(example, "dev"), "llm-pretrain-trainers-lt")
    digest_check = script.index("sha256sum --check --status")
    install = script.index("--require-hashes --only-binary :all:")
    assert digest_check < install  # the requirements are trusted because the bundle was checked first
    assert '-r "$BUNDLE_DIR/requirements/ansible-core.txt"' in script
    assert "ansible-core==$ANSIBLE_CORE" not in script  # no unhashed install left
