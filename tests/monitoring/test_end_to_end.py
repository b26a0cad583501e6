"""A rule firing end to end: a real Prometheus (Debian trixie's 2.53) on the rendered configuration scrapes
a fake dcgm-exporter that reports Xid 79 on one GPU, fires GpuXidFallenOffTheBus, hands it to a real
Alertmanager on the rendered configuration, and Alertmanager e-mails it to the blueprint's recipients
through a local SMTP sink.

Test-only changes to the rendered files: discovery reads a file_sd target file (render's own option)
instead of the EC2 API; scrapes, evaluations and Alertmanager's group wait run every second; the mail relay
is the local sink (no TLS, no login). Everything else is as rendered.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import socketserver
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import yaml

from clusterfab.catalog import Catalog
from clusterfab.monitoring import render_monitoring, write_files
from clusterfab.spec import ClusterSpec
from tests.factories import TODAY
from tests.labs import require
from tests.monitoring import tools
from tests.monitoring.conftest import STACK

SUITE = tools.NEWEST
GPU_LABELS = (
    'gpu="{gpu}",UUID="GPU-{gpu}",pci_bus_id="00000000:{gpu}3:00.0",device="nvidia{gpu}",'
    'modelName="NVIDIA H100 80GB HBM3",Hostname="ip-10-20-0-7",DCGM_FI_DRIVER_VERSION="580.95.05"'
)


def exporter_text() -> str:
    """What dcgm-exporter 4.4.1-4.6.0 serves (internal/pkg/rendermetrics): 8 GPUs, Xid 79 on GPU 3."""
    lines = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    lines += [f"DCGM_FI_DEV_GPU_TEMP{{{GPU_LABELS.format(gpu=g)}}} 41" for g in range(8)]
    lines += [
        "# HELP DCGM_EXP_XID_ERRORS_COUNT reported XIDs during last window",
        "# TYPE DCGM_EXP_XID_ERRORS_COUNT counter",
        f'DCGM_EXP_XID_ERRORS_COUNT{{{GPU_LABELS.format(gpu=3)},window_size_in_ms="300000",xid="79"}} 1',
    ]
    return "\n".join(lines) + "\n"


class _Exporter(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = exporter_text().encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class _Smtp(socketserver.StreamRequestHandler):
    """Just enough SMTP for Alertmanager's client: EHLO, MAIL, RCPT, DATA, QUIT."""

    received: ClassVar[list[str]] = []

    def reply(self, line: str) -> None:
        self.wfile.write((line + "\r\n").encode())

    def handle(self) -> None:
        self.reply("220 sink ESMTP")
        while line := self.rfile.readline().decode(errors="replace").strip():
            verb = line.split(" ", 1)[0].upper()
            if verb == "EHLO":
                self.reply("250-sink")
                self.reply("250 8BITMIME")
            elif verb == "DATA":
                self.reply("354 go ahead")
                message = []
                while (data := self.rfile.readline().decode(errors="replace")) not in (".\r\n", ""):
                    message.append(data)
                _Smtp.received.append("".join(message))
                self.reply("250 queued")
            elif verb == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("250 ok")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _serving(server: socketserver.BaseServer) -> Iterator[None]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def _daemon(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield process
        finally:
            process.terminate()
            process.wait(timeout=20)


def _until(check: Callable[[], Any], what: str, logs: list[Path], seconds: float = 40) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            found = check()
        except OSError:
            found = None
        if found:
            return found
        time.sleep(0.5)
    tails = "\n".join(f"--- {log.name}\n{log.read_text()[-3000:]}" for log in logs if log.exists())
    raise AssertionError(f"timed out waiting for {what}\n{tails}")


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def _alertmanager_argv(binary: Path, *args: str) -> list[str]:
    """Debian's Alertmanager reads its default templates from /usr/share/prometheus/alertmanager (it does
    not embed them): run it in a private mount namespace where the unpacked package's files are there."""
    require(
        shutil.which("unshare") is not None and os.geteuid() == 0,
        "Debian's Alertmanager needs its templates at /usr/share/prometheus: needs root and unshare",
    )
    share = binary.parent.parent / "share" / "prometheus"
    script = (
        f"mount -t tmpfs none /usr/share && mkdir -p /usr/share/prometheus && "
        f'mount --bind {shlex.quote(str(share))} /usr/share/prometheus && exec "$0" "$@"'
    )
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(binary), *args]


def _adapt(out: Path, *, exporter: int, alertmanager: int, smtp: int) -> None:
    """The test-only changes named in the module docstring."""
    targets = [
        {"targets": [f"127.0.0.1:{exporter}"], "labels": {"instance": "i-0abc", "node_group": "trainers"}}
    ]
    for job in ("dcgm", "node"):
        (out / "targets" / f"{job}.json").write_text(json.dumps(targets))
    config = yaml.safe_load((out / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    config["alerting"]["alertmanagers"][0]["static_configs"] = [{"targets": [f"127.0.0.1:{alertmanager}"]}]
    (out / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    am = yaml.safe_load((out / "alertmanager.yml").read_text())
    am["global"] = {
        "smtp_smarthost": f"127.0.0.1:{smtp}",
        "smtp_from": am["global"]["smtp_from"],
        "smtp_require_tls": False,
    }
    am["route"].update(group_wait="1s", group_interval="1s")
    (out / "alertmanager.yml").write_text(yaml.safe_dump(am, sort_keys=False))


def test_xid_79_fires_in_a_real_prometheus_and_reaches_the_inbox(
    cluster_spec: ClusterSpec, catalog: Catalog, tmp_path: Path
) -> None:
    prometheus, alertmanager = tools.tool(SUITE, "prometheus"), tools.tool(SUITE, "prometheus-alertmanager")
    out = tmp_path / "out"
    (out / "targets").mkdir(parents=True)
    files = render_monitoring(
        cluster_spec, catalog, stack=STACK, project=None, today=TODAY, file_sd_dir=str(out / "targets")
    )
    write_files(files, out)
    ports = {name: _port() for name in ("prometheus", "alertmanager")}
    exporter = ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    sink = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Smtp)
    _Smtp.received = []
    _adapt(
        out,
        exporter=exporter.server_address[1],
        alertmanager=ports["alertmanager"],
        smtp=sink.server_address[1],
    )
    logs = [tmp_path / "prometheus.log", tmp_path / "alertmanager.log"]
    am_args = [
        f"--config.file={out / 'alertmanager.yml'}",
        f"--storage.path={tmp_path / 'am'}",
        f"--web.listen-address=127.0.0.1:{ports['alertmanager']}",
        "--cluster.listen-address=",
    ]
    prometheus_args = [
        str(prometheus),
        f"--config.file={out / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{ports['prometheus']}",
    ]
    with (
        _serving(exporter),
        _serving(sink),
        _daemon(_alertmanager_argv(alertmanager, *am_args), logs[1]),
        _daemon(prometheus_args, logs[0]),
    ):
        api = f"http://127.0.0.1:{ports['prometheus']}/api/v1"

        def firing() -> list[dict[str, Any]]:
            alerts = _get(f"{api}/alerts")["data"]["alerts"]
            return [a for a in alerts if a["state"] == "firing"]

        alerts = _until(firing, "a firing alert", logs)
        assert {a["labels"]["alertname"] for a in alerts} == {"GpuXidFallenOffTheBus"}
        labels = alerts[0]["labels"]
        assert (labels["instance"], labels["node_group"], labels["gpu"], labels["xid"]) == (
            "i-0abc",
            "trainers",
            "3",
            "79",
        )
        assert labels["severity"] == "critical"
        mail = _until(lambda: _Smtp.received, "the alert e-mail", logs)[0]
    assert "To: ml-infra@example.com" in mail
    assert "Subject: [llm/prod] GpuXidFallenOffTheBus (firing)" in mail
    assert "From: alerts@example.com" in mail
