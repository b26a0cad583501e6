"""Monitoring of a Kubernetes cluster with team queues (issue 32 item 4): the queue agent is scraped on the
system nodes (found by their component tag, on either cloud), its rules and the Kueue dashboard ship, the
Slurm dashboard does not, and the monitoring host's firewall opens the agent's port beside the exporters'."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from clusterfab.catalog import Catalog
from clusterfab.monitoring import render_monitoring
from clusterfab.monitoring.targets import discovered_ports
from tests.conftest import REPO
from tests.factories import TODAY, blueprint_yaml
from tests.monitoring.conftest import spec_of

FIXTURE = REPO / "tests" / "fixtures" / "monitoring" / "kubernetes.yaml"


def _jobs(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {job["job_name"]: job for job in yaml.safe_load(files["prometheus.yml"])["scrape_configs"]}


def test_the_queue_agent_is_scraped_on_the_eks_system_nodes_by_their_component_tag(catalog: Catalog) -> None:
    files = render_monitoring(spec_of(FIXTURE), catalog, stack="prod", project=None, today=TODAY)
    jobs = _jobs(files)
    assert list(jobs) == ["dcgm", "node", "queue-agent", "monitoring-host"]
    assert jobs["queue-agent"]["ec2_sd_configs"] == [
        {
            "region": "us-east-1",
            "port": 9410,
            "filters": [
                {"name": "tag:clusterfab-blueprint", "values": ["llm-k8s"]},
                {"name": "tag:clusterfab-stack", "values": ["prod"]},
                {"name": "tag:clusterfab-component", "values": ["system-nodes"]},
                {"name": "instance-state-name", "values": ["running"]},
            ],
        }
    ]
    # The GPU nodes' jobs still select by the node group tag.
    assert jobs["dcgm"]["ec2_sd_configs"][0]["filters"][2] == {
        "name": "tag-key",
        "values": ["clusterfab-node-group"],
    }
    assert discovered_ports(list(jobs.values())) == (9100, 9400, 9410)


def test_on_gke_the_system_nodes_are_found_by_their_component_label(catalog: Catalog, tmp_path: Path) -> None:
    path = tmp_path / "gke.yaml"
    path.write_text(
        blueprint_yaml(
            "gcp",
            name="llm-k8s",
            node_groups=[{"name": "mega", "machine_type": "a3-megagpu-8g", "count": 2}],
            scheduler={"kind": "kubernetes"},
            teams=[{"name": "research", "max_gpus": 16, "gpu_hours_per_month": 5000}],
            monitoring={"kind": "prometheus", "alert_emails": ["ml-infra@example.com"]},
        )
    )
    files = render_monitoring(spec_of(path), catalog, stack="dev", project="my-project-123", today=TODAY)
    assert _jobs(files)["queue-agent"]["gce_sd_configs"] == [
        {
            "project": "my-project-123",
            "zone": "us-central1-b",
            "port": 9410,
            "filter": '(labels.clusterfab-blueprint = "llm-k8s") AND (labels.clusterfab-stack = "dev") AND '
            '(labels.clusterfab-component = "system-nodes") AND (status = RUNNING)',
        }
    ]


def test_the_kueue_rules_and_dashboard_ship_and_the_slurm_ones_do_not(catalog: Catalog) -> None:
    files = render_monitoring(spec_of(FIXTURE), catalog, stack="prod", project=None, today=TODAY)
    assert sorted(name for name in files if name.startswith(("rules/", "dashboards/"))) == [
        "dashboards/cluster-overview.json",
        "dashboards/fabric.json",
        "dashboards/gpu-cost.json",
        "dashboards/gpu-node.json",
        "dashboards/kueue.json",
        "dashboards/storage.json",
        "rules/availability.yml",
        "rules/cost.yml",
        "rules/gpu.yml",
        "rules/kueue.yml",
        "rules/storage.yml",
    ]


def test_without_teams_there_is_no_agent_to_scrape(catalog: Catalog) -> None:
    spec = dataclasses.replace(spec_of(FIXTURE), teams=())
    files = render_monitoring(spec, catalog, stack="prod", project=None, today=TODAY)
    assert list(_jobs(files)) == ["dcgm", "node", "monitoring-host"]
    assert "rules/kueue.yml" not in files
    assert "dashboards/kueue.json" not in files
