"""Mutations of production code that the tests must catch: each names a file, one exact replacement in it
and the tests that must fail with it (scripts/mutation_check.py applies them to a copy of the tree)."""

from __future__ import annotations

from tests.mutations import Mutation, replace_once

CACHE = "tests/unit/test_catalog_cache.py::"
EXPORTER = "tests/monitoring/test_slurm_exporter_http.py::"
HEALTH = "tests/unit/test_slurm_health_root_paths.py::"

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "cache-folder-unchecked",
        "clusterfab/catalog/query.py",
        replace_once("if not _own(os.fstat(folder)):", "if False:"),
        (
            f"{CACHE}test_a_cache_in_a_folder_others_may_write_is_not_unpickled[group]",
            f"{CACHE}test_a_cache_in_a_folder_others_may_write_is_not_unpickled[world]",
            f"{CACHE}test_a_cache_in_a_folder_others_may_write_is_not_unpickled[everyone]",
            f"{CACHE}test_a_cache_in_another_users_folder_is_not_unpickled",
        ),
        "the cache is unpickled from a folder others may write",
    ),
    Mutation(
        "cache-permissions-unchecked",
        "clusterfab/catalog/query.py",
        replace_once(" and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)", ""),
        (
            f"{CACHE}test_a_cache_file_others_may_write_is_not_unpickled[group-writable]",
            f"{CACHE}test_a_cache_file_others_may_write_is_not_unpickled[world-writable]",
            f"{CACHE}test_a_cache_file_others_may_write_is_not_unpickled[everyone-writable]",
            f"{CACHE}test_a_cache_in_a_folder_others_may_write_is_not_unpickled[group]",
            f"{CACHE}test_load_catalog_parses_the_data_files_instead_of_a_refused_cache",
        ),
        "a cache file anyone may write is unpickled",
    ),
    Mutation(
        "cache-owner-unchecked",
        "clusterfab/catalog/query.py",
        replace_once("info.st_uid == os.getuid() and ", ""),
        (
            f"{CACHE}test_a_cache_file_of_another_user_is_not_unpickled",
            f"{CACHE}test_a_cache_in_another_users_folder_is_not_unpickled",
        ),
        "another user's cache file is unpickled",
    ),
    Mutation(
        "cache-follows-links",
        "clusterfab/catalog/query.py",
        replace_once("os.O_RDONLY | os.O_NOFOLLOW", "os.O_RDONLY"),
        (f"{CACHE}test_a_cache_that_is_a_link_is_not_followed",),
        "a link in the cache folder is followed to a file whose content someone else chose",
    ),
    Mutation(
        "exporter-content-type",
        "clusterfab/scheduler/slurm/exporter.py",
        replace_once('"Content-Type", "text/plain; version=0.0.4"', '"Content-Type", "text/plain"'),
        (f"{EXPORTER}test_metrics_are_served_in_the_documented_text_format",),
        "/metrics without the text format's version (Prometheus 3 falls back or refuses)",
    ),
    Mutation(
        "exporter-serves-any-path",
        "clusterfab/scheduler/slurm/exporter.py",
        replace_once('if self.path != "/metrics":', 'if not self.path.startswith("/metrics"):'),
        (
            f"{EXPORTER}test_anything_but_metrics_is_not_found[/metrics/]",
            f"{EXPORTER}test_anything_but_metrics_is_not_found[/metricsx]",
        ),
        "paths other than /metrics are answered with the scrape",
    ),
    Mutation(
        "exporter-bad-exposition",
        "clusterfab/scheduler/slurm/exporter.py",
        replace_once(
            'lines.append(f"{name}{{{rendered}}} {number}"', 'lines.append(f"{name}{{{rendered}}}: {number}"'
        ),
        (
            f"{EXPORTER}test_metrics_are_served_in_the_documented_text_format",
            f"{EXPORTER}test_promtool_parses_the_scrape[bookworm]",
            f"{EXPORTER}test_promtool_parses_the_scrape[trixie]",
        ),
        "labelled samples Prometheus cannot parse",
    ),
    Mutation(
        "deep-check-keeps-its-reservation",
        "clusterfab/scheduler/slurm/healthcheck.py",
        replace_once(
            "            finally:\n                self.release()\n",
            "            finally:\n                pass\n",
        ),
        (
            f"{HEALTH}test_the_deep_check_reserves_checks_releases_and_drains_exactly_the_failing_nodes",
            f"{HEALTH}test_a_healthy_cluster_is_released_and_nothing_is_drained",
            f"{HEALTH}test_a_measurement_that_is_not_one_world_still_releases_and_blames_no_node",
        ),
        "the maintenance reservation is left on the nodes after the check",
    ),
    Mutation(
        "deep-check-reservation-for-anyone",
        "clusterfab/scheduler/slurm/healthcheck.py",
        replace_once('"Users=root",', '"Users=slurm",'),
        (f"{HEALTH}test_the_deep_check_reserves_checks_releases_and_drains_exactly_the_failing_nodes",),
        "the reservation admits another user's jobs",
    ),
    Mutation(
        "node-check-state-in-tmp",
        "playbooks/roles/slurm_node/files/clusterfab_slurm_health.py",
        replace_once('"/var/lib/clusterfab-slurm-health"', '"/tmp/clusterfab-slurm-health"'),
        (f"{HEALTH}test_the_node_checks_root_paths_are_the_documented_ones",),
        "root's XID state in a world-writable folder",
    ),
    Mutation(
        "gcp-name-prefix-suffix",
        "components/_naming.py",
        replace_once("NAME_PREFIX_SUFFIX = 9\n", "NAME_PREFIX_SUFFIX = 10\n"),
        (
            "tests/components/test_gcp_names.py::"
            "test_a_long_named_template_takes_a_prefix_so_its_next_generation_gets_a_name_of_its_own",
        ),
        "instance template prefixes one shorter than the provider's 54 (was checked against the constant)",
    ),
    Mutation(
        "operation-waits",
        "clusterfab/scheduler/slurm/nodes/gcp.py",
        replace_once("OPERATION_WAITS = 5\n", "OPERATION_WAITS = 50\n"),
        ("tests/unit/test_slurm_gce_elastic.py::test_a_bulk_insert_that_does_not_finish_is_given_up",),
        "a bulkInsert waited for 100 minutes, past ResumeTimeout (was counted against the constant)",
    ),
    Mutation(
        "name-tag-join",
        "clusterfab/core/naming.py",
        replace_once('hashlib.sha256("\\0".join(parts)', 'hashlib.sha256("-".join(parts)'),
        (
            "tests/components/test_gcp_node_group.py::test_fixed_group_is_a_zonal_mig_of_count_on_the_unique_template",
        ),
        "every node group's GCP names change (and `ml`+`prod-h100` tags like `ml-prod`+`h100`)",
    ),
    Mutation(
        "gpu-node-vars",
        "clusterfab/provision/extravars.py",
        replace_once('"gdrcopy_enabled": dkms_source,', '"gdrcopy_enabled": False,'),
        (
            "tests/components/test_push.py::"
            "test_configure_runs_each_node_group_then_the_health_check_and_records_it",
        ),
        "push configures EFA nodes without GDRCopy (was compared with gpu_node_vars itself)",
    ),
    Mutation(
        "boot-digest-statement",
        "components/aws/_boot.py",
        replace_once('"Action": "ec2:DescribeTags",', '"Action": "ec2:Describe*",'),
        (
            "tests/components/test_aws_slurm.py::"
            "test_the_controller_and_login_nodes_follow_the_stack_without_a_stop_and_start",
            "tests/monitoring/test_components.py::"
            "test_the_example_gets_a_monitoring_node_with_the_catalogs_machine_and_its_outputs",
        ),
        "a following host's role may describe everything (was compared with the constant itself)",
    ),
    Mutation(
        "launch-template-renamed",
        "components/aws/node_group.py",
        replace_once('child(name, "lt"),', 'child(name, "template"),'),
        ("tests/components/test_boot_scripts.py::test_user_data_golden[aws-p5-efa-fsx]",),
        "the example's launch template is not the one the boot script test expects",
    ),
    Mutation(
        "replacement-gate-reason",
        "clusterfab/deploy/gates.py",
        replace_once("deletes or replaces no stateful resource", "has nothing to check"),
        (
            "tests/deploy/test_gates.py::test_replacement_gate_passes_updates_and_stateless_replacements",
            "tests/deploy/test_gates.py::test_all_gates_pass",
        ),
        "a passing gate says nothing about what it checked (the tests looked at `passed` only)",
    ),
)
