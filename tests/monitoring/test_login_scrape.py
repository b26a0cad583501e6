"""Slurm login nodes are scraped and alerted on: their node exporter runs where the cluster is monitored,
Prometheus finds them by their Slurm role tag (they have no node group), and NodeDown fires for them with
`role="login"`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterfab.catalog import Catalog
from clusterfab.monitoring import render_monitoring, write_files
from clusterfab.provision.extravars import node_exporter_vars
from tests.conftest import REPO
from tests.factories import TODAY
from tests.monitoring import tools
from tests.monitoring.conftest import spec_of

SLURM = REPO / "blueprints" / "examples" / "aws-p5-slurm.yaml"
GCP_SLURM = REPO / "blueprints" / "examples" / "gcp-a3ultra-roce-lustre.yaml"
LOGIN_SERIES = 'up{job="slurm-login",instance="i-0log",machine_type="c7i.2xlarge",role="login"}'


def _job(files: dict[str, str], name: str) -> dict[str, Any]:
    config = yaml.safe_load(files["prometheus.yml"])
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == name]
    return dict(job)


def test_aws_login_nodes_are_found_by_their_slurm_role_tag(catalog: Catalog) -> None:
    spec = spec_of(SLURM)
    files = render_monitoring(spec, catalog, stack="prod", project=None, today=TODAY)
    assert _job(files, "slurm-login") == {
        "job_name": "slurm-login",
        "ec2_sd_configs": [
            {
                "region": "us-east-1",
                "port": 9100,
                "filters": [
                    {"name": "tag:clusterfab-blueprint", "values": ["llm-slurm"]},
                    {"name": "tag:clusterfab-stack", "values": ["prod"]},
                    {"name": "tag:clusterfab-slurm-role", "values": ["login"]},
                    {"name": "instance-state-name", "values": ["running"]},
                ],
            }
        ],
        "relabel_configs": [
            {"source_labels": ["__meta_ec2_instance_id"], "target_label": "instance"},
            {"source_labels": ["__meta_ec2_tag_clusterfab_node_group"], "target_label": "node_group"},
            {"source_labels": ["__meta_ec2_instance_type"], "regex": "(.+)", "target_label": "machine_type"},
            {"target_label": "role", "replacement": "login"},
        ],
    }
    # The login node sits in the nodes' security group too, which admits the monitoring host on 9100.
    assert 9100 in [
        config["port"] for job in yaml.safe_load(files["prometheus.yml"])["scrape_configs"]
        for config in job.get("ec2_sd_configs", [])
    ]  # fmt: skip


def test_gcp_login_nodes_are_found_by_their_slurm_role_label(catalog: Catalog, tmp_path: Path) -> None:
    blueprint = tmp_path / "monitored.yaml"
    text = GCP_SLURM.read_text()
    blueprint.write_text(text + "monitoring: {kind: prometheus, alert_emails: [ml-infra@example.com]}\n")
    spec = spec_of(blueprint)
    files = render_monitoring(spec, catalog, stack="prod", project="ml-platform-prod", today=TODAY)
    job = _job(files, "slurm-login")
    assert job["gce_sd_configs"] == [
        {
            "project": "ml-platform-prod",
            "zone": spec.zone,
            "port": 9100,
            "filter": f'(labels.clusterfab-blueprint = "{spec.name}") AND (labels.clusterfab-stack = "prod") '
            'AND (labels.clusterfab-slurm-role = "login") AND (status = RUNNING)',
        }
    ]
    assert job["relabel_configs"][-1] == {"target_label": "role", "replacement": "login"}


def test_a_cluster_without_login_nodes_has_no_login_job(catalog: Catalog, tmp_path: Path) -> None:
    blueprint = tmp_path / "nologin.yaml"
    text = SLURM.read_text()
    assert "  login: {count: 1}\n" in text
    blueprint.write_text(text.replace("  login: {count: 1}\n", "  login: {count: 0}\n", 1))
    files = render_monitoring(spec_of(blueprint), catalog, stack="prod", project=None, today=TODAY)
    jobs = [j["job_name"] for j in yaml.safe_load(files["prometheus.yml"])["scrape_configs"]]
    assert jobs == ["dcgm", "node", "slurm", "monitoring-host"]
    assert "slurm-login" not in files["rules/slurm.yml"]


def test_the_login_nodes_run_the_node_exporter_where_the_cluster_is_monitored(catalog: Catalog) -> None:
    # The version is packages.yaml's Ubuntu package (the GPU nodes' and the monitoring host's).
    assert node_exporter_vars(spec_of(SLURM), catalog) == {
        "clusterfab_monitoring_enabled": True,
        "dcgm_node_exporter_version": "1.7.0-1ubuntu0.3",
        "dcgm_node_exporter_port": 9100,
    }
    assert node_exporter_vars(spec_of(GCP_SLURM), catalog) == {"clusterfab_monitoring_enabled": False}
    play = yaml.safe_load((REPO / "playbooks" / "slurm_login.yml").read_text())[0]
    (task,) = [t for t in play["tasks"] if t["ansible.builtin.include_role"]["name"] == "dcgm"]
    assert task["ansible.builtin.include_role"]["tasks_from"] == "node_exporter"
    assert task["when"] == "clusterfab_monitoring_enabled | default(false) | bool"


def _login_rule(files: dict[str, str]) -> dict[str, Any]:
    (group,) = yaml.safe_load(files["rules/slurm.yml"])["groups"]
    (rule,) = [r for r in group["rules"] if r.get("alert") == "NodeDown"]
    return dict(rule)


def test_node_down_covers_the_login_nodes(catalog: Catalog) -> None:
    rule = _login_rule(render_monitoring(spec_of(SLURM), catalog, stack="prod", project=None, today=TODAY))
    assert rule["expr"] == 'up{job="slurm-login"} == 0'
    assert rule["for"] == "5m"
    assert rule["labels"] == {"severity": "critical"}
    assert rule["annotations"]["summary"] == "login node {{ $labels.instance }} does not answer"


@pytest.mark.parametrize("suite", tools.SUITES)
def test_promtool_fires_node_down_for_a_silent_login_node(
    suite: str, catalog: Catalog, tmp_path: Path
) -> None:
    files = render_monitoring(spec_of(SLURM), catalog, stack="prod", project=None, today=TODAY)
    write_files(files, tmp_path / "out")
    labels = {"job": "slurm-login", "instance": "i-0log", "machine_type": "c7i.2xlarge", "role": "login"}
    summary = "login node i-0log does not answer"
    description = _login_rule(files)["annotations"]["description"]

    def case(values: str, fires: bool) -> dict[str, Any]:
        expected = [
            {
                "exp_labels": {**labels, "severity": "critical"},
                "exp_annotations": {"summary": summary, "description": description},
            }
        ]
        return {
            "interval": "30s",
            "input_series": [{"series": LOGIN_SERIES, "values": values}],
            "alert_rule_test": [
                {"eval_time": "6m", "alertname": "NodeDown", "exp_alerts": expected if fires else []}
            ],
        }

    test_file = tmp_path / "out" / "login-test.yml"
    document = {"rule_files": ["rules/slurm.yml"], "evaluation_interval": "30s",
                "tests": [case("0x20", True), case("1x20", False)]}  # fmt: skip
    test_file.write_text(yaml.safe_dump(document, sort_keys=False, width=4096))
    result = tools.run(suite, "promtool", "test", "rules", test_file, cwd=tmp_path / "out")
    assert result.returncode == 0, result.stdout + result.stderr
