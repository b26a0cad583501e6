"""One run of the deep check on a Kubernetes cluster, over the KubeApi Protocol.

1. The GPU nodes of the blueprint's node groups that are idle now: Ready, not cordoned, no running pod
   holding a GPU (a node that is not is reported as skipped and never touched); or the nodes `--nodes`
   names.
2. Per node, all at once, a Job running `dcgmi diag -r LEVEL -j` on all its GPUs.
3. Per node group, the nodes that passed in pairs, each pair a JobSet running the all-reduce program on
   both nodes as one NCCL world; disjoint pairs run at once. As on Slurm (healthcheck.py), a pair below the
   catalog's floor for the machine type (or whose test failed) is measured again with a node that passed,
   so only the slow node is blamed; with no node known good, both nodes of the pair fail. An odd node is
   measured with a node that passed. A run that was not one world of every GPU of both nodes, or that
   used plain sockets where the node group has EFA, or not its GKE fabric's NCCL plugin (PLUGINS:
   `FasTrak` on GPUDirect-TCPXO, `GPUDirectTCPX_v7` on GPUDirect-TCPX, `gIB` on GKE's RDMA), measured
   nothing: the check stops measuring, blames no node, and says why (`error`, exit 2).
4. Every failed node is cordoned and tainted (judge.cordon_patch).
5. The run's Jobs, JobSets and ConfigMap are deleted (always, also on an error).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterfab.scheduler.healthreport import Progress
from clusterfab.scheduler.kubernetes import gpudirect
from clusterfab.scheduler.kubernetes.health import judge
from clusterfab.scheduler.kubernetes.health import objects as obj
from clusterfab.scheduler.kubernetes.health.kubeapi import ApiError, KubeApi
from clusterfab.scheduler.kubernetes.labels import NODE_GROUP_LABEL
from clusterfab.scheduler.kubernetes.manifests import nccl_installers as installers

POLL_SECONDS = 10.0
GRACE = 60
"""Seconds past a Job's own deadline the run waits for its pods' last state."""


@dataclass(frozen=True)
class Plugin:
    """A GKE fabric's NCCL net plugin, which the pair's pods must load: NCCL names the network it uses by
    the plugin's name (`NCCL INFO Using network <network>`)."""

    network: str
    fabric: str
    name: str
    directory: str
    installer: str
    """The DaemonSet that puts it on the nodes (manifests/nccl_installers.py)."""


PLUGINS = {
    gpudirect.TCPXO: Plugin(
        gpudirect.NET_NAME, "GPUDirect-TCPXO", "TCPXO", gpudirect.NCCL_LIB_DIR, installers.TCPXO
    ),
    gpudirect.TCPX: Plugin(
        gpudirect.TCPX_NET_NAME, "GPUDirect-TCPX", "TCPX", gpudirect.NCCL_LIB_DIR, installers.TCPX
    ),
    gpudirect.RDMA: Plugin(
        gpudirect.GIB_NET_NAME, "GKE's RDMA", "gIB", f"{gpudirect.GIB_DIR}/lib64", installers.RDMA
    ),
}
"""By fabric: a pair that did not use the plugin's network measured the wrong network (SetupError): over
the pod's one network the check would blame nodes for the wrong network's bandwidth."""
_CORE = "/api/v1"
_NS = f"{_CORE}/namespaces/{obj.NAMESPACE}"
_JOBS = f"/apis/batch/v1/namespaces/{obj.NAMESPACE}/jobs"
_JOBSETS = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{obj.NAMESPACE}/jobsets"
_PULL_ERRORS = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName"}


class SetupError(RuntimeError):
    """The check cannot measure on this cluster: a fault of the setup, not of a node."""


@dataclass(frozen=True)
class Group:
    """What the check needs of a node group: the catalog's facts of its machine and its fabric."""

    machine_type: str
    fabric: str | None
    efa: int
    """EFA devices a pod of its nodes asks for (0: no EFA)."""
    floor: float | None
    """The catalog's two-node busbw floor (GB/s) of the machine type; None: none, not judged."""
    tcpxo: gpudirect.Tcpxo | None = None
    """What its pair pods need on GPUDirect-TCPXO (None: not on it)."""
    rdma: gpudirect.Rdma | None = None
    """What its pair pods need on GKE's RDMA (None: not on it)."""
    tcpx: gpudirect.Tcpx | None = None
    """What its pair pods need on GPUDirect-TCPX (None: not on it)."""


@dataclass(frozen=True)
class Settings:
    level: int
    groups: Mapping[str, Group]
    dcgm_image: str
    pytorch_image: str
    host_driver: str | None
    program: str
    """The all-reduce program's source (allreduce.py)."""
    message_bytes: int = 8 << 30


@dataclass
class Check:
    api: KubeApi
    settings: Settings
    run: str
    progress: Progress
    # Looked up at each call, so a test can stand in for the clock.
    clock: Callable[[], float] = lambda: time.monotonic()  # noqa: PLW0108
    sleep: Callable[[float], None] = lambda seconds: time.sleep(seconds)  # noqa: PLW0108
    verdicts: dict[str, judge.Verdict] = field(default_factory=dict)
    targets: dict[str, tuple[obj.Target, str]] = field(default_factory=dict)
    """Node name -> its target and its node group."""
    jobsets: list[str] = field(default_factory=list)
    error: str | None = None

    # ---------------------------------------------------------------------------------------- selection
    def select(self, wanted: Sequence[str] | None) -> None:
        nodes = {n["metadata"]["name"]: n for n in self.api.get(f"{_CORE}/nodes")["items"]}
        missing = sorted(set(wanted or ()) - set(nodes))
        if missing:
            raise SetupError(f"--nodes: the cluster has no node {', '.join(missing)}")
        busy = self._gpu_pods()
        for name in sorted(wanted if wanted is not None else nodes):
            node = nodes[name]
            group = node["metadata"].get("labels", {}).get(NODE_GROUP_LABEL)
            gpus = int(node.get("status", {}).get("allocatable", {}).get(obj.GPU, "0"))
            if group not in self.settings.groups or gpus == 0:
                if wanted is not None:
                    self.verdicts[name] = judge.Verdict(name, "skipped", "no GPUs of a clusterfab node group")
                continue
            why = _not_idle(node, busy.get(name, 0))
            if why:
                self.verdicts[name] = judge.Verdict(name, "skipped", why)
                continue
            hostname = node["metadata"]["labels"].get(obj.HOSTNAME_LABEL, name)
            target = obj.Target(name, hostname, gpus, self.settings.groups[group].efa)
            self.targets[name] = (target, group)
            self.verdicts[name] = judge.Verdict(name)

    def _gpu_pods(self) -> dict[str, int]:
        """Node -> its pods that hold GPUs and have not ended."""
        query = {"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed"}
        counts: dict[str, int] = {}
        for pod in self.api.get(f"{_CORE}/pods", query)["items"]:
            node = pod.get("spec", {}).get("nodeName")
            if node and _holds_gpus(pod):
                counts[node] = counts.get(node, 0) + 1
        return counts

    # ------------------------------------------------------------------------------------------- DCGM
    def diagnose(self) -> None:
        level, settings = self.settings.level, self.settings
        jobs = {}
        for index, (target, _) in enumerate(self.targets.values()):
            job = obj.dcgm_job(
                self.run, index, level, target, image=settings.dcgm_image, host_driver=settings.host_driver
            )
            self.api.create(_JOBS, job)
            jobs[job["metadata"]["name"]] = target
        deadline = obj.dcgm_deadline(level)
        self.progress(f"DCGM level {level} on {len(jobs)} node(s), at most {deadline}s")
        pods = self.wait(dict.fromkeys(jobs, 1), deadline)
        for name, target in jobs.items():
            self._judge_dcgm(target, pods.get(name, []), deadline)

    def _judge_dcgm(self, target: obj.Target, pods: Sequence[Mapping[str, Any]], deadline: int) -> None:
        verdict = self.verdicts[target.name]
        state = _state(pods[0]) if pods else "gone"
        if state in ("Succeeded", "Failed"):
            log = self.api.log(f"{_NS}/pods/{pods[0]['metadata']['name']}/log", {"container": "dcgm"})
            failures = judge.dcgm_failures(log, self.settings.level)
            if not failures and state == "Failed":
                failures = [("DCGM", f"dcgmi diag -r {self.settings.level} failed: {_exit(pods[0])}")]
            for category, detail in failures:
                verdict.fail(category, detail)
        elif state == "unscheduled":
            verdict.status, verdict.detail = "skipped", "its GPUs were taken before the check's pod started"
        else:
            verdict.fail("GPU", f"dcgmi diag -r {self.settings.level} did not finish within {deadline}s")

    # ----------------------------------------------------------------------------------------- waiting
    def wait(self, expected: Mapping[str, int], deadline: int) -> dict[str, list[dict[str, Any]]]:
        """The pods of each Job or JobSet (by name), once all have ended or at the deadline (the Job's
        own, and GRACE); SetupError when an image cannot be pulled."""
        end = self.clock() + deadline + GRACE
        while True:
            query = {"labelSelector": f"{obj.RUN_LABEL}={self.run}"}
            pods: dict[str, list[dict[str, Any]]] = {}
            for pod in self.api.get(f"{_NS}/pods", query)["items"]:
                pods.setdefault(pod["metadata"]["labels"].get(obj.JOB_LABEL, ""), []).append(pod)
            for pod in (p for name in expected for p in pods.get(name, [])):
                if _state(pod) == "pull":
                    raise SetupError(f"cannot pull the check's image: {_waiting(pod)}")
            done = all(
                len(pods.get(name, [])) >= count
                and all(_state(p) in ("Succeeded", "Failed") for p in pods[name])
                for name, count in expected.items()
            )
            if done or self.clock() >= end:
                return {name: _ordered(pods.get(name, [])) for name in expected}
            self.sleep(POLL_SECONDS)

    # ------------------------------------------------------------------------------------------- NCCL
    def measure(self) -> None:
        by_group: dict[str, list[obj.Target]] = {}
        for target, group in self.targets.values():
            if self.verdicts[target.name].status == "healthy":
                by_group.setdefault(group, []).append(target)
        for group, members in by_group.items():
            self.measure_group(members, self.settings.groups[group])

    def measure_group(self, members: Sequence[obj.Target], group: Group) -> None:
        if len(members) < 2:
            for target in members:
                self.verdicts[target.name].detail = "no partner for the NCCL test"
            return
        good: list[obj.Target] = []
        pending: list[tuple[obj.Target, str | None]] = []
        pairs = [(members[i], members[i + 1]) for i in range(0, len(members) - 1, 2)]
        for pair, problem in zip(pairs, self.run_pairs(pairs, group), strict=True):
            if problem is None:
                good += pair
            else:
                pending += [(t, problem) for t in pair]
        if len(members) % 2:
            pending.append((members[-1], None))
        self._retry(pending, good, group)

    def _retry(
        self, pending: list[tuple[obj.Target, str | None]], good: list[obj.Target], group: Group
    ) -> None:
        """Measure each node not yet known good with a node that is, as many at once as there are good
        nodes; without one, a suspect fails with what its first pair showed."""
        while pending:
            if not good:
                for target, first in pending:
                    if first is None:
                        self.verdicts[target.name].detail = "not measured: no node of its group passed"
                    else:
                        self.verdicts[target.name].fail("PERF", first)
                return
            wave, pending = pending[: len(good)], pending[len(good) :]
            pairs = [(target, good[i]) for i, (target, _) in enumerate(wave)]
            for (target, _), problem in zip(wave, self.run_pairs(pairs, group), strict=True):
                if problem is None:
                    good.append(target)
                else:
                    self.verdicts[target.name].fail("PERF", problem)

    def run_pairs(self, pairs: Sequence[tuple[obj.Target, obj.Target]], group: Group) -> list[str | None]:
        """Each pair's problem (None: fast enough, or no floor to judge it by), all pairs at once."""
        names = []
        for pair in pairs:
            image, size = self.settings.pytorch_image, self.settings.message_bytes
            jobset = obj.nccl_jobset(
                self.run,
                len(self.jobsets),
                pair,
                image,
                size,
                tcpxo=group.tcpxo,
                rdma=group.rdma,
                tcpx=group.tcpx,
            )
            self.api.create(_JOBSETS, jobset)
            self.jobsets.append(jobset["metadata"]["name"])
            names.append(jobset["metadata"]["name"])
        self.progress(f"NCCL all-reduce on {len(pairs)} pair(s), at most {obj.nccl_deadline()}s")
        pods = self.wait(dict.fromkeys(names, 2), obj.nccl_deadline())
        return [self._judge_pair(pair, pods[name], group) for pair, name in zip(pairs, names, strict=True)]

    def _judge_pair(
        self, pair: tuple[obj.Target, obj.Target], pods: Sequence[Mapping[str, Any]], group: Group
    ) -> str | None:
        names = f"{pair[0].name} and {pair[1].name}"
        states = [_state(p) for p in pods]
        if len(pods) < 2 or any(s not in ("Succeeded", "Failed") for s in states):
            return f"all-reduce did not finish within {obj.nccl_deadline()}s ({names})"
        log = self.api.log(f"{_NS}/pods/{pods[0]['metadata']['name']}/log", {"container": obj.ALLREDUCE})
        result = judge.pair_result(log)
        if result is None or "Failed" in states:
            failed = next((p for p in pods if _state(p) == "Failed"), pods[0])
            return f"all-reduce failed: {_exit(failed)} ({names})"
        self._one_world(result, pair, group)
        if not result.correct:
            return f"all-reduce gave wrong sums ({names})"
        # The first node of a pair is the one measured (again, when it was a suspect); its partner keeps
        # its own first measurement.
        for target, partner in (pair, pair[::-1]):
            verdict = self.verdicts[target.name]
            if target is pair[0] or verdict.busbw_gbytes_per_s is None:
                verdict.busbw_gbytes_per_s = result.busbw_gbytes_per_s
                verdict.floor_gbytes_per_s, verdict.partner = group.floor, partner.name
        if group.floor is None or result.busbw_gbytes_per_s >= group.floor:
            return None
        return f"all_reduce busbw {result.busbw_gbytes_per_s:g} GB/s below floor {group.floor:g} ({names})"

    def _one_world(self, result: judge.PairResult, pair: tuple[obj.Target, obj.Target], group: Group) -> None:
        ranks = pair[0].gpus + pair[1].gpus
        if (result.ranks, len(result.hosts)) != (ranks, 2):
            raise SetupError(
                f"the all-reduce ran {result.ranks} rank(s) on {len(result.hosts)} host(s), not one world of "
                f"{ranks} ranks on 2 nodes ({pair[0].name} and {pair[1].name})"
            )
        if group.efa and result.network in (None, "Socket"):
            raise SetupError(
                f"NCCL used {result.network or 'an unnamed network'}, not EFA, between {pair[0].name} and "
                f"{pair[1].name}: the image's NCCL found no EFA plugin (aws-ofi-nccl)"
            )
        plugin = PLUGINS.get(str(group.fabric))
        if plugin is not None and result.network != plugin.network:
            raise SetupError(
                f"NCCL used {result.network or 'an unnamed network'}, not {plugin.network} "
                f"({plugin.fabric}), between {pair[0].name} and {pair[1].name}: the pods' NCCL did not load "
                f"the {plugin.name} plugin from {plugin.directory} (is the {plugin.installer} DaemonSet "
                "running on the nodes?)"
            )

    # -------------------------------------------------------------------------------- the whole run
    def execute(self, wanted: Sequence[str] | None) -> dict[str, Any]:
        self.select(wanted)
        skipped = sum(v.status == "skipped" for v in self.verdicts.values())
        self.progress(f"{self.run}: {len(self.targets)} idle GPU node(s) to check, {skipped} skipped")
        if self.targets:
            self._apply_common()
            try:
                self.diagnose()
                try:
                    self.measure()
                except SetupError as err:
                    self._unmeasured(str(err))
            finally:
                self.clean_up()
            for verdict in self.verdicts.values():
                if verdict.status == "failed":
                    self.cordon(verdict)
        return judge.report(list(self.verdicts.values()), self.settings.level, self.run, self.error)

    def _apply_common(self) -> None:
        try:
            self.api.create(f"{_CORE}/namespaces", obj.namespace())
        except ApiError as err:
            if err.status != 409:  # it exists from an earlier run
                raise
        self.api.create(f"{_NS}/configmaps", obj.program_config_map(self.run, self.settings.program))

    def _unmeasured(self, why: str) -> None:
        self.error = why
        self.progress(f"NCCL test not measured: {why}")
        for verdict in self.verdicts.values():
            if verdict.status == "healthy" and verdict.node in self.targets:
                verdict.busbw_gbytes_per_s = verdict.floor_gbytes_per_s = verdict.partner = None
                verdict.detail = "DCGM passed; NCCL test not measured (see the error)"

    def clean_up(self) -> None:
        query = {"labelSelector": f"{obj.RUN_LABEL}={self.run}", "propagationPolicy": "Background"}
        for path in (_JOBSETS, _JOBS, f"{_NS}/configmaps"):
            try:
                self.api.delete(path, query)
            except ApiError as err:
                self.progress(f"could not delete the run's objects at {path}: {err}")

    def cordon(self, verdict: judge.Verdict) -> None:
        """Cordon and taint a failed node; read it again when it changed under the patch (409)."""
        for _ in range(3):
            node = self.api.get(f"{_CORE}/nodes/{verdict.node}")
            try:
                self.api.patch(f"{_CORE}/nodes/{verdict.node}", judge.cordon_patch(node, verdict))
            except ApiError as err:
                if err.status == 409:
                    continue
                raise
            self.progress(f"cordoned and tainted {verdict.node}: {verdict.reason}")
            return
        self.progress(f"could not cordon {verdict.node}: it kept changing under the patch")


# ---------------------------------------------------------------------------------------- pod reading
def _state(pod: Mapping[str, Any]) -> str:
    """Succeeded | Failed | Running | unscheduled | pull (its image cannot be pulled) | pending."""
    status = pod.get("status", {})
    phase = str(status.get("phase", "Pending"))
    if phase != "Pending":
        return phase
    if any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" for c in status.get("conditions", [])
    ):
        return "unscheduled"
    waiting = [c.get("state", {}).get("waiting", {}) for c in _statuses(status)]
    return "pull" if any(w.get("reason") in _PULL_ERRORS for w in waiting) else "pending"


def _statuses(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The statuses of a pod's init containers (the TCPXO and TCPX receive daemons) and containers."""
    return [*status.get("initContainerStatuses", []), *status.get("containerStatuses", [])]


def _waiting(pod: Mapping[str, Any]) -> str:
    for container in _statuses(pod.get("status", {})):
        waiting = container.get("state", {}).get("waiting", {})
        if waiting.get("reason") in _PULL_ERRORS:
            return f"{container.get('image')}: {waiting.get('reason')}: {waiting.get('message', '')}".strip(
                ": "
            )
    return ""


def _exit(pod: Mapping[str, Any]) -> str:
    for container in pod.get("status", {}).get("containerStatuses", []):
        ended = container.get("state", {}).get("terminated")
        if ended:
            return (
                f"exit {ended.get('exitCode')} ({ended.get('reason', '')}) on {pod['spec'].get('nodeName')}"
            )
    return f"pod {pod['metadata']['name']} ended without a container status"


def _ordered(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Job's pods by completion index: the leader first."""
    key = "batch.kubernetes.io/job-completion-index"
    return sorted(pods, key=lambda p: int(p["metadata"].get("annotations", {}).get(key, "0")))


def _not_idle(node: Mapping[str, Any], gpu_pods: int) -> str | None:
    conditions = node.get("status", {}).get("conditions", [])
    if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
        return "not ready"
    if node.get("spec", {}).get("unschedulable"):
        return "cordoned"
    return f"not idle ({gpu_pods} pod(s) holding GPUs)" if gpu_pods else None


def _holds_gpus(pod: Mapping[str, Any]) -> bool:
    for container in pod.get("spec", {}).get("containers", []):
        resources = container.get("resources", {})
        for amounts in (resources.get("limits", {}), resources.get("requests", {})):
            if int(str(amounts.get(obj.GPU, "0"))) > 0:
                return True
    return False
