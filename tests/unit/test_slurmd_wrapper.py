"""slurmd's start program (the slurm_node role's clusterfab-slurmd.sh.j2) rendered as Ansible renders it, for
each slurm_node_name_source; the azure one run against a stand-in for Azure's instance metadata service
(CLUSTERFAB_AZURE_IMDS), with slurmd's path pointed at a recorder of its argv."""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import jinja2
import pytest

from tests.conftest import REPO

TEMPLATE = REPO / "playbooks/roles/slurm_node/templates/clusterfab-slurmd.sh.j2"
SERVER = "10.30.0.10:6817"
TAGS_PATH = "/metadata/instance/compute/tagsList?api-version=2021-02-01"
# compute/tagsList as Azure's instance metadata documents it: [{"name": ..., "value": ...}].
TAGS = [
    {"name": "clusterfab-cluster", "value": "llm"},
    {"name": "clusterfab-fabric-unit", "value": "trainers-0"},
]


def render(
    source: str,
    tag: str = "clusterfab-slurm-node",
    *,
    server: str = SERVER,
    cluster: str = "llm",
    name_file: str = "/run/clusterfab-slurm-node",
    claim_conf: str = "/run/clusterfab-slurm-claim.conf",
) -> str:
    """The template as Ansible renders it with these role variables (the role's internal paths included,
    which the Slurm lab gives each of its VMs on one machine)."""
    # Ansible's template module: trim_blocks on (a block tag's own newline goes), trailing newline kept.
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True)
    env.filters["comment"] = lambda text: f"#\n# {text}\n#"
    env.filters["quote"] = shlex.quote
    return env.from_string(TEMPLATE.read_text()).render(
        ansible_managed="Ansible managed",
        slurm_node_name_source=source,
        slurm_node_name_tag=tag,
        slurm_node_conf_server=server,
        slurm_node_cluster_name=cluster,
        __slurm_node_name_file=name_file,
        __slurm_node_claim_conf=claim_conf,
    )


def test_azure_starts_a_dynamic_future_node_of_its_scale_sets_unit() -> None:
    lines = render("azure", "clusterfab-fabric-unit").splitlines()
    assert "imds=${CLUSTERFAB_AZURE_IMDS:-http://169.254.169.254}" in lines
    assert (
        "  curl -fsS --noproxy '*' -H 'Metadata: true' "
        '"$imds/metadata/instance/compute/tagsList?api-version=2021-02-01" 2>/dev/null \\'
    ) in lines
    assert '    if [ "$waited" -ge 600 ]; then' in lines
    assert lines[-1] == (
        'exec /usr/sbin/slurmd --systemd --conf-server 10.30.0.10:6817 -F"$unit" ${SLURMD_OPTIONS:-}'
    )
    # The node's name is slurmctld's to give: nothing writes a name file.
    assert not any("/run/clusterfab-slurm-node" in line for line in lines)


@pytest.mark.parametrize(
    ("source", "lookup"),
    [
        ("aws", '"$imds/latest/meta-data/tags/instance/clusterfab-slurm-node"'),
        ("gcp", '"$metadata/instance/attributes/clusterfab-slurm-node"'),
        ("hostname", "name=$(hostname -s)"),
    ],
)
def test_the_other_sources_run_slurmd_as_the_name_they_read(source: str, lookup: str) -> None:
    text = render(source)
    assert lookup in text
    assert text.splitlines()[-3:] == [
        "printf '%s\\n' \"$name\" > /run/clusterfab-slurm-node",
        "# shellcheck disable=SC2086 # SLURMD_OPTIONS from /etc/default/slurmd is a word list",
        'exec /usr/sbin/slurmd --systemd --conf-server 10.30.0.10:6817 -N "$name" ${SLURMD_OPTIONS:-}',
    ]


@pytest.mark.parametrize("source", ["aws", "gcp", "azure", "hostname"])
def test_the_program_is_valid_shell(source: str, tmp_path: Path) -> None:
    script = tmp_path / "clusterfab-slurmd"
    script.write_text(render(source, "clusterfab-fabric-unit"))
    subprocess.run(["sh", "-n", str(script)], check=True)


class _Imds(BaseHTTPRequestHandler):
    requests: ClassVar[list[tuple[str, str | None, str | None]]] = []

    def do_GET(self) -> None:
        self.requests.append(
            (self.path, self.headers.get("Metadata"), self.headers.get("Proxy-Authorization"))
        )
        ok = self.path == TAGS_PATH and self.headers.get("Metadata") == "true"
        data = json.dumps(TAGS if ok else {"error": "bad request"}).encode()
        self.send_response(200 if ok else 400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def imds() -> Iterator[str]:
    _Imds.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Imds)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_azure_program_execs_slurmd_with_the_units_feature(imds: str, tmp_path: Path) -> None:
    recorder = tmp_path / "slurmd"
    recorder.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/argv\n')
    recorder.chmod(0o755)
    script = tmp_path / "clusterfab-slurmd"
    script.write_text(render("azure", "clusterfab-fabric-unit").replace("/usr/sbin/slurmd", str(recorder)))
    ran = subprocess.run(
        ["sh", str(script)],
        env={"PATH": "/usr/bin:/bin", "CLUSTERFAB_AZURE_IMDS": imds, "http_proxy": "http://127.0.0.1:9"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "argv").read_text().splitlines() == [
        "--systemd",
        "--conf-server",
        "10.30.0.10:6817",
        "-Ftrainers-0",
    ]
    # One read, with the Metadata header, straight to the service (a proxy in the environment is bypassed).
    assert _Imds.requests == [(TAGS_PATH, "true", None)]
