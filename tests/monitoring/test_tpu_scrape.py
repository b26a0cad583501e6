"""TPU VM hosts are scraped and alerted on: the monitoring host's TPU discovery program lists them through
the Cloud TPU API and writes a file_sd file that the `tpu-node` job reads; TpuHostDown fires for a silent
one. TPU VMs are not Compute Engine instances, so gce_sd_configs would never find them."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterfab.catalog import Catalog
from clusterfab.core import vocab
from clusterfab.monitoring import render_monitoring
from clusterfab.monitoring.host import monitoring_host_vars
from clusterfab.monitoring.tpu_discovery import program
from clusterfab.spec import ClusterSpec
from tests.conftest import REPO
from tests.factories import TODAY
from tests.monitoring.conftest import spec_of
from tests.monitoring.test_components import build
from tests.monitoring.tpu_nodes_answer import PAGE_1, PAGE_2

TPU = REPO / "blueprints" / "examples" / "gcp-tpu-v6e-spot.yaml"
DISCOVERY = ".venv/lib/python3.11/site-packages/googleapiclient/discovery_cache/documents/tpu.v2.json"
URL = "https://tpu.googleapis.com/v2/projects/ml-platform-dev/locations/us-east1-d/nodes"
WORKERS = [
    {
        "targets": [f"10.70.0.{12 + i}:9100"],
        "labels": {
            "tpu_slice": "trillium",
            "instance": f"trillium-spot-dev-trillium-0-w{i}",
            "machine_type": "v6e-16",
        },
    }
    for i in (0, 1)
]


def _monitored_tpu(tmp_path: Path) -> ClusterSpec:
    text = TPU.read_text().replace("environments:", "monitoring:\n  kind: prometheus\nenvironments:", 1)
    path = tmp_path / "tpu-monitored.yaml"
    path.write_text(text)
    return spec_of(path, "dev")


class FakeTpuApi:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        self.calls.append((method, url))
        return PAGE_2 if url.endswith("pageToken=page-2") else PAGE_1


def test_the_recorded_answer_uses_the_api_s_own_field_names() -> None:
    schemas = json.loads((REPO / DISCOVERY).read_text())["schemas"]
    for page in (PAGE_1, PAGE_2):
        assert set(page) <= set(schemas["ListNodesResponse"]["properties"])
        for node in page["nodes"]:
            assert set(node) <= set(schemas["Node"]["properties"])
            for endpoint in node.get("networkEndpoints", []):
                assert set(endpoint) <= set(schemas["NetworkEndpoint"]["properties"])


def test_the_program_selects_its_cluster_s_ready_workers() -> None:
    nodes = PAGE_1["nodes"] + PAGE_2["nodes"]
    assert program.target_groups(nodes, blueprint="trillium-spot", stack="dev", port=9100) == WORKERS


def test_the_program_pages_through_the_list_and_writes_the_file_whole(tmp_path: Path) -> None:
    output = tmp_path / "tpu-node.json"
    output.write_text("[]\n")
    settings = program.Settings("ml-platform-dev", "us-east1-d", "trillium-spot", "dev", 9100, str(output))
    api = FakeTpuApi()
    program.discover(settings, api)
    assert api.calls == [("GET", URL), ("GET", f"{URL}?pageToken=page-2")]
    assert json.loads(output.read_text()) == WORKERS
    assert [p.name for p in tmp_path.iterdir()] == ["tpu-node.json"]  # no partial file left behind
    assert output.stat().st_mode & 0o777 == 0o644


def test_the_program_s_label_keys_are_the_stack_s() -> None:
    assert (program.BLUEPRINT_TAG, program.STACK_TAG, program.NODE_GROUP_TAG) == (
        vocab.BLUEPRINT_TAG,
        vocab.STACK_TAG,
        vocab.NODE_GROUP_TAG,
    )


def test_a_monitored_tpu_cluster_scrapes_the_program_s_file(tmp_path: Path, catalog: Catalog) -> None:
    spec = _monitored_tpu(tmp_path)
    files = render_monitoring(spec, catalog, stack="dev", project="ml-platform-dev", today=TODAY)
    jobs = {j["job_name"]: j for j in yaml.safe_load(files["prometheus.yml"])["scrape_configs"]}
    assert jobs["tpu-node"] == {
        "job_name": "tpu-node",
        "file_sd_configs": [
            {"files": ["/var/lib/prometheus/file_sd/tpu-node.json"], "refresh_interval": "1m"}
        ],
    }
    assert json.loads(files["tpu_discovery.json"]) == {
        "project": "ml-platform-dev",
        "zone": "us-east1-d",
        "blueprint": "trillium-spot",
        "stack": "dev",
        "port": 9100,
        "output": "/var/lib/prometheus/file_sd/tpu-node.json",
    }
    assert sorted(name for name in files if name.startswith("lib/")) == [
        "lib/clusterfab_tpu_discovery/__init__.py",
        "lib/clusterfab_tpu_discovery/__main__.py",
        "lib/clusterfab_tpu_discovery/bearer.py",
        "lib/clusterfab_tpu_discovery/gcp_http.py",
        "lib/clusterfab_tpu_discovery/program.py",
    ]
    for shared in ("gcp_http.py", "bearer.py"):
        assert (
            files[f"lib/clusterfab_tpu_discovery/{shared}"]
            == (REPO / "clusterfab/scheduler/slurm/nodes" / shared).read_text()
        )
    (alert,) = [r for g in _rule_files(files) for r in g["rules"] if r.get("alert") == "TpuHostDown"]
    assert (alert["expr"], alert["for"], alert["labels"]["severity"]) == (
        'up{job="tpu-node"} == 0',
        "5m",
        "critical",
    )
    assert monitoring_host_vars(spec, catalog, files_dir="/f")["prometheus_tpu_discovery"] is True


def test_the_shipped_program_runs_with_python_alone(tmp_path: Path, catalog: Catalog) -> None:
    files = render_monitoring(_monitored_tpu(tmp_path), catalog, stack="dev", project="p", today=TODAY)
    for name, content in files.items():
        if name.startswith("lib/"):
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(content)
    # -I: no site-packages, no working directory, no PYTHONPATH; clusterfab is not importable there.
    run = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path / 'lib')!r}); "
         "import clusterfab_tpu_discovery.program as p; sys.exit(p.main([]))"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (run.returncode, run.stderr) == (
        2,
        "clusterfab-tpu-discovery: usage: python3 -m clusterfab_tpu_discovery SETTINGS.json\n",
    )


def test_a_cluster_without_tpu_slices_has_no_tpu_job(tmp_path: Path, catalog: Catalog) -> None:
    spec = _monitored_tpu(tmp_path)
    spec = dataclasses.replace(spec, tpu_slices=())
    files = render_monitoring(spec, catalog, stack="dev", project="ml-platform-dev", today=TODAY)
    jobs = [j["job_name"] for j in yaml.safe_load(files["prometheus.yml"])["scrape_configs"]]
    assert "tpu-node" not in jobs
    assert "tpu_discovery.json" not in files
    assert monitoring_host_vars(spec, catalog, files_dir="/f")["prometheus_tpu_discovery"] is False


def _rule_files(files: Mapping[str, str]) -> list[dict[str, Any]]:
    return [
        g for name, text in files.items() if name.startswith("rules/") for g in yaml.safe_load(text)["groups"]
    ]


@pytest.mark.parametrize(
    ("tpu", "permissions"),
    [(True, ["compute.instances.list", "tpu.nodes.list"]), (False, ["compute.instances.list"])],
)
def test_the_monitoring_role_lists_tpu_nodes_only_with_tpu_slices(tpu: bool, permissions: list[str]) -> None:
    from components.gcp.monitoring import GcpMonitoringAccess, GcpMonitoringAccessArgs

    def build_access() -> None:
        GcpMonitoringAccess(
            "mon", GcpMonitoringAccessArgs(project="p", role_id="r", member="m", tpu_discovery=tpu)
        )

    role = build(build_access)["mon-discovery-role"].inputs
    assert role["permissions"] == permissions
