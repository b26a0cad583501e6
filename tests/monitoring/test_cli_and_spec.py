"""The blueprint's monitoring resolved and priced; `clusterfab render monitoring`; `clusterfab dashboard`'s
tunnel; and what validate and cost never import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.core.errors import UsageError
from clusterfab.cost import estimate_cost
from clusterfab.monitoring.tunnel import tunnel
from clusterfab.outputs import read_outputs
from clusterfab.spec.monitoring import needed_disk_gib, series_at_full_size
from tests.conftest import REPO
from tests.factories import TODAY
from tests.labs import LIVE_CLOUD, require
from tests.monitoring.conftest import CLUSTER, spec_of

EXAMPLE = REPO / "blueprints" / "examples" / "aws-p5-monitored.yaml"
GCP_CLUSTER = REPO / "tests" / "fixtures" / "monitoring" / "cluster-gcp.yaml"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clusterfab", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        env={**os.environ, "CLUSTERFAB_TODAY": TODAY.isoformat()},
    )


def test_monitoring_resolves_to_its_own_node_with_the_budgets_recipients() -> None:
    monitoring = spec_of(EXAMPLE).monitoring
    assert monitoring is not None
    assert (monitoring.host, monitoring.slurm, monitoring.retention_days) == ("node", False, 30)
    assert monitoring.alert_emails == ("ml-infra@example.com",)
    assert monitoring.machine is not None
    assert monitoring.machine.name == "m7i.large"
    assert spec_of(EXAMPLE, "dev").monitoring.retention_days == 7  # type: ignore[union-attr]


def test_the_disk_is_sized_with_prometheus_rule() -> None:
    spec = spec_of(CLUSTER)
    sizing = spec.monitoring
    assert sizing is not None
    facts = load_catalog().monitoring.storage
    # 4 p5 nodes: 8 GPUs x 64 series + 600 + 192 vCPUs x 16 = 4,184 series per node.
    assert series_at_full_size(spec.node_groups, facts) == 4 * 4184
    # 16,736 series / 30 s x 30 days x 2 bytes x 1.5 = 4.3 GB: the 50 GiB minimum.
    assert needed_disk_gib(16736, 30, 30, facts) == 50
    # A year of 64 such nodes: 267,776 series -> 787 GiB.
    assert needed_disk_gib(64 * 4184, 365, 30, facts) == 787
    assert sizing.disk_gib == 50


def test_cost_prices_the_monitoring_node_from_the_catalog() -> None:
    estimate = estimate_cost(
        spec_of(EXAMPLE), __import__("clusterfab.catalog").catalog.load_catalog(), today=TODAY
    )
    item = next(i for i in estimate.items if i.kind == "monitoring")
    assert (item.name, item.sku, item.quantity, item.unit_price_usd) == (
        "monitoring",
        "m7i.large",
        1,
        Decimal("0.1008"),
    )
    assert (item.source, item.monthly_usd) == ("S-EC2-M7I", Decimal("73.5840"))
    proc = run("cost", EXAMPLE, "--format", "json")
    items = json.loads(proc.stdout)["items"]
    assert next(i for i in items if i["kind"] == "monitoring")["sku"] == "m7i.large"


def test_render_monitoring_writes_the_contract_files(tmp_path: Path) -> None:
    proc = run("render", "monitoring", EXAMPLE, "--env", "prod", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert {
        "prometheus.yml",
        "alertmanager.yml",
        "rules/gpu.yml",
        "dashboards/cluster-overview.json",
    } <= written
    assert (
        "values:\n      - prod" in (tmp_path / "prometheus.yml").read_text()
    )  # the stack defaults to the env


def test_render_monitoring_refuses_a_blueprint_without_monitoring(tmp_path: Path) -> None:
    proc = run("render", "monitoring", "blueprints/examples/aws-p5-efa-fsx.yaml", "--out", tmp_path)
    assert proc.returncode == 1
    assert "no monitoring" in proc.stderr
    assert not any(tmp_path.iterdir())


def test_render_monitoring_of_gcp_needs_the_project(tmp_path: Path) -> None:
    body = GCP_CLUSTER.read_text().replace("project: my-project-123\n", "")
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text(body)
    proc = run("render", "monitoring", blueprint, "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert "--project" in proc.stderr
    assert (
        run("render", "monitoring", blueprint, "--out", tmp_path / "out", "--project", "p-123456").returncode
        == 0
    )


def test_render_monitoring_of_azure_needs_the_subscription(tmp_path: Path) -> None:
    blueprint = REPO / "tests" / "fixtures" / "monitoring" / "cluster-azure.yaml"
    proc = run("render", "monitoring", blueprint, "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert (
        "the nodes' discovery on Azure needs the project they live in: pass --project (GCP: the project, "
        "when the blueprint names none; Azure: the subscription id, which a stack sets as "
        "azure-native:subscriptionId)"
    ) in " ".join(proc.stderr.split())
    assert not (tmp_path / "out").exists()
    subscription = "00000000-0000-0000-0000-0000000000aa"
    out = tmp_path / "out"
    assert run("render", "monitoring", blueprint, "--out", out, "--project", subscription).returncode == 0
    assert f"subscription_id: {subscription}" in (out / "prometheus.yml").read_text()


def _outputs(cloud: str, monitoring: dict[str, object] | None) -> dict[str, object]:
    zone, region = ("use1-az6", "us-east-1") if cloud == "aws" else ("us-central1-a", "us-central1")
    return {
        "blueprint": {"name": "llm", "file": "bp.yaml", "digest": "0" * 64, "bundle_sha256": "1" * 64,
                      "environment": "prod", "catalog_version": "x", "cloud": cloud, "region": region,
                      "zone": zone, "project": "p-123456" if cloud == "gcp" else None},
        "network": {}, "bucket": "b", "node_selector": {}, "monitoring": monitoring,
    }  # fmt: skip


def test_the_tunnel_is_ssm_port_forwarding_on_aws() -> None:
    outputs = read_outputs(_outputs("aws", {"host": "i-0abc", "grafana_port": 3000, "retention_days": 30}))
    forward = tunnel(outputs, local_port=13000)
    assert forward.argv == [
        "aws", "ssm", "start-session", "--region", "us-east-1", "--target", "i-0abc",
        "--document-name", "AWS-StartPortForwardingSession",
        "--parameters", '{"portNumber":["3000"],"localPortNumber":["13000"]}',
    ]  # fmt: skip
    assert forward.url == "http://localhost:13000/"


def test_the_tunnel_is_an_ssh_port_forward_over_iap_on_gcp() -> None:
    """Grafana listens on the host's loopback: IAP's TCP forwarding (`start-iap-tunnel HOST 3000`)
    connects to the VM's network address and would find nothing there; SSH over IAP (OS Login) forwards
    the local port to the host's own loopback, through the rule that admits IAP to port 22."""
    outputs = read_outputs(
        _outputs("gcp", {"host": "llm-prod-monitoring", "grafana_port": 3000, "retention_days": 30})
    )
    forward = tunnel(outputs, local_port=13000)
    assert forward.argv == [
        "gcloud", "compute", "ssh", "llm-prod-monitoring",
        "--zone=us-central1-a", "--project=p-123456", "--tunnel-through-iap",
        "--", "-N", "-L", "13000:127.0.0.1:3000", "-o", "ExitOnForwardFailure=yes",
    ]  # fmt: skip
    assert forward.url == "http://localhost:13000/"


def test_a_stack_without_monitoring_says_how_to_get_it() -> None:
    with pytest.raises(UsageError, match=r"monitoring\.kind: prometheus"):
        tunnel(read_outputs(_outputs("aws", None)))


def test_the_dashboard_command_against_a_real_stack() -> None:
    """Needs the Pulumi CLI, a deployed stack (CLUSTERFAB_LIVE_STACK) and the cloud's CLI; skips otherwise."""
    stack = os.environ.get("CLUSTERFAB_LIVE_STACK", "")
    require(
        shutil.which("pulumi") is not None and bool(stack),
        "needs the Pulumi CLI and CLUSTERFAB_LIVE_STACK naming a deployed stack with monitoring",
        ci_exempt=LIVE_CLOUD,
    )
    proc = subprocess.run(
        [sys.executable, "-m", "clusterfab", "dashboard", "--stack", stack],
        capture_output=True, text=True, cwd=REPO, check=False, timeout=20,
    )  # fmt: skip
    assert "Grafana of" in proc.stdout, proc.stderr


def test_without_the_pulumi_cli_dashboard_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A PATH without `pulumi`, so that the test runs where the CLI is installed too.
    monkeypatch.setenv("PATH", str(tmp_path))
    proc = run("dashboard", "--stack", "dev")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ")


_PROBE = """
import sys
from clusterfab.cli import main
sys.argv = ["clusterfab", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
loaded = sorted(m for m in sys.modules if m.startswith(("pulumi", "grafana_foundation_sdk")))
print("RESULT", code, loaded)
"""


@pytest.mark.parametrize("command", ["validate", "cost"])
def test_validate_and_cost_of_a_monitored_cluster_import_neither_pulumi_nor_the_dashboard_sdk(
    command: str,
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, command, str(EXAMPLE)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert proc.stdout.strip().splitlines()[-1] == "RESULT 0 []", proc.stdout[-500:] + proc.stderr
