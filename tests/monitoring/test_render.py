"""The rendered files: discovery by the cluster's tags, exactly; Alertmanager's routing; the counters file;
and the real promtool / amtool accepting every file (Debian bookworm and trixie builds)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from clusterfab.catalog import Catalog
from clusterfab.monitoring import MonitoringFiles, render_monitoring, write_files
from clusterfab.monitoring.counters import dcgm_counters
from clusterfab.spec import ClusterSpec
from tests.conftest import REPO
from tests.factories import TODAY
from tests.monitoring import tools
from tests.monitoring.conftest import STACK, spec_of

FIXTURES = REPO / "tests" / "fixtures" / "monitoring"
CONTRACT = {"prometheus.yml", "alertmanager.yml"}


def test_the_files_of_the_contract_and_grafana_provisioning(cluster_files: MonitoringFiles) -> None:
    assert set(cluster_files) == CONTRACT | {
        "rules/gpu.yml",
        "rules/availability.yml",
        "rules/storage.yml",
        "rules/cost.yml",
        "dashboards/cluster-overview.json",
        "dashboards/gpu-node.json",
        "dashboards/gpu-cost.json",
        "dashboards/fabric.json",
        "dashboards/storage.json",
        "grafana/datasources.yml",
        "grafana/dashboards.yml",
        "dcgm-counters.csv",
    }


def test_a_slurm_cluster_gets_the_slurm_rules_and_dashboard(
    cluster_spec: ClusterSpec, catalog: Catalog, cluster_files: MonitoringFiles
) -> None:
    with_slurm = dataclasses.replace(
        cluster_spec, monitoring=dataclasses.replace(cluster_spec.monitoring, slurm=True)
    )
    files = render_monitoring(with_slurm, catalog, stack=STACK, project=None, today=TODAY)
    assert set(files) - set(cluster_files) == {"rules/slurm.yml", "dashboards/slurm.json"}


def test_aws_discovery_selects_this_clusters_gpu_nodes_by_their_tags(cluster_files: MonitoringFiles) -> None:
    config = yaml.safe_load(cluster_files["prometheus.yml"])
    assert config["global"]["external_labels"] == {"cluster": "llm", "stack": STACK}
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert list(jobs) == ["dcgm", "node", "monitoring-host"]
    assert jobs["dcgm"]["ec2_sd_configs"] == [
        {
            "region": "us-east-1",
            "port": 9400,
            "filters": [
                {"name": "tag:clusterfab-blueprint", "values": ["llm"]},
                {"name": "tag:clusterfab-stack", "values": ["prod"]},
                {"name": "tag-key", "values": ["clusterfab-node-group"]},
                {"name": "instance-state-name", "values": ["running"]},
            ],
        }
    ]
    assert jobs["node"]["ec2_sd_configs"][0]["port"] == 9100
    assert jobs["dcgm"]["relabel_configs"] == [
        {"source_labels": ["__meta_ec2_instance_id"], "target_label": "instance"},
        {"source_labels": ["__meta_ec2_tag_clusterfab_node_group"], "target_label": "node_group"},
        {"source_labels": ["__meta_ec2_instance_type"], "regex": "(.+)", "target_label": "machine_type"},
    ]
    assert jobs["monitoring-host"]["static_configs"] == [{"targets": ["localhost:9100"]}]


def test_gcp_discovery_has_one_gce_sd_config_per_zone_with_the_cluster_label_filter(catalog: Catalog) -> None:
    spec = spec_of(FIXTURES / "cluster-gcp.yaml")
    files = render_monitoring(spec, catalog, stack="dev", project="my-project-123", today=TODAY)
    jobs = {job["job_name"]: job for job in yaml.safe_load(files["prometheus.yml"])["scrape_configs"]}
    assert jobs["dcgm"]["gce_sd_configs"] == [
        {
            "project": "my-project-123",
            "zone": "us-central1-a",
            "port": 9400,
            "filter": '(labels.clusterfab-blueprint = "mega") AND (labels.clusterfab-stack = "dev") AND '
            "(labels.clusterfab-node-group:*) AND (status = RUNNING)",
        }
    ]
    assert jobs["node"]["relabel_configs"][1] == {
        "source_labels": ["__meta_gce_label_clusterfab_node_group"],
        "target_label": "node_group",
    }
    assert jobs["node"]["relabel_configs"][2]["regex"] == ".*/([^/]+)"


def test_alertmanager_mails_critical_and_warning_alerts_and_keeps_the_password_out(
    cluster_files: MonitoringFiles,
) -> None:
    config = yaml.safe_load(cluster_files["alertmanager.yml"])
    assert config["global"] == {
        "smtp_smarthost": "email-smtp.us-east-1.amazonaws.com:587",
        "smtp_from": "alerts@example.com",
        "smtp_require_tls": True,
        "smtp_auth_username": "AKIAEXAMPLE",
        "smtp_auth_password_file": "/etc/prometheus/alertmanager-smtp-password",
    }
    assert config["route"]["receiver"] == "email"
    assert config["route"]["routes"] == [{"matchers": ['severity="info"'], "receiver": "nobody"}]
    email = next(r for r in config["receivers"] if r["name"] == "email")
    assert email["email_configs"][0]["to"] == "ml-infra@example.com"


def test_without_a_mail_relay_nothing_is_mailed(cluster_spec: ClusterSpec, catalog: Catalog) -> None:
    assert cluster_spec.monitoring is not None
    spec = dataclasses.replace(
        cluster_spec, monitoring=dataclasses.replace(cluster_spec.monitoring, smtp=None)
    )
    config = yaml.safe_load(
        render_monitoring(spec, catalog, stack=STACK, project=None, today=TODAY)["alertmanager.yml"]
    )
    assert "global" not in config
    assert [r["name"] for r in config["receivers"]] == ["nobody"]
    assert config["route"]["receiver"] == "nobody"


def test_the_counters_file_extends_the_exporters_default_with_real_field_names() -> None:
    known = {
        line.strip()
        for line in (FIXTURES / "go-dcgm-fields.txt").read_text().splitlines()
        if not line.startswith("#")
    }
    exporter_collectors = {
        "DCGM_EXP_CLOCK_EVENTS_COUNT",
        "DCGM_EXP_XID_ERRORS_COUNT",
        "DCGM_EXP_GPU_HEALTH_STATUS",
    }
    ours = {c.field for c in dcgm_counters()}
    assert ours - known <= exporter_collectors, ours - known - exporter_collectors
    default = {
        line.split(",")[0].strip()
        for line in (FIXTURES / "dcgm-exporter-4.4.1-4.6.0-default-counters.csv").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    # Dropped from the default: the encoder/decoder and vGPU license fields, which training GPUs do not use.
    assert default - ours == {
        "DCGM_FI_DEV_ENC_UTIL",
        "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
    }
    needed = {
        "DCGM_EXP_XID_ERRORS_COUNT",
        "DCGM_EXP_CLOCK_EVENTS_COUNT",
        "DCGM_EXP_GPU_HEALTH_STATUS",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        "DCGM_FI_DEV_POWER_VIOLATION",
    }
    assert needed <= ours


@pytest.mark.parametrize("suite", tools.SUITES)
def test_promtool_checks_the_config_and_every_rule_file(suite: str, rendered: Path) -> None:
    config = tools.run(suite, "promtool", "check", "config", rendered / "prometheus.yml")
    assert config.returncode == 0, config.stdout + config.stderr
    rules = tools.run(suite, "promtool", "check", "rules", *sorted((rendered / "rules").glob("*.yml")))
    assert rules.returncode == 0, rules.stdout + rules.stderr
    assert rules.stdout.count("SUCCESS") == 4


@pytest.mark.parametrize("suite", tools.SUITES)
def test_amtool_checks_the_alertmanager_config(suite: str, rendered: Path) -> None:
    result = tools.run(suite, "amtool", "check-config", rendered / "alertmanager.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 receivers" in result.stdout


@pytest.mark.parametrize("suite", tools.SUITES)
def test_promtool_checks_the_gcp_discovery_config(suite: str, catalog: Catalog, tmp_path: Path) -> None:
    spec = spec_of(FIXTURES / "cluster-gcp.yaml")
    write_files(
        render_monitoring(spec, catalog, stack="dev", project="my-project-123", today=TODAY), tmp_path
    )
    result = tools.run(suite, "promtool", "check", "config", tmp_path / "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr


AZURE_SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"


def _azure_files(catalog: Catalog) -> MonitoringFiles:
    spec = spec_of(FIXTURES / "cluster-azure.yaml")
    return render_monitoring(spec, catalog, stack="dev", project=AZURE_SUBSCRIPTION, today=TODAY)


def test_azure_discovery_lists_the_stacks_subscription_with_the_hosts_identity(catalog: Catalog) -> None:
    """Prometheus on the Slurm controller finds the GPU nodes with azure_sd_configs: the subscription the
    stack names, the controller's managed identity (its only one), and this cluster's and stack's tags."""
    jobs = {
        job["job_name"]: job
        for job in yaml.safe_load(_azure_files(catalog)["prometheus.yml"])["scrape_configs"]
    }
    assert sorted(jobs) == ["dcgm", "monitoring-host", "node", "slurm", "slurm-login"]
    assert jobs["dcgm"] == {
        "job_name": "dcgm",
        "azure_sd_configs": [
            {
                "environment": "AzurePublicCloud",
                "authentication_method": "ManagedIdentity",
                "subscription_id": "00000000-0000-0000-0000-0000000000aa",
                "resource_group": "clusterfab-hpc-dev",
                "port": 9400,
            }
        ],
        "relabel_configs": [
            {
                "source_labels": ["__meta_azure_machine_tag_clusterfab_blueprint"],
                "regex": "hpc",
                "action": "keep",
            },
            {
                "source_labels": ["__meta_azure_machine_tag_clusterfab_stack"],
                "regex": "dev",
                "action": "keep",
            },
            {
                "source_labels": ["__meta_azure_machine_tag_clusterfab_node_group"],
                "regex": ".+",
                "action": "keep",
            },
            {"source_labels": ["__meta_azure_machine_name"], "target_label": "instance"},
            {
                "source_labels": ["__meta_azure_machine_tag_clusterfab_node_group"],
                "target_label": "node_group",
            },
            {"source_labels": ["__meta_azure_machine_size"], "regex": "(.+)", "target_label": "machine_type"},
        ],
    }
    assert jobs["node"]["azure_sd_configs"] == [
        {
            "environment": "AzurePublicCloud",
            "authentication_method": "ManagedIdentity",
            "subscription_id": "00000000-0000-0000-0000-0000000000aa",
            "resource_group": "clusterfab-hpc-dev",
            "port": 9100,
        }
    ]
    assert jobs["slurm"] == {"job_name": "slurm", "static_configs": [{"targets": ["localhost:8080"]}]}


AZURE_SD_SUITES = ("bookworm",)
"""Debian builds Prometheus with Azure service discovery up to 2.45.6+ds and without it from 2.53.1+ds-1
("Disable Azure SD until SDK package is updated", the package's changelog.Debian): trixie's promtool refuses
azure_sd_configs as an unknown field. The monitoring host runs Ubuntu 24.04's 2.45.3+ds-2ubuntu0.3 (the
catalog's monitoring.yaml), built from Debian's 2.45.3+ds-2, with it."""


@pytest.mark.parametrize("suite", AZURE_SD_SUITES)
def test_promtool_checks_the_azure_discovery_config(suite: str, catalog: Catalog, tmp_path: Path) -> None:
    write_files(_azure_files(catalog), tmp_path)
    result = tools.run(suite, "promtool", "check", "config", tmp_path / "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr
