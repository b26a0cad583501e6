"""The spot interruption watcher (playbooks/roles/slurm_node/files/clusterfab_spot_watch.py) against a local
stand-in for EC2's instance metadata service (IMDSv2 tokens, 404 until a notice), Compute Engine's
metadata server (Metadata-Flavor, wait_for_change with last_etag and timeout_sec) and Azure's (Metadata:
true, Scheduled Events, compute/name), with a stand-in scontrol (and sinfo, which lists the nodes' host
names) on PATH that records its exact argv."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from clusterfab.scheduler.slurm.nodes.reconcile import INTERRUPTED_PREFIX
from tests.conftest import REPO
from tests.factories import load_program

PROGRAM = REPO / "playbooks/roles/slurm_node/files/clusterfab_spot_watch.py"
NODE = "h100-3"
NOTICE = {"action": "terminate", "time": "2026-11-26T19:42:00Z"}
REASON = "clusterfab: spot interruption notice (terminate at 2026-11-26T19:42:00Z)"
SCONTROL = """#!{python}
import json, os, sys
root = os.environ["FAKE_SCONTROL_DIR"]
with open(os.path.join(root, "argv.jsonl"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
failures = os.path.join(root, "fail")
if os.path.exists(failures):
    os.remove(failures)
    print("slurm_update error: Unable to contact slurm controller", file=sys.stderr)
    sys.exit(1)
"""

SINFO = """#!{python}
import json, os, sys
root = os.environ["FAKE_SCONTROL_DIR"]
with open(os.path.join(root, "sinfo-argv.jsonl"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
listing = os.path.join(root, "sinfo-out")
if os.path.exists(listing):
    sys.stdout.write(open(listing).read())
"""
AZURE_EVENTS = "/metadata/scheduledevents?api-version=2020-07-01"
AZURE_NAME = "/metadata/instance/compute/name?api-version=2021-02-01&format=text"
VM = "trainers_4"
"""This VM's name (compute/name): a Uniform scale set's instance, <scale set>_<instance id>."""
NOT_BEFORE = "Mon, 30 Nov 2026 12:00:30 GMT"
AZURE_REASON = f"clusterfab: spot interruption notice (Preempt at {NOT_BEFORE})"


def azure_event(
    kind: str, resources: list[str], event_id: str = "A123BC45-1234-5678-AB90-ABCDEF123456"
) -> dict[str, Any]:
    """One event as Scheduled Events documents it (api-version 2020-07-01)."""
    return {
        "EventId": event_id,
        "EventStatus": "Scheduled",
        "EventType": kind,
        "ResourceType": "VirtualMachine",
        "Resources": resources,
        "NotBefore": NOT_BEFORE,
        "Description": "",
        "EventSource": "Platform",
        "DurationInSeconds": -1,
    }


spot = load_program("clusterfab_spot_watch", PROGRAM)


class Metadata:
    """What the stand-in serves, and every request it got: (method, path with query, headers)."""

    def __init__(self) -> None:
        self.notice: dict[str, str] | None = None
        self.notice_after = 0
        """Answer 404 to this many instance-action reads before the notice shows."""
        self.rebalance: dict[str, str] | None = None
        self.preempted = "FALSE"
        self.tokens: set[str] = set()
        self.issued = 0
        self.expire_after_first_get = False
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.changed = threading.Condition()
        self.azure_events: list[list[dict[str, Any]]] = []
        """Azure: the Events of each Scheduled Events read in turn (the last one repeats)."""

    def flip(self, value: str) -> None:
        with self.changed:
            self.preempted = value
            self.changed.notify_all()

    def etag(self) -> str:
        return hashlib.sha1(self.preempted.encode()).hexdigest()[:16]


class Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, *_: Any) -> None:
        pass

    def _send(self, status: int, body: str = "", headers: dict[str, str] | None = None) -> None:
        data = body.encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self) -> None:
        state: Metadata = self.server.state
        state.requests.append(("PUT", self.path, {k.lower(): v for k, v in self.headers.items()}))
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
        if self.path != "/latest/api/token" or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            self._send(400)
            return
        state.issued += 1
        token = f"token-{state.issued}"
        state.tokens.add(token)
        self._send(200, token, {"X-aws-ec2-metadata-token-ttl-seconds": ttl})

    def do_GET(self) -> None:
        state: Metadata = self.server.state
        state.requests.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}))
        url = urllib.parse.urlsplit(self.path)
        if url.path.startswith("/computeMetadata/"):
            self._gce(state, url)
            return
        if url.path.startswith("/metadata/"):
            self._azure(state)
            return
        token = self.headers.get("X-aws-ec2-metadata-token", "")
        if token not in state.tokens:
            self._send(401)
            return
        if state.expire_after_first_get:
            state.expire_after_first_get = False
            state.tokens.clear()
        if url.path == "/latest/meta-data/spot/instance-action":
            reads = sum(1 for _, p, _ in state.requests if p == url.path)
            shown = state.notice is not None and reads > state.notice_after
            self._send(200, json.dumps(state.notice)) if shown else self._send(404)
        elif url.path == "/latest/meta-data/events/recommendations/rebalance" and state.rebalance:
            self._send(200, json.dumps(state.rebalance))
        else:
            self._send(404)

    def _azure(self, state: Metadata) -> None:
        if self.headers.get("Metadata") != "true":
            self._send(400, json.dumps({"error": "Bad request. Required metadata header not specified"}))
        elif self.path == AZURE_NAME:
            self._send(200, VM)
        elif self.path == AZURE_EVENTS:
            reads = sum(1 for _, p, _ in state.requests if p == AZURE_EVENTS)
            events = state.azure_events[min(reads, len(state.azure_events)) - 1] if state.azure_events else []
            self._send(200, json.dumps({"DocumentIncarnation": reads, "Events": events}))
        else:
            self._send(404)

    def _gce(self, state: Metadata, url: urllib.parse.SplitResult) -> None:
        if self.headers.get("Metadata-Flavor") != "Google":
            self._send(403)
            return
        if url.path != "/computeMetadata/v1/instance/preempted":
            self._send(404)
            return
        query = dict(urllib.parse.parse_qsl(url.query))
        if query.get("wait_for_change") == "true":
            deadline = time.monotonic() + float(query.get("timeout_sec", "3600"))
            with state.changed:
                while state.etag() == query.get("last_etag") and time.monotonic() < deadline:
                    state.changed.wait(deadline - time.monotonic())
        self._send(200, state.preempted, {"ETag": state.etag()})


@pytest.fixture
def metadata() -> Iterator[tuple[Metadata, str]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = Metadata()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.state, f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A node: the stand-in scontrol first on PATH, the node-name file slurmd's start program writes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(SCONTROL.format(python=sys.executable))
    scontrol.chmod(0o755)
    sinfo = bin_dir / "sinfo"
    sinfo.write_text(SINFO.format(python=sys.executable))
    sinfo.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_SCONTROL_DIR", str(tmp_path))
    (tmp_path / "node-name").write_text(f"{NODE}\n")
    return tmp_path


def config(root: Path, endpoint: str, cloud: str = "aws", **extra: str) -> dict[str, str]:
    key = {
        "aws": "CLUSTERFAB_SPOT_IMDS",
        "gcp": "CLUSTERFAB_SPOT_GCE_METADATA",
        "azure": "CLUSTERFAB_SPOT_AZURE_IMDS",
    }[cloud]
    return {
        **spot.DEFAULTS,
        "CLUSTERFAB_SPOT_CLOUD": cloud,
        "CLUSTERFAB_SPOT_INTERVAL": "0.01",
        "CLUSTERFAB_SPOT_NODE_FILE": str(root / "node-name"),
        "CLUSTERFAB_SPOT_STATE_DIR": str(root / "state"),
        "CLUSTERFAB_SPOT_LOG": str(root / "watch.log"),
        key: endpoint,
        **extra,
    }


def scontrol_calls(root: Path) -> list[list[str]]:
    log = root / "argv.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def down(reason: str = REASON) -> list[list[str]]:
    """Drained, then DOWN: drained first, so that its still running slurmd cannot return it to service."""
    return [
        ["update", f"NodeName={NODE}", f"State={state}", f"Reason={reason}"] for state in ("DRAIN", "DOWN")
    ]


def test_the_program_sets_its_node_down_once_on_an_ec2_notice(
    metadata: tuple[Metadata, str], node: Path
) -> None:
    """Run as the service runs it: 404 for two looks, then the notice; every later look is quiet."""
    state, endpoint = metadata
    state.notice, state.notice_after = NOTICE, 2
    ran = subprocess.run(
        [sys.executable, str(PROGRAM), "--rounds", "6"],
        env={
            "PATH": f"{node / 'bin'}:/usr/bin:/bin",
            "FAKE_SCONTROL_DIR": str(node),
            "AWS_EC2_METADATA_SERVICE_ENDPOINT": endpoint,
            "CLUSTERFAB_SPOT_CONFIG": str(node / "none"),
            **{k: v for k, v in config(node, endpoint).items() if k != "CLUSTERFAB_SPOT_IMDS"},
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert scontrol_calls(node) == down()
    # IMDSv2: one token, asked for with its TTL, carried by every read.
    puts = [r for r in state.requests if r[0] == "PUT"]
    assert [(p, h["x-aws-ec2-metadata-token-ttl-seconds"]) for _, p, h in puts] == [
        ("/latest/api/token", "21600")
    ]
    gets = [r for r in state.requests if r[0] == "GET"]
    assert all(h.get("x-aws-ec2-metadata-token") == "token-1" for _, _, h in gets)
    assert [p for _, p, _ in gets].count("/latest/meta-data/spot/instance-action") == 6
    assert f"{NODE}: set DOWN: {REASON}" in (node / "watch.log").read_text()


def test_an_expired_token_is_renewed(metadata: tuple[Metadata, str], node: Path) -> None:
    state, endpoint = metadata
    state.notice, state.notice_after, state.expire_after_first_get = NOTICE, 1, True
    assert spot.watch(config(node, endpoint), rounds=2) == 0
    assert scontrol_calls(node) == down()
    assert [p for m, p, _ in state.requests if m == "PUT"] == ["/latest/api/token"] * 2
    # The read refused (401) was made again with the new token.
    assert state.requests[-1][2]["x-aws-ec2-metadata-token"] == "token-2"


def test_a_rebalance_recommendation_is_logged_once_and_not_acted_on(
    metadata: tuple[Metadata, str], node: Path
) -> None:
    state, endpoint = metadata
    state.rebalance = {"noticeTime": "2026-11-26T19:30:00Z"}
    spot.watch(config(node, endpoint), rounds=3)
    assert scontrol_calls(node) == []
    log = (node / "watch.log").read_text()
    assert log.count("rebalance recommendation (noticeTime 2026-11-26T19:30:00Z): logged, not acted on") == 1


def test_a_failed_scontrol_is_tried_again_and_a_done_notice_never_again(
    metadata: tuple[Metadata, str], node: Path
) -> None:
    state, endpoint = metadata
    state.notice = NOTICE
    (node / "fail").write_text("")  # slurmctld unreachable once
    spot.watch(config(node, endpoint), rounds=4)
    drain, set_down = down()
    assert scontrol_calls(node) == [drain, drain, set_down]  # the first failed: the notice is acted on again
    # A restarted watcher (the service restarted, the machine still up) remembers the notice it acted on.
    spot.watch(config(node, endpoint), rounds=2)
    assert scontrol_calls(node) == [drain, drain, set_down]
    assert json.loads((node / "state" / f"acted-{NODE}.json").read_text()) == NOTICE


def test_a_notice_before_slurmd_has_a_name_is_acted_on_once_it_has_one(
    metadata: tuple[Metadata, str], node: Path
) -> None:
    state, endpoint = metadata
    state.notice = NOTICE
    (node / "node-name").unlink()
    spot.watch(config(node, endpoint), rounds=2)
    assert scontrol_calls(node) == []
    (node / "node-name").write_text(f"{NODE}\n")
    spot.watch(config(node, endpoint), rounds=1)
    assert scontrol_calls(node) == down()


def test_unreachable_metadata_and_a_bad_notice_are_logged_not_raised(
    metadata: tuple[Metadata, str], node: Path
) -> None:
    assert spot.watch(config(node, "http://127.0.0.1:9", CLUSTERFAB_SPOT_HTTP_TIMEOUT="0.5"), rounds=2) == 0
    state, endpoint = metadata
    state.notice = {"what": "not the documented shape"}  # type: ignore[dict-item]
    assert spot.watch(config(node, endpoint), rounds=1) == 0
    assert scontrol_calls(node) == []
    log = (node / "watch.log").read_text()
    assert "GET http://127.0.0.1:9/latest/api/token" not in log  # the PUT failed first
    assert "PUT http://127.0.0.1:9/latest/api/token" in log
    assert "spot/instance-action is not the documented JSON" in log


def test_gce_preemption_is_waited_for_and_acted_on(metadata: tuple[Metadata, str], node: Path) -> None:
    state, endpoint = metadata
    cfg = config(node, endpoint, cloud="gcp", CLUSTERFAB_SPOT_GCE_WAIT="30")
    watcher = threading.Thread(target=spot.watch, args=(cfg, 3))
    watcher.start()
    deadline = time.monotonic() + 10
    while not any("wait_for_change" in p for _, p, _ in state.requests) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert scontrol_calls(node) == []  # still waiting on the server
    state.flip("TRUE")
    watcher.join(timeout=20)
    assert not watcher.is_alive()
    calls = scontrol_calls(node)
    assert [call[:3] for call in calls] == [call[:3] for call in down()]
    assert all(c[3].startswith("Reason=clusterfab: spot interruption notice (preempted at 20") for c in calls)
    paths = [p for _, p, _ in state.requests]
    etag_false = hashlib.sha1(b"FALSE").hexdigest()[:16]
    assert paths[:2] == [
        "/computeMetadata/v1/instance/preempted",
        f"/computeMetadata/v1/instance/preempted?wait_for_change=true&last_etag={etag_false}&timeout_sec=30",
    ]
    assert all(h.get("metadata-flavor") == "Google" for _, _, h in state.requests)


def test_the_reason_is_safe_for_scontrol_and_short() -> None:
    assert spot.Notice("terminate", "2026-11-26T19:42:00Z").reason == REASON
    odd = spot.Notice("stop", "x'\"$(reboot)" + "9" * 300).reason
    assert odd.startswith("clusterfab: spot interruption notice (stop at x (reboot)999")
    assert len(odd) == 200
    assert spot.REASON_PREFIX == INTERRUPTED_PREFIX  # the controller knows the node by it


def sinfo_calls(root: Path) -> list[list[str]]:
    log = root / "sinfo-argv.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_an_azure_preempt_event_for_this_vm_sets_its_future_node_down(
    metadata: tuple[Metadata, str], node: Path
) -> None:
    """Run as the service runs it, the metadata service's address from CLUSTERFAB_AZURE_IMDS: no event,
    then a Preempt for another VM of the scale set and a Freeze for this one (both ignored), then a Preempt
    that names this VM. The node is the one whose NodeHostname is this host (a dynamic future node)."""
    state, endpoint = metadata
    state.azure_events = [
        [],
        [azure_event("Preempt", ["trainers_7"]), azure_event("Freeze", [VM], "F1")],
        [azure_event("Preempt", ["trainers_7", VM])],
    ]
    host = socket.gethostname().split(".")[0]
    # sinfo -N lists a node once per partition; a FUTURE node no slurmd took is not listed.
    (node / "sinfo-out").write_text(f"trainers-0 trainers-vmss000002\n{NODE} {host}\n{NODE} {host}\n")
    (node / "node-name").unlink()  # nothing writes one on Azure
    ran = subprocess.run(
        [sys.executable, str(PROGRAM), "--rounds", "4"],
        env={
            "PATH": f"{node / 'bin'}:/usr/bin:/bin",
            "FAKE_SCONTROL_DIR": str(node),
            "CLUSTERFAB_AZURE_IMDS": endpoint,
            "CLUSTERFAB_SPOT_CONFIG": str(node / "none"),
            **{
                k: v
                for k, v in config(node, endpoint, cloud="azure").items()
                if k != "CLUSTERFAB_SPOT_AZURE_IMDS"
            },
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert scontrol_calls(node) == down(AZURE_REASON)
    assert sinfo_calls(node) == [["-N", "-h", "-o", "%N %n"]]
    assert [(m, p) for m, p, _ in state.requests] == [
        ("GET", AZURE_EVENTS),
        ("GET", AZURE_EVENTS),
        ("GET", AZURE_NAME),
        ("GET", AZURE_EVENTS),
        ("GET", AZURE_EVENTS),
    ]
    assert all(h.get("metadata") == "true" for _, _, h in state.requests)
    assert f"{NODE}: set DOWN: {AZURE_REASON}" in (node / "watch.log").read_text()


def test_an_azure_notice_before_the_node_registered_is_acted_on_once_it_has(
    metadata: tuple[Metadata, str], node: Path
) -> None:
    state, endpoint = metadata
    state.azure_events = [[azure_event("Preempt", [VM])]]
    cfg = config(node, endpoint, cloud="azure")
    spot.watch(cfg, rounds=2)
    assert scontrol_calls(node) == []
    assert len(sinfo_calls(node)) == 2  # asked again at each look
    host = socket.gethostname().split(".")[0]
    (node / "sinfo-out").write_text(f"{NODE} {host}\n")
    spot.watch(cfg, rounds=2)
    assert scontrol_calls(node) == down(AZURE_REASON)
    # Acted on once: the second look of that watch found the notice done.
    assert json.loads((node / "state" / f"acted-{NODE}.json").read_text()) == {
        "action": "Preempt",
        "time": NOT_BEFORE,
    }


def test_an_azure_answer_of_another_shape_is_logged_not_raised(
    metadata: tuple[Metadata, str], node: Path
) -> None:
    state, endpoint = metadata
    state.azure_events = [[{"EventType": "Preempt"}]]
    assert spot.watch(config(node, endpoint, cloud="azure"), rounds=1) == 0
    assert scontrol_calls(node) == []
    assert "scheduledevents is not the documented JSON" in (node / "watch.log").read_text()
