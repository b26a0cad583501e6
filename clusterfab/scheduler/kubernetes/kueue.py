"""Kueue and JobSet on a Kubernetes cluster, configured for training: the two Helm charts the program
installs (their pins in software.yaml), Kueue's configuration, and the admission check GKE's queued
provisioning (flex-start) needs. Plain values only: the program installs them (components/kubernetes).

Training jobs need all their pods at once, so admission is all-or-nothing: a workload whose pods are not
all ready within WAIT_FOR_PODS_READY's timeout is evicted and requeued with an exponential backoff, and
`blockAdmission` admits one such workload at a time so that two half-started jobs never hold each other's
GPUs (site/content/en/docs/tasks/manage/setup_wait_for_pods_ready.md at the pinned tag). Topology-aware
scheduling needs no setting: it is Beta and on by default since Kueue 0.14 (pkg/features/kube_features.go).
Fair sharing stays off (no `fairSharing` section): the ClusterQueues preempt by priority, and Kueue's
fair sharing preempts non-deterministically with hierarchical cohorts (kueue#10131) and ignores a
topology's fit (kueue#10815).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML

from clusterfab.scheduler.kubernetes.software import Piece, cloud_part, kubernetes_software
from clusterfab.spec import FlexStart
from clusterfab.spec.model import ClusterSpec

KUEUE_API = "kueue.x-k8s.io/v1beta2"
KUEUE_NAMESPACE = "kueue-system"
JOBSET_NAMESPACE = "jobset-system"
"""The namespaces the charts are installed in, as Kueue's and JobSet's manifests and Cluster Toolkit name
them."""

PROVISIONING_CHECK = "dws-prov"
"""The AdmissionCheck a ClusterQueue lists for the flavors of flex-start node groups (GKE's queued
provisioning): Kueue asks GKE for all of a workload's nodes at once before admitting it."""
PROVISIONING_CONFIG = "dws-config"
"""The names Cluster Toolkit's DWS flex-start example and GKE's guide give the two objects."""

WAIT_FOR_PODS_READY: dict[str, Any] = {
    # Kueue's default timeout: long enough for a GPU node pool to grow and a multi-gigabyte image to pull.
    "timeout": "30m",
    "blockAdmission": True,
    "requeuingStrategy": {
        # A workload evicted for not starting goes behind those queued since; after 5 tries (about three
        # hours with the backoff) it is deactivated for its owner to look at, not retried forever.
        "timestamp": "Eviction",
        "backoffLimitCount": 5,
        "backoffBaseSeconds": 60,
        "backoffMaxSeconds": 3600,
    },
}
QUOTA_CHECK = "IgnoreUndeclared"
"""The queues count accelerators alone (clusterfab.scheduler.kubernetes.queues): with Kueue's default,
BlockUndeclared, a pod's cpu, memory or EFA request that no queue covers makes its workload inadmissible
("resource cpu unavailable in ClusterQueue", pkg/scheduler/flavorassigner). IgnoreUndeclared checks only
the resources a queue declares (apis/config/v1beta2/configuration_types.go at v0.19.2)."""
FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob")
"""The job kinds Kueue queues. Kueue waits for an integration's API to appear before it starts that
integration's controller (pkg/controller/jobframework/setup.go), so PyTorchJob needs no Kubeflow here."""

CHART_DEFAULTS: dict[str, Any] = {
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
}
"""The chart's own configuration at the pinned release (charts/kueue/values.yaml,
managerConfig.controllerManagerConfigYaml): the configuration below replaces that text whole, so it
carries these settings on."""


@dataclass(frozen=True)
class ChartRelease:
    """One Helm release: the chart (an OCI reference), its version, the namespace and the values."""

    name: str
    chart: str
    version: str
    namespace: str
    values: dict[str, Any]
    serves: tuple[str, ...]
    """The API groups whose objects exist only once the release has installed its CRDs."""


def training_charts(spec: ClusterSpec, cloud: str) -> list[ChartRelease]:
    """JobSet, then Kueue (whose JobSet integration then starts at once), for every Kubernetes cluster:
    the teams' queues need Kueue whether the cluster has GPU node groups, TPU slices or both."""
    software = kubernetes_software()
    jobset, kueue = software.piece("jobset"), software.piece("kueue")
    return [
        _release(jobset, JOBSET_NAMESPACE, jobset_values(), ("jobset.x-k8s.io",)),
        _release(kueue, KUEUE_NAMESPACE, kueue_values(), ("kueue.x-k8s.io",)),
    ]


def _release(piece: Piece, namespace: str, values: dict[str, Any], serves: tuple[str, ...]) -> ChartRelease:
    chart = piece.chart
    if chart is None:
        raise ValueError(f"software.yaml: {piece.name} names no chart")
    return ChartRelease(piece.name, chart.reference, chart.version, namespace, values, serves)


def _image(piece: Piece, role: str) -> dict[str, str]:
    image = piece.images[role]
    if image.tag is None:
        raise ValueError(f"software.yaml: the chart of {piece.name} takes an image tag")
    return {"repository": image.repository, "tag": image.tag, "pullPolicy": "IfNotPresent"}


def jobset_values() -> dict[str, Any]:
    """The JobSet chart's values: its image as software.yaml pins it; the chart's defaults otherwise."""
    return {"image": _image(kubernetes_software().piece("jobset"), "controller")}


def kueue_values() -> dict[str, Any]:
    """The Kueue chart's values: the manager's image as software.yaml pins it and its configuration."""
    manager = _image(kubernetes_software().piece("kueue"), "manager")
    return {
        "controllerManager": {"manager": {"image": manager}},
        "managerConfig": {"controllerManagerConfigYaml": _yaml(kueue_configuration())},
    }


def kueue_configuration() -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2): the chart's settings, all-or-nothing
    admission with requeuing, the queues' resource metrics, and the job kinds it queues. The same on both
    clouds: the ProvisioningRequest admission check controller runs by default and acts only for the
    AdmissionCheck of admission_objects."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        **CHART_DEFAULTS,
        # The queues' quotas and usage per flavor as metrics too (kueue_cluster_queue_resource_usage,
        # ..._nominal_quota): the dashboards show each team's share of its quota from them.
        "metrics": {**CHART_DEFAULTS["metrics"], "enableClusterQueueResources": True},
        "waitForPodsReady": WAIT_FOR_PODS_READY,
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "resources": {"quotaCheckStrategy": QUOTA_CHECK},
    }


def _yaml(value: dict[str, Any]) -> str:
    out = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(value, out)
    return out.getvalue()


def provisioning_groups(spec: ClusterSpec, cloud: str) -> tuple[str, ...]:
    """The node groups the cloud grows by queued provisioning (flex-start capacity, GKE's): their flavors
    need the PROVISIONING_CHECK. None where the cloud has no ProvisioningRequest class for it."""
    if cloud_part(cloud).QUEUED_PROVISIONING_CLASS is None:
        return ()
    return tuple(g.name for g in spec.node_groups if isinstance(g.capacity, FlexStart))


def admission_objects(spec: ClusterSpec, cloud: str) -> list[dict[str, Any]]:
    """The ProvisioningRequestConfig and the AdmissionCheck that make Kueue ask GKE for a queued workload's
    nodes before admitting it, on a GKE cluster with a flex-start node group (Cluster Toolkit's DWS
    flex-start example, kueue.x-k8s.io/v1beta2); empty otherwise."""
    provisioning_class = cloud_part(cloud).QUEUED_PROVISIONING_CLASS
    if provisioning_class is None or not provisioning_groups(spec, cloud):
        return []
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": PROVISIONING_CONFIG},
            "spec": {"provisioningClassName": provisioning_class, "managedResources": ["nvidia.com/gpu"]},
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "AdmissionCheck",
            "metadata": {"name": PROVISIONING_CHECK},
            "spec": {
                "controllerName": "kueue.x-k8s.io/provisioning-request",
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "ProvisioningRequestConfig",
                    "name": PROVISIONING_CONFIG,
                },
            },
        },
    ]
