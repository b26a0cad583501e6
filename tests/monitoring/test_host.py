"""The monitoring host's inputs: playbook variables against the roles' contracts, the rendered-files
archive, the boot script that fetches it, and the one counters file both sides ship."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from clusterfab.bootstrap import FilesArchive, NodeBootstrap, files_dir, render_boot_script
from clusterfab.catalog import Catalog
from clusterfab.monitoring import MonitoringFiles
from clusterfab.monitoring.counters import counters_csv
from clusterfab.monitoring.host import archive_bytes, build_archive, monitoring_host_vars
from clusterfab.monitoring.tunnel import GRAFANA_ADDRESS, GRAFANA_PORT
from clusterfab.spec import ClusterSpec
from tests.conftest import REPO
from tests.monitoring.conftest import CLUSTER, spec_of

PLAYBOOKS = REPO / "playbooks"
GCP_CLUSTER = REPO / "tests" / "fixtures" / "monitoring" / "cluster-gcp.yaml"
TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "path": (str,),
    "int": (int,),
    "list": (list,),
    "bool": (bool,),
}


def _options(role: str) -> dict[str, Any]:
    spec = yaml.safe_load((PLAYBOOKS / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return dict(spec["argument_specs"]["main"]["options"])


def _roles() -> list[str]:
    play = yaml.safe_load((PLAYBOOKS / "monitoring.yml").read_text())[0]
    return [task["ansible.builtin.include_role"]["name"] for task in play["tasks"]]


def test_host_vars_satisfy_the_monitoring_playbook(cluster_spec: ClusterSpec, catalog: Catalog) -> None:
    variables = monitoring_host_vars(cluster_spec, catalog, files_dir="/opt/clusterfab/files/abc")
    playbook = yaml.safe_load((PLAYBOOKS / "specs" / "monitoring_argument_specs.yml").read_text())
    options = dict(playbook["monitoring_argument_specs"])
    for role in _roles():
        options.update(_options(role))
    assert _roles() == ["prometheus", "alertmanager", "grafana", "metadata_guard"]
    assert set(variables) <= set(options)
    assert {name for name, spec in options.items() if spec.get("required")} <= set(variables)
    for name, value in variables.items():
        assert isinstance(value, TYPES[options[name]["type"]]), name
        assert value in options[name].get("choices", [value]), name
    assert variables["prometheus_version"] == "2.45.3+ds-2ubuntu0.3"
    # The GPU nodes' record (packages.yaml): one node exporter build on every host.
    assert variables["prometheus_node_exporter_version"] == "1.7.0-1ubuntu0.3"
    assert variables["grafana_key_fingerprint"] == "B53AE77BADB630A683046005963FA27710458545"
    assert variables["alertmanager_smtp_password_secret"] == "llm/alertmanager-smtp"
    # Where Grafana listens is no input: the role binds the loopback on every cloud.
    assert "grafana_http_addr" not in variables
    assert variables["metadata_guard_allowed_users"] == ["root", "prometheus"]


GRAFANA = PLAYBOOKS / "roles" / "grafana"


def grafana_environment(host_vars: dict[str, Any]) -> str:
    """/etc/default/grafana-server as the grafana role writes it from the host's variables over the
    role's defaults and vars (Ansible's precedence for these: extra vars > role vars > role defaults)."""
    variables = {
        **yaml.safe_load((GRAFANA / "defaults" / "main.yml").read_text()),
        **yaml.safe_load((GRAFANA / "vars" / "main.yml").read_text()),
        **host_vars,
        "ansible_managed": "Ansible managed",
    }
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["comment"] = lambda text: f"#\n# {text}\n#"
    template = env.from_string((GRAFANA / "templates" / "grafana-server.default.j2").read_text())
    return template.render(**variables)


@pytest.mark.parametrize("blueprint", [CLUSTER, GCP_CLUSTER], ids=["aws", "gcp"])
def test_grafana_listens_on_the_loopback_only_on_every_cloud(blueprint: Path, catalog: Catalog) -> None:
    """GCP's Grafana listened on all addresses (IAP's TCP forwarding connects to the VM's address), with
    anonymous viewers: any job on the cluster's network could read every dashboard."""
    variables = monitoring_host_vars(spec_of(blueprint), catalog, files_dir="/opt/clusterfab/files/abc")
    settings = [line for line in grafana_environment(variables).splitlines() if not line.startswith("#")]
    assert settings == [
        "GF_SERVER_HTTP_ADDR=127.0.0.1",
        "GF_SERVER_HTTP_PORT=3000",
        "GF_AUTH_ANONYMOUS_ENABLED=true",
        "GF_AUTH_ANONYMOUS_ORG_ROLE=Viewer",
        "GF_USERS_ALLOW_SIGN_UP=false",
        "GF_SECURITY_ADMIN_PASSWORD__FILE=/etc/grafana/admin-password",
        "GF_ANALYTICS_REPORTING_ENABLED=false",
        "GF_ANALYTICS_CHECK_FOR_UPDATES=false",
        "GF_ANALYTICS_CHECK_FOR_PLUGIN_UPDATES=false",
    ]


def test_the_tunnel_forwards_to_where_grafana_listens() -> None:
    role = yaml.safe_load((GRAFANA / "vars" / "main.yml").read_text())
    defaults = yaml.safe_load((GRAFANA / "defaults" / "main.yml").read_text())
    assert (role["__grafana_http_addr"], defaults["grafana_http_port"]) == ("127.0.0.1", 3000)
    assert (GRAFANA_ADDRESS, GRAFANA_PORT) == ("127.0.0.1", 3000)


def test_the_archive_is_reproducible_and_named_by_its_digest(
    cluster_files: MonitoringFiles, tmp_path: Path
) -> None:
    data = archive_bytes(cluster_files)
    assert data == archive_bytes(dict(reversed(list(cluster_files.items()))))
    archive = build_archive(cluster_files, tmp_path)
    assert archive.sha256 == hashlib.sha256(data).hexdigest()
    assert archive.key == f"monitoring/{archive.sha256}.tar.gz"
    assert archive.path.read_bytes() == data


def test_the_boot_script_fetches_and_checks_the_archive_before_the_playbook() -> None:
    boot = NodeBootstrap(
        cloud="aws", cluster="llm", stack="prod", node_group="monitoring", region="us-east-1",
        bucket="b", bundle_key="bundles/x.tar.gz", bundle_sha256="x", ansible_core_version="2.19.14",
        playbook="monitoring.yml", playbook_vars={}, files=FilesArchive("monitoring/abc.tar.gz", "abc"),
    )  # fmt: skip
    script = render_boot_script(boot)
    fetch = script.index('"https://$BUCKET.s3.$REGION.amazonaws.com/$FILES_KEY"')
    check = script.index('echo "$FILES_SHA256  $download" | sha256sum --check --status')
    playbook = script.index('ansible-playbook" -i localhost, -c local monitoring.yml')
    assert fetch < check < playbook
    assert f"readonly FILES_DIR={files_dir('abc')}" in script
    without = render_boot_script(NodeBootstrap(**{**boot.__dict__, "files": None}))
    assert "FILES_KEY" not in without


def test_the_nodes_run_the_counters_file_monitoring_renders() -> None:
    assert (PLAYBOOKS / "roles" / "dcgm" / "files" / "dcgm-counters.csv").read_text() == counters_csv()
