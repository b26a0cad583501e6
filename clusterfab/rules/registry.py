"""The registry of rules that `validate` runs, in order."""

from __future__ import annotations

from clusterfab.rules import (
    azure,
    budget,
    capacity,
    compute,
    encryption,
    monitoring,
    monitoring_azure,
    names,
    scheduler,
    software,
    storage,
    structure,
    tpu,
)
from clusterfab.rules.context import Check

CHECKS: tuple[Check, ...] = (
    structure.check_unique_names,
    structure.check_attach,
    structure.check_mount_points,
    structure.check_local_scratch,
    structure.check_export,
    structure.check_group_sizes,
    structure.check_cloud_fields,
    structure.check_labels,
    structure.check_network,
    structure.check_not_empty,
    structure.check_environment_protection,
    capacity.check_capacity_fields,
    capacity.check_capacity_offered,
    capacity.check_capacity_end,
    capacity.check_capacity_end_time,
    capacity.check_capacity_block_resize,
    compute.check_region_and_zone,
    compute.check_machine_types,
    compute.check_offered_in_zone,
    compute.check_fabric,
    compute.check_placement,
    compute.check_fabric_addresses,
    azure.check_fabric_units,
    azure.check_fixed_scale_sets,
    azure.check_rdma_range,
    azure.check_lustre_subnets,
    tpu.check_tpu_topology,
    tpu.check_tpu_zone,
    storage.check_storage,
    storage.check_storage_protection,
    encryption.check_kms_keys,
    software.check_software,
    monitoring.check_monitoring,
    monitoring.check_monitoring_machine,
    monitoring.check_smtp_secret,
    monitoring_azure.check_azure_discovery_subscription,
    monitoring_azure.check_azure_smtp_secret,
    scheduler.check_scheduler,
    scheduler.check_teams,
    names.check_reserved_names,
    budget.check_budget,
    budget.check_cloud_budget,
)
"""Every rule, in the order they run (findings are sorted by position afterwards)."""

CHECKS_BUT_BUDGET: tuple[Check, ...] = tuple(check for check in CHECKS if check is not budget.check_budget)
"""The rules of a command that prices the blueprint (cost, plan with the budget off, the stack program
with `enforceBudget: false`): the budget verdict is part of its result, not a finding that stops it."""
