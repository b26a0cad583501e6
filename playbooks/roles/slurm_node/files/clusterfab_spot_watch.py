#!/usr/bin/python3
"""clusterfab's spot interruption watcher on a Slurm node of a spot (preemptible) node group: a systemd
service that watches the instance metadata for the cloud's notice that it is taking the machine back, and
then sets the node DOWN, so that slurmctld requeues its batch jobs (JobRequeue=1 in the rendered slurm.conf)
at once instead of when the machine has vanished and slurmd stops answering (SlurmdTimeout later). The
controller's node sync (clusterfab_slurm_nodes) then hands the node back: an elastic node is powered down
(the suspend program deletes the instance, the node is power-saved and may be resumed on new capacity), a
static node's instance is terminated so its auto scaling group or MIG replaces it sooner. Standard library
only: it runs with the node's own python3. aws-node-termination-handler's IMDS mode does the same for a
Kubernetes node (cordon and drain on the same metadata items).

- AWS: an IMDSv2 session token (PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds; every GET
  carries it as X-aws-ec2-metadata-token; a 401 means it expired: get another), then every
  CLUSTERFAB_SPOT_INTERVAL seconds (AWS recommends checking every 5 s) GET
  /latest/meta-data/spot/instance-action: 404 until EC2 marks the instance to be stopped or terminated,
  then {"action": "terminate" | "stop" | "hibernate", "time": "<UTC>"}, about two minutes before it happens
  (hibernation starts at once, with no two-minute warning) [S-AWS-SPOT-NOTICE, S-AWS-NTH].
- GCP: GET /computeMetadata/v1/instance/preempted with Metadata-Flavor: Google is FALSE until Compute
  Engine preempts the VM, then TRUE; a preempted Spot VM gets an ACPI soft off and 30 s before it is
  powered off [S-GCP-SPOT-PREEMPT]. The watcher reads the value, then waits for it to change
  (wait_for_change=true with the ETag it read as last_etag, so a change between the two calls is not missed,
  and timeout_sec, so the request ends and is made again), as Google's own metadata client subscribes
  [S-GCP-METADATA-WAIT].
- Azure: every CLUSTERFAB_SPOT_INTERVAL seconds GET /metadata/scheduledevents?api-version=2020-07-01 with
  Metadata: true (never through a proxy): {"DocumentIncarnation": n, "Events": [{"EventId", "EventType",
  "ResourceType", "Resources": [VM names], "EventStatus", "NotBefore", ...}]}. An event of EventType
  "Preempt" is a Spot VM's eviction, scheduled at least 30 s ahead; events of a scale set's placement group
  reach every VM of it, so only one whose Resources name this VM (instance/compute/name) is acted on. The
  first request enables the service and may take up to two minutes to answer
  (https://learn.microsoft.com/azure/virtual-machines/linux/scheduled-events, read 2026-11-29).
  CLUSTERFAB_AZURE_IMDS replaces the metadata service's address (the tests' stand-in; Azure's SDKs name no
  variable for it). A scale-set VM claims its Slurm node by setting the node's NodeHostname to its own host
  name (see clusterfab-slurmd): the watcher finds it as the node whose NodeHostname is this host's short
  name (`sinfo -N -h -o '%N %n'`), once, and keeps it.

Rebalance recommendations (AWS, /latest/meta-data/events/recommendations/rebalance, {"noticeTime": ...})
are logged once and not acted on: AWS sends one when the instance is "at elevated risk of interruption",
possibly long before an interruption that may never come, or together with the two-minute notice
[S-AWS-REBALANCE]. Draining on it would leave a GPU node idle (and billed) for what may be hours, and a
multi-day training job on it would not finish before the notice anyway; the interruption notice is the
signal that the job will be lost, and acting on it loses at most the time since the job's last checkpoint.

A notice is acted on once: the node name and notice are remembered (a state file) only after scontrol
succeeded, so a failed or timed-out scontrol (slurmctld restarting) is tried again at the next poll, and a
notice already acted on is not sent again. Every HTTP request and every scontrol has a timeout; an error is
logged and the loop goes on (the service never exits on a metadata or Slurm error, so systemd never
restarts it in a loop). The node's Slurm name is the one its slurmd runs as, written by slurmd's start
program (clusterfab-slurmd) to CLUSTERFAB_SPOT_NODE_FILE (on Azure, found by NodeHostname, see above).
Settings: /etc/default/clusterfab-spot-watch.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

CONFIG = "/etc/default/clusterfab-spot-watch"
REASON_PREFIX = "clusterfab: spot interruption notice"
"""The node sync on the controller (nodesync.INTERRUPTED_PREFIX) recognises the node by this reason."""
MAX_REASON = 200
"""slurmdbd stores a node's reason in a `tinytext` column (255 bytes); the health check keeps to 200 too."""
_REASON_UNSAFE = re.compile(r"[^A-Za-z0-9 .,:;_/()#+%<>=-]+")
DEFAULTS = {
    "CLUSTERFAB_SPOT_CLOUD": "aws",
    # Seconds between two checks of the EC2 instance metadata (AWS: "check ... every 5 seconds").
    "CLUSTERFAB_SPOT_INTERVAL": "5",
    # Seconds one metadata request may take (aws-node-termination-handler's IMDS client: 2 s).
    "CLUSTERFAB_SPOT_HTTP_TIMEOUT": "2",
    # Seconds the GCE metadata server may hold a wait_for_change request (its timeout_sec).
    "CLUSTERFAB_SPOT_GCE_WAIT": "60",
    # Seconds a Scheduled Events request may take: the first one enables the service and may take up to
    # two minutes to answer (Azure's documentation); later ones answer at once.
    "CLUSTERFAB_SPOT_AZURE_EVENTS_TIMEOUT": "120",
    # Seconds one scontrol call may take.
    "CLUSTERFAB_SPOT_SCONTROL_TIMEOUT": "20",
    "CLUSTERFAB_SPOT_NODE_FILE": "/run/clusterfab-slurm-node",
    "CLUSTERFAB_SPOT_STATE_DIR": "/var/lib/clusterfab-spot-watch",
    "CLUSTERFAB_SPOT_LOG": "/var/log/slurm/clusterfab-spot-watch.log",
}
IMDS_TOKEN_TTL = 21600
"""Seconds an IMDSv2 token lives (the largest TTL IMDS accepts, six hours); renewed a minute early."""
AWS_ACTIONS = ("terminate", "stop", "hibernate")


@dataclass(frozen=True)
class Notice:
    """The cloud's notice that it takes the machine back: `action` and when (`time`, as the cloud says)."""

    action: str
    time: str

    @property
    def reason(self) -> str:
        text = " ".join(_REASON_UNSAFE.sub(" ", f"{self.action} at {self.time}").split())
        return f"{REASON_PREFIX} ({text})"[:MAX_REASON]


class MetadataError(Exception):
    """The metadata service did not answer as documented (unreachable, a timeout, an unexpected status)."""


Http = Callable[[urllib.request.Request, float], tuple[int, Mapping[str, str], bytes]]


def urlopen(request: urllib.request.Request, timeout: float) -> tuple[int, Mapping[str, str], bytes]:
    """One request: (status, headers, body); HTTP error statuses are answers, not exceptions. No proxy:
    the metadata services are link-local, and a proxy from the environment must not see the token."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers or {}), b""
    except (OSError, ValueError) as err:  # URLError, timeouts, resets
        raise MetadataError(f"{request.get_method()} {request.full_url}: {err}") from err


# ------------------------------------------------------------------------------------------------- AWS
class Imds:
    """EC2's instance metadata service with an IMDSv2 session token."""

    def __init__(self, endpoint: str, timeout: float, http: Http = urlopen) -> None:
        self._base = endpoint.rstrip("/")
        self._timeout = timeout
        self._http = http
        self._token = ""
        self._expires = 0.0

    def _renew(self) -> None:
        request = urllib.request.Request(
            f"{self._base}/latest/api/token",
            method="PUT",
            headers={"X-aws-ec2-metadata-token-ttl-seconds": str(IMDS_TOKEN_TTL)},
        )
        status, _, body = self._http(request, self._timeout)
        if status != 200 or not body:
            raise MetadataError(f"PUT /latest/api/token answered {status}")
        self._token = body.decode().strip()
        self._expires = time.monotonic() + IMDS_TOKEN_TTL - 60

    def get(self, path: str) -> bytes | None:
        """The item's body, or None when it does not exist (404)."""
        for _ in range(2):
            if not self._token or time.monotonic() >= self._expires:
                self._renew()
            request = urllib.request.Request(
                f"{self._base}{path}", headers={"X-aws-ec2-metadata-token": self._token}
            )
            status, _, body = self._http(request, self._timeout)
            if status == 401:  # the token expired or IMDS restarted: a new one, once
                self._token = ""
                continue
            if status == 404:
                return None
            if status != 200:
                raise MetadataError(f"GET {path} answered {status}")
            return body
        raise MetadataError(f"GET {path} refused a fresh token (401)")


def aws_notice(imds: Imds) -> Notice | None:
    body = imds.get("/latest/meta-data/spot/instance-action")
    if body is None:
        return None
    try:
        item = json.loads(body)
        action, when = str(item["action"]), str(item["time"])
    except (ValueError, KeyError, TypeError) as err:
        raise MetadataError(f"spot/instance-action is not the documented JSON: {body[:100]!r}") from err
    return Notice(action, when)


def aws_rebalance(imds: Imds) -> str | None:
    """The rebalance recommendation's noticeTime, if there is one."""
    body = imds.get("/latest/meta-data/events/recommendations/rebalance")
    if body is None:
        return None
    try:
        return str(json.loads(body)["noticeTime"])
    except (ValueError, KeyError, TypeError):
        return body[:100].decode(errors="replace")


# ------------------------------------------------------------------------------------------------- GCP
class GceMetadata:
    """Compute Engine's metadata server: `instance/preempted`, read and then waited on."""

    def __init__(self, host: str, timeout: float, wait: int, http: Http = urlopen) -> None:
        base = host if "://" in host else f"http://{host}"
        self._url = f"{base.rstrip('/')}/computeMetadata/v1/instance/preempted"
        self._timeout = timeout
        self._wait = wait
        self._http = http
        self._etag = ""

    def preempted(self, *, wait: bool) -> bool:
        """The current value (wait False), or the value once it changed or the server's wait ended."""
        url, timeout = self._url, self._timeout
        if wait and self._etag:
            etag = urllib.parse.quote(self._etag, safe="")
            url += f"?wait_for_change=true&last_etag={etag}&timeout_sec={self._wait}"
            timeout += self._wait
        status, headers, body = self._http(
            urllib.request.Request(url, headers={"Metadata-Flavor": "Google"}), timeout
        )
        if status != 200:
            self._etag = ""
            raise MetadataError(f"GET instance/preempted answered {status}")
        self._etag = next((v for k, v in headers.items() if k.lower() == "etag"), "")
        return body.decode(errors="replace").strip().upper() == "TRUE"


# ----------------------------------------------------------------------------------------------- Azure
AZURE_EVENTS = "/metadata/scheduledevents?api-version=2020-07-01"
AZURE_VM_NAME = "/metadata/instance/compute/name?api-version=2021-02-01&format=text"


class AzureMetadata:
    """Azure's instance metadata service: this VM's name, and its Scheduled Events."""

    def __init__(self, endpoint: str, timeout: float, events_timeout: float, http: Http = urlopen) -> None:
        self._base = endpoint.rstrip("/")
        self._timeout = timeout
        self._events_timeout = events_timeout
        self._http = http
        self._vm = ""

    def _get(self, path: str, timeout: float) -> bytes:
        request = urllib.request.Request(f"{self._base}{path}", headers={"Metadata": "true"})
        status, _, body = self._http(request, timeout)
        if status != 200:
            raise MetadataError(f"GET {path} answered {status}")
        return body

    def vm_name(self) -> str:
        if not self._vm:
            self._vm = self._get(AZURE_VM_NAME, self._timeout).decode(errors="replace").strip()
        return self._vm

    def preemptions(self) -> list[tuple[str, str]]:
        """(EventId, NotBefore) of each Preempt event that names this VM."""
        body = self._get(AZURE_EVENTS, self._events_timeout)
        try:
            events = json.loads(body)["Events"]
            found = [
                (str(e["EventId"]), str(e.get("NotBefore") or ""))
                for e in events
                if e["EventType"] == "Preempt" and self.vm_name() in e["Resources"]
            ]
        except (ValueError, KeyError, TypeError) as err:
            raise MetadataError(f"scheduledevents is not the documented JSON: {body[:100]!r}") from err
        return found


# ---------------------------------------------------------------------------------------------- acting
def load_config(path: str, environ: Mapping[str, str]) -> dict[str, str]:
    """Defaults, then the settings file (`KEY=value` lines), then the environment."""
    config = dict(DEFAULTS)
    with contextlib.suppress(OSError), open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, value = line.split("=", 1)
            config[key.strip()] = value.strip().strip("'\"")
    config.update({k: v for k, v in environ.items() if k.startswith("CLUSTERFAB_SPOT_")})
    return config


def node_name(config: Mapping[str, str]) -> str | None:
    """The Slurm name this machine's slurmd runs as (CLUSTERFAB_SPOT_NODE overrides the file)."""
    if config.get("CLUSTERFAB_SPOT_NODE"):
        return config["CLUSTERFAB_SPOT_NODE"]
    with contextlib.suppress(OSError), open(config["CLUSTERFAB_SPOT_NODE_FILE"], encoding="utf-8") as handle:
        return handle.read().strip() or None
    return None


def node_by_host(config: Mapping[str, str]) -> str | None:
    """The Slurm node whose NodeHostname is this host's short name (the node this VM claimed), or None
    when there is none yet or sinfo failed."""
    host = socket.gethostname().split(".")[0]
    argv = ["sinfo", "-N", "-h", "-o", "%N %n"]
    timeout = float(config["CLUSTERFAB_SPOT_SCONTROL_TIMEOUT"])
    try:
        ran = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        log(config, f"sinfo failed ({err}); trying again")
        return None
    if ran.returncode != 0:
        log(
            config, f"sinfo exited {ran.returncode}: {(ran.stderr or ran.stdout).strip()[:200]}; trying again"
        )
        return None
    for line in ran.stdout.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1] == host:
            return fields[0]
    return None


def log(config: Mapping[str, str], line: str) -> None:
    print(line, file=sys.stderr, flush=True)
    with contextlib.suppress(OSError), open(config["CLUSTERFAB_SPOT_LOG"], "a", encoding="utf-8") as handle:
        handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")


class Watcher:
    """One node's watch: what it has already acted on, and how it acts."""

    def __init__(self, config: Mapping[str, str], http: Http = urlopen) -> None:
        self.config = config
        timeout = float(config["CLUSTERFAB_SPOT_HTTP_TIMEOUT"])
        self.cloud = config["CLUSTERFAB_SPOT_CLOUD"]
        if self.cloud == "aws":
            endpoint = os.environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://169.254.169.254")
            self.imds = Imds(config.get("CLUSTERFAB_SPOT_IMDS", endpoint), timeout, http)
        elif self.cloud == "gcp":
            host = os.environ.get("GCE_METADATA_HOST", "metadata.google.internal")
            wait = int(config["CLUSTERFAB_SPOT_GCE_WAIT"])
            self.gce = GceMetadata(config.get("CLUSTERFAB_SPOT_GCE_METADATA", host), timeout, wait, http)
        elif self.cloud == "azure":
            endpoint = os.environ.get("CLUSTERFAB_AZURE_IMDS", "http://169.254.169.254")
            events_timeout = float(config["CLUSTERFAB_SPOT_AZURE_EVENTS_TIMEOUT"])
            self.azure = AzureMetadata(
                config.get("CLUSTERFAB_SPOT_AZURE_IMDS", endpoint), timeout, events_timeout, http
            )
        else:
            raise ValueError(f"CLUSTERFAB_SPOT_CLOUD must be aws, gcp or azure, not {self.cloud!r}")
        self.rebalance_seen: str | None = None
        self.preempted_at = ""
        self.evictions: dict[str, str] = {}
        """Azure: each Preempt event's NotBefore as first seen (blank once the event has started)."""
        self.node = ""
        """Azure: the node found by its NodeHostname, kept once found."""

    def node_name(self) -> str | None:
        """The Slurm name this machine's slurmd runs as: from the file slurmd's start program wrote, or on
        Azure the node whose NodeHostname is this host (CLUSTERFAB_SPOT_NODE overrides both)."""
        if self.cloud != "azure" or self.config.get("CLUSTERFAB_SPOT_NODE"):
            return node_name(self.config)
        self.node = self.node or node_by_host(self.config) or ""
        return self.node or None

    def _state_path(self, node: str) -> str:
        return os.path.join(self.config["CLUSTERFAB_SPOT_STATE_DIR"], f"acted-{node}.json")

    def acted(self, node: str, notice: Notice) -> bool:
        with contextlib.suppress(OSError, ValueError), open(self._state_path(node), encoding="utf-8") as f:
            return bool(json.load(f) == {"action": notice.action, "time": notice.time})
        return False

    def act(self, notice: Notice) -> bool:
        """Set the node aside with the notice as its reason (once): drained, then DOWN, which requeues its
        jobs. Drained first: ReturnToService=2 returns a DOWN node whenever its slurmd answers, and this
        machine's slurmd answers until the cloud takes it; a drained one stays out. Whether it is done."""
        node = self.node_name()
        if node is None:
            log(
                self.config,
                f"{notice.reason}: no Slurm node name yet (slurmd has not started): nothing to do",
            )
            return False
        if self.acted(node, notice):
            return True
        for state in ("DRAIN", "DOWN"):
            if not self._scontrol(node, notice, state):
                return False
        state_dir = self.config["CLUSTERFAB_SPOT_STATE_DIR"]
        with contextlib.suppress(OSError):
            os.makedirs(state_dir, exist_ok=True)
            with open(self._state_path(node), "w", encoding="utf-8") as handle:
                json.dump({"action": notice.action, "time": notice.time}, handle)
        log(self.config, f"{node}: set DOWN: {notice.reason}")
        return True

    def _scontrol(self, node: str, notice: Notice, state: str) -> bool:
        argv = ["scontrol", "update", f"NodeName={node}", f"State={state}", f"Reason={notice.reason}"]
        timeout = float(self.config["CLUSTERFAB_SPOT_SCONTROL_TIMEOUT"])
        try:
            ran = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            log(self.config, f"{node}: {notice.reason}: scontrol failed ({err}); trying again")
            return False
        if ran.returncode != 0:
            detail = (ran.stderr or ran.stdout).strip()[:200]
            log(
                self.config,
                f"{node}: {notice.reason}: scontrol exited {ran.returncode}: {detail}; trying again",
            )
            return False
        return True

    def check(self, *, wait: bool = False) -> Notice | None:
        """One look at the metadata (GCP: a wait for a change when `wait`); the notice, if there is one."""
        if self.cloud == "gcp":
            if not self.gce.preempted(wait=wait):
                return None
            # One notice per preemption: the time it was first seen (GCE's value carries none).
            self.preempted_at = self.preempted_at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            return Notice("preempted", self.preempted_at)
        if self.cloud == "azure":
            return self._azure_notice()
        notice = aws_notice(self.imds)
        if notice is None:
            rebalance = aws_rebalance(self.imds)
            if rebalance is not None and rebalance != self.rebalance_seen:
                self.rebalance_seen = rebalance
                log(self.config, f"rebalance recommendation (noticeTime {rebalance}): logged, not acted on")
        return notice

    def _azure_notice(self) -> Notice | None:
        found = self.azure.preemptions()
        if not found:
            return None
        event, not_before = found[0]
        # One notice per event: its NotBefore as first seen (the field is blank once the event started).
        when = self.evictions.setdefault(
            event, not_before or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        )
        return Notice("Preempt", when)


def watch(config: Mapping[str, str], rounds: int = 0, http: Http = urlopen) -> int:
    """Look every interval (GCP: wait for a change instead) until `rounds` looks are done (0: forever)."""
    watcher = Watcher(config, http)
    interval = float(config["CLUSTERFAB_SPOT_INTERVAL"])
    log(config, f"watching the {watcher.cloud} instance metadata for a spot interruption notice")
    quiet = False
    """The last look found no notice and no error: GCP's next request may wait for a change. After an
    error or a notice not yet acted on, the next look is a plain read after the interval (never a tight
    loop, never a wait that would hold up a retry)."""
    done = 0
    while rounds == 0 or done < rounds:
        try:
            notice = watcher.check(wait=quiet)
        except MetadataError as err:
            log(config, f"instance metadata: {err}")
            notice, quiet = None, False
        else:
            quiet = notice is None
            if notice is not None:
                watcher.act(notice)
        done += 1
        if watcher.cloud != "gcp" or not quiet:
            time.sleep(interval)
    return 0


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(description="clusterfab's spot interruption watcher (a Slurm node).")
    parser.add_argument("--rounds", type=int, default=0, help="stop after this many checks (0: never)")
    args = parser.parse_args(argv)
    config = load_config(env.get("CLUSTERFAB_SPOT_CONFIG", CONFIG), env)
    return watch(config, args.rounds)


if __name__ == "__main__":
    sys.exit(main())
