"""The plans the API-model test checks: every example in every environment, plus the component variants
the examples do not reach (spot, flex-start, reservations, autoscaling, NVL72, TCPX, budgets, customer-managed
keys, elastic Slurm node groups on GCP, managed Slurm accounting on AWS, two Managed Lustre subnets, a
blob import and managed Slurm accounting on Azure).

The variant blueprints are the component tests' own, so the session's plan cache serves both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clusterfab.plan.project import Plan
from tests.components.harness import GCP_HEAD, GCP_PROJECT, aws_plan, gcp_plan, plan_configured, plan_file
from tests.components.test_aws_slurm_accounting import KEYED, managed
from tests.components.test_azure_lustre_subnets import ARCHIVE, DATA, IMPORTED, lustre_plan
from tests.components.test_azure_slurm_accounting import managed as azure_managed
from tests.components.test_customer_keys import aws_keyed, gcp_keyed
from tests.components.test_gcp_names import long_plans
from tests.components.test_gcp_node_group import group
from tests.components.test_gcp_slurm import ELASTIC
from tests.components.test_gcp_slurm_accounting import managed as gcp_managed
from tests.components.test_gcp_tpu_storage import root_squashed
from tests.components.test_gke import api_ranges, flex_start
from tests.conftest import EXAMPLES

ENVIRONMENTS = (None, "dev", "prod")


# The component tests' own group builder, so reserved-only machines get the same reservation here.
_group = group


def _gcp_budget() -> Plan:
    text = (
        GCP_HEAD.format(name="bud-cluster", zone="us-central1-b")
        + GCP_PROJECT
        + "tpu_slices:\n  - name: s\n    generation: v6e\n    topology: 4x4\n"
        + "budget: {max_hourly_usd: 100, alert_emails: [a@example.com, ops@example.org]}\n"
    )
    return plan_configured(text, (("clusterfab:billingAccount", "000000-AAAAAA-BBBBBB"),))


def _aws_cost_tags() -> Plan:
    """An example whose stack activates the cost allocation tags its budget counts by."""
    text = next(p for p in EXAMPLES if p.stem == "aws-p5-efa-fsx").read_text()
    return plan_configured(text, (("clusterfab:activateCostTags", "true"),), env="prod")


VARIANTS: dict[str, Callable[[], Plan]] = {
    "aws-spot": lambda: aws_plan(_group("p5.48xlarge", "    capacity: {kind: spot}\n"), name="spot"),
    "aws-odcr": lambda: aws_plan(
        _group("p5.48xlarge", "    capacity: {kind: reservation, reservation: cr-0123456789abcdef0}\n"),
        name="odcr",
    ),
    "aws-autoscaled": lambda: aws_plan(
        _group("p5.48xlarge", size="autoscaling: {min: 2, max: 12}"), name="auto"
    ),
    "aws-no-fabric": lambda: aws_plan(_group("p5.48xlarge", "    fabric: none\n"), name="nofab"),
    "gcp-spot": lambda: gcp_plan(_group("a3-megagpu-8g", "    capacity: {kind: spot}\n"), name="spot"),
    "gcp-flex-start": lambda: gcp_plan(
        _group("a3-ultragpu-8g", "    capacity: {kind: flex_start, max_run_duration_hours: 36}\n"),
        name="flex",
    ),
    "gcp-autoscaled": lambda: gcp_plan(
        _group("a3-megagpu-8g", size="autoscaling: {min: 2, max: 12}"), name="auto"
    ),
    "gcp-a3-high-tcpx": lambda: gcp_plan(_group("a3-highgpu-8g"), name="nic"),
    "gcp-a4-block": lambda: gcp_plan(
        _group("a4-highgpu-8g", "    placement_max_distance: 2\n", size="count: 150"), name="d2"
    ),
    "gcp-a4x-nvl72": lambda: gcp_plan(_group("a4x-highgpu-4g", size="count: 18"), name="nvl"),
    "gcp-budget": _gcp_budget,
    "aws-cost-tags": _aws_cost_tags,
    "gcp-slurm-elastic": lambda: gcp_plan(ELASTIC, name="gse", env="prod"),
    "aws-customer-keys": aws_keyed,
    "aws-slurm-managed-accounting": managed,
    "aws-slurm-managed-accounting-keyed": lambda: managed(body=KEYED),
    "gcp-customer-keys": gcp_keyed,
    "gcp-slurm-managed-accounting": gcp_managed,
    "gcp-longest-names": lambda: long_plans()[0],
    "gcp-longest-names-roce": lambda: long_plans()[1],
    "gcp-filestore-root-squash": root_squashed,
    "gcp-gke-flex-start": flex_start,
    "gcp-gke-api-ranges": api_ranges,
    "azure-two-lustre-subnets": lambda: lustre_plan(DATA, ARCHIVE),
    "azure-lustre-blob-import": lambda: lustre_plan(IMPORTED),
    "azure-slurm-managed-accounting": azure_managed,
}


@dataclass(frozen=True)
class PlanCase:
    id: str
    load: Callable[[], Plan]


def _example(path_index: int, env: str | None) -> Callable[[], Plan]:
    return lambda: plan_file(EXAMPLES[path_index], env)


CASES = [
    PlanCase(f"{path.stem}.{env or 'base'}", _example(i, env))
    for i, path in enumerate(EXAMPLES)
    for env in ENVIRONMENTS
] + [PlanCase(name, load) for name, load in VARIANTS.items()]
