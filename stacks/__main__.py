"""The clusterfab Pulumi program: the stack's blueprint in, a cluster out.

Stack config (stacks/Pulumi.<stack>.yaml):
  clusterfab:blueprint    path of the blueprint, relative to the project root (required)
  clusterfab:environment  environment overlay to apply; default the stack name, "" for the base blueprint
  clusterfab:enforceBudget  default true: an over-budget blueprint fails the program
  clusterfab:billingAccount  GCP: the billing account the cluster's budget is created under
  clusterfab:activateCostTags  AWS, default false: activate the cost allocation tags the budget counts by
                          (once AWS lists them, up to 24 h after the first deployment)
  gcp:project             GCP: the project, when the blueprint names none
  azure-native:subscriptionId  Azure: the subscription (Prometheus discovers the nodes in it); each cloud
                          names the provider settings it reads (CloudProfile.stack_settings)
  aws:region, gcp:region  optional; when set they must equal the blueprint's region (the program builds
                          its providers from the blueprint, so a stack cannot deploy elsewhere)
An invalid blueprint fails the program with the same findings `clusterfab validate` prints.
"""

import itertools
from collections.abc import Iterable
from pathlib import Path

import pulumi

# Pulumi runs this directory as a script with it first on sys.path: compose.py sits next to it.
from compose import compose

from clusterfab.clouds import profiles
from clusterfab.core.errors import ClusterfabError
from clusterfab.stackinput import (
    ACTIVATE_COST_TAGS_KEY,
    BILLING_ACCOUNT_KEY,
    BLUEPRINT_KEY,
    CONFIG_NAMESPACE,
    ENFORCE_BUDGET_KEY,
    ENVIRONMENT_KEY,
    StackSettings,
    load_stack_input,
    resolve_environment,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def configured(settings: Iterable[Iterable[str]]) -> dict[str, str]:
    """Those of the providers' `namespace:key` settings that the stack sets, with their values."""
    found = {}
    for setting in itertools.chain.from_iterable(settings):
        namespace, _, name = setting.partition(":")
        value = pulumi.Config(namespace).get(name)
        if value:
            found[setting] = value
    return found


config = pulumi.Config(CONFIG_NAMESPACE)
stack = pulumi.get_stack()
try:
    stack_input = load_stack_input(
        config.require(BLUEPRINT_KEY),
        resolve_environment(config.get(ENVIRONMENT_KEY), stack),
        PROJECT_ROOT,
        enforce_budget=config.get_bool(ENFORCE_BUDGET_KEY) is not False,
        settings=StackSettings(
            gcp_project=pulumi.Config("gcp").get("project"),
            billing_account=config.get(BILLING_ACCOUNT_KEY),
            activate_cost_tags=config.get_bool(ACTIVATE_COST_TAGS_KEY) is True,
            provider_settings=configured(cloud.stack_settings for cloud in profiles()),
            # The region settings (`aws:region`, `azure-native:location`, ...): the stack input refuses
            # one that disagrees with the blueprint.
            provider_regions=configured((cloud.provider_region_setting,) for cloud in profiles()),
        ),
        stack=stack,
    )
except ClusterfabError as exc:
    raise pulumi.RunError(str(exc)) from None
for finding in stack_input.warnings:
    pulumi.log.warn(finding.log_line)
for key, value in compose(stack_input, stack=stack).items():
    pulumi.export(key, value)
