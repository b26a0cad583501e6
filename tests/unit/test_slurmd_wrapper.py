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
ADDRESS_PATH = (
    "/metadata/instance/network/interface/0/ipv4/ipAddress/0/privateIpAddress"
    "?api-version=2021-02-01&format=text"
)
ADDRESS = "10.30.8.4"
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


def test_azure_claims_a_node_of_its_scale_sets_unit_and_runs_slurmd_as_it() -> None:
    lines = render("azure", "clusterfab-fabric-unit").splitlines()
    assert "imds=${CLUSTERFAB_AZURE_IMDS:-http://169.254.169.254}" in lines
    assert (
        "  curl -fsS --noproxy '*' -H 'Metadata: true' "
        '"$imds/metadata/instance/compute/tagsList?api-version=2021-02-01" 2>/dev/null \\'
    ) in lines
    assert '    if [ "$waited" -ge 600 ]; then' in lines
    start = lines.index("unit=$name")
    assert lines[start : start + 3] == ["unit=$name", 'name=""', "host=$(hostname -s)"]
    assert (
        "address=$(curl -fsS --noproxy '*' -H 'Metadata: true' "
        '"$imds/metadata/instance/network/interface/0/ipv4/ipAddress/0/privateIpAddress'
        '?api-version=2021-02-01&format=text" 2>/dev/null || true)'
    ) in lines
    # The client configuration the claim runs with (configless: slurmd has fetched no slurm.conf yet).
    conf = lines.index("conf=/run/clusterfab-slurm-claim.conf")
    assert lines[conf : conf + 10] == [
        "conf=/run/clusterfab-slurm-claim.conf",
        "cat > \"$conf\" <<'CONF'",
        "ClusterName=llm",
        "SlurmctldHost=10.30.0.10",
        "SlurmctldPort=6817",
        "AuthType=auth/munge",
        "CONF",
        "ctl() {",
        '  SLURM_CONF=$conf "$@"',
        "}",
    ]
    assert "  if nodes=$(ctl sinfo -a -N -h -o '%N %n %o %f %t' 2>&1); then" in lines
    assert (
        '    if ctl scontrol update NodeName="$node" NodeAddr="$address" NodeHostname="$host"; then'
    ) in lines
    assert "      sleep 2" in lines
    assert ('      if [ "$(ctl sinfo -a -N -h -n "$node" -o \'%n\' | head -n 1)" = "$host" ]; then') in lines
    assert '  if [ "$waited" -ge 600 ]; then' in lines
    assert lines[-3:] == [
        "printf '%s\\n' \"$name\" > /run/clusterfab-slurm-node",
        "# shellcheck disable=SC2086 # SLURMD_OPTIONS from /etc/default/slurmd is a word list",
        'exec /usr/sbin/slurmd --systemd --conf-server 10.30.0.10:6817 -N "$name" ${SLURMD_OPTIONS:-}',
    ]
    assert not any("-F" in line for line in lines if not line.startswith("#"))


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
        bodies = {TAGS_PATH: json.dumps(TAGS), ADDRESS_PATH: ADDRESS}
        ok = self.path in bodies and self.headers.get("Metadata") == "true"
        data = (bodies[self.path] if ok else json.dumps({"error": "bad request"})).encode()
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


# Stand-ins for the Slurm client commands: slurmctld's nodes in a file ("name host address features" lines),
# sinfo answering the two queries the program makes, scontrol update writing the file (or, for the node in
# $RIVAL_NODE, a rival VM's host name: another VM's claim that came later), and each call logged with the
# SLURM_CONF it ran with.
SINFO = """#!/bin/sh
echo "sinfo $* SLURM_CONF=$SLURM_CONF" >> "$STATE.calls"
case "$*" in
  *'-n '*) awk -v n="$5" '$1 == n { print $2 }' "$STATE" ;;
  *) cat "$STATE" ;;
esac
"""
SCONTROL = """#!/bin/sh
echo "scontrol $* SLURM_CONF=$SLURM_CONF" >> "$STATE.calls"
node=${2#NodeName=} address=${3#NodeAddr=} host=${4#NodeHostname=}
[ "$node" = "${RIVAL_NODE:-}" ] && host=rival-vmss000009
awk -v n="$node" -v a="$address" -v h="$host" '$1 == n { $3 = a; if (h != "") $2 = h } { print }' \
  "$STATE" > "$STATE.new" && mv "$STATE.new" "$STATE"
"""
UNCLAIMED = [
    "trainers-0 trainers-0 trainers-0 trainers-0",
    "trainers-1 trainers-1 trainers-1 trainers-0",
    "trainers-2 trainers-2 trainers-2 trainers-1",
]


def _run_azure(
    imds: str, tmp_path: Path, nodes: list[str], host: str, rival: str = ""
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The azure program on a VM called `host`, against the stand-in metadata service and Slurm commands."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    programs = {
        "slurmd": f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/argv\n',
        "sinfo": SINFO,
        "scontrol": SCONTROL,
        "hostname": f"#!/bin/sh\necho {host}\n",
        "sleep": "#!/bin/sh\n",
    }
    for name, text in programs.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    state = tmp_path / "nodes"
    state.write_text("".join(f"{line}\n" for line in nodes))
    script = tmp_path / "clusterfab-slurmd"
    text = render(
        "azure",
        "clusterfab-fabric-unit",
        name_file=f"{tmp_path}/name",
        claim_conf=f"{tmp_path}/claim.conf",
    )
    script.write_text(text.replace("/usr/sbin/slurmd", str(bin_dir / "slurmd")))
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "CLUSTERFAB_AZURE_IMDS": imds,
        "http_proxy": "http://127.0.0.1:9",
        "STATE": str(state),
        "RIVAL_NODE": rival,
    }
    ran = subprocess.run(
        ["sh", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return ran, state


def _calls(state: Path, tmp_path: Path) -> list[str]:
    text = Path(f"{state}.calls").read_text() if Path(f"{state}.calls").exists() else ""
    return text.replace(f"{tmp_path}/claim.conf", "CLAIM").splitlines()


def test_the_azure_program_claims_a_free_node_of_its_unit(imds: str, tmp_path: Path) -> None:
    # cksum of trainers-vmss000005 is 1247159107: odd, so of its unit's two free nodes it takes the second.
    ran, state = _run_azure(imds, tmp_path, UNCLAIMED, "trainers-vmss000005")
    assert ran.returncode == 0, ran.stderr
    assert (
        ran.stdout
        == "this VM (trainers-vmss000005, 10.30.8.4) claimed node trainers-1 of fabric unit trainers-0\n"
    )
    assert (tmp_path / "argv").read_text().splitlines() == [
        "--systemd",
        "--conf-server",
        "10.30.0.10:6817",
        "-N",
        "trainers-1",
    ]
    assert (tmp_path / "name").read_text() == "trainers-1\n"
    assert state.read_text().splitlines() == [
        "trainers-0 trainers-0 trainers-0 trainers-0",
        "trainers-1 trainers-vmss000005 10.30.8.4 trainers-0",
        "trainers-2 trainers-2 trainers-2 trainers-1",
    ]
    assert _calls(state, tmp_path) == [
        "sinfo -a -N -h -o %N %n %o %f %t SLURM_CONF=CLAIM",
        "scontrol update NodeName=trainers-1 NodeAddr=10.30.8.4 NodeHostname=trainers-vmss000005"
        " SLURM_CONF=CLAIM",
        "sinfo -a -N -h -n trainers-1 -o %n SLURM_CONF=CLAIM",
    ]
    assert (tmp_path / "claim.conf").read_text() == (
        "ClusterName=llm\nSlurmctldHost=10.30.0.10\nSlurmctldPort=6817\nAuthType=auth/munge\n"
    )
    # The tags, then the address: each with the Metadata header, straight to the service (no proxy).
    assert _Imds.requests == [(TAGS_PATH, "true", None), (ADDRESS_PATH, "true", None)]


def test_the_azure_program_takes_another_node_when_a_rival_claim_came_later(
    imds: str, tmp_path: Path
) -> None:
    ran, state = _run_azure(imds, tmp_path, UNCLAIMED, "trainers-vmss000005", rival="trainers-1")
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == "node trainers-1 was claimed by another VM at the same moment; trying another\n"
    assert (
        ran.stdout
        == "this VM (trainers-vmss000005, 10.30.8.4) claimed node trainers-0 of fabric unit trainers-0\n"
    )
    assert (tmp_path / "name").read_text() == "trainers-0\n"
    assert state.read_text().splitlines()[:2] == [
        "trainers-0 trainers-vmss000005 10.30.8.4 trainers-0",
        "trainers-1 rival-vmss000009 10.30.8.4 trainers-0",
    ]


def test_the_azure_program_takes_back_the_node_holding_its_host_name(imds: str, tmp_path: Path) -> None:
    claimed = ["trainers-0 trainers-vmss000003 10.30.8.4 trainers-0", *UNCLAIMED[1:]]
    ran, state = _run_azure(imds, tmp_path, claimed, "trainers-vmss000003")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "this VM (trainers-vmss000003) is node trainers-0 of fabric unit trainers-0\n"
    assert (tmp_path / "argv").read_text().splitlines()[-2:] == ["-N", "trainers-0"]
    # No new claim: one look, no update.
    assert _calls(state, tmp_path) == ["sinfo -a -N -h -o %N %n %o %f %t SLURM_CONF=CLAIM"]


def test_the_azure_program_fails_when_its_unit_has_no_free_node(imds: str, tmp_path: Path) -> None:
    taken = [
        "trainers-0 trainers-vmss000000 10.30.8.5 trainers-0",
        "trainers-1 trainers-vmss000001 10.30.8.6 trainers-0",
        UNCLAIMED[2],
    ]
    ran, state = _run_azure(imds, tmp_path, taken, "trainers-vmss000002")
    assert ran.returncode == 1
    assert ran.stderr == (
        "no free node of fabric unit trainers-0 in slurmctld: every node with Feature=trainers-0 is "
        "claimed by another VM or is an elastic node Slurm has not powered up\n"
    )
    assert not (tmp_path / "argv").exists()
    assert state.read_text().splitlines() == taken


def test_the_azure_program_takes_a_node_slurm_powers_up_never_a_powered_down_one(
    imds: str, tmp_path: Path
) -> None:
    """An elastic unit: the resume program grew the scale set by one VM for trainers-1, which Slurm powers
    up (`idle#`); trainers-0 is powered down (`idle~`) and trainers-2 on its way there (`idle%`)."""
    elastic = [
        "trainers-0 trainers-0 trainers-0 trainers-0 idle~",
        "trainers-1 trainers-1 trainers-1 trainers-0 idle#",
        "trainers-2 trainers-2 trainers-2 trainers-0 idle%",
    ]
    ran, state = _run_azure(imds, tmp_path, elastic, "trainers-vmss000007")
    assert ran.returncode == 0, ran.stderr
    assert (
        ran.stdout
        == "this VM (trainers-vmss000007, 10.30.8.4) claimed node trainers-1 of fabric unit trainers-0\n"
    )
    assert state.read_text().splitlines() == [
        elastic[0],
        "trainers-1 trainers-vmss000007 10.30.8.4 trainers-0 idle#",
        elastic[2],
    ]
    # With no node powering up, the VM finds none to take.
    powered_down = [line.replace("idle#", "idle~") for line in elastic]
    (tmp_path / "again").mkdir()
    ran, state = _run_azure(imds, tmp_path / "again", powered_down, "trainers-vmss000008")
    assert ran.returncode == 1
    assert ran.stderr.endswith("is claimed by another VM or is an elastic node Slurm has not powered up\n")
    assert state.read_text().splitlines() == powered_down
