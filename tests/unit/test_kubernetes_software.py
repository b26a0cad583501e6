"""The in-cluster software of a Kubernetes cluster: exact objects per cloud and fabric, the pins as their
sources print them, and every object valid for the Kubernetes OpenAPI schema of the cluster's version
(kubernetes-validate, strict: an unknown field is an error; offline, from the schemas it bundles).

The expected objects are written as the upstream manifests are (YAML), with what clusterfab changes:
node affinity to the node groups, clusterfab's label, and the notes in the manifests' modules."""

from __future__ import annotations

import copy
import io
from typing import Any

import kubernetes_validate
import pydantic
import pytest
from ruamel.yaml import YAML

from clusterfab.scheduler.kubernetes.section import Kubernetes
from clusterfab.scheduler.kubernetes.software import Image, in_cluster_objects, kubernetes_software
from clusterfab.spec.model import ClusterSpec
from tests.factories import spec

PAUSE = "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
NRI_INJECTOR = (
    "gcr.io/gke-release/nri-device-injector"
    "@sha256:6e79483d52abdc28454bf186320b10a56b0f117a10e8d65d5c74dbb821a76970"
)
"""Images with digests, too long for a line of the YAML below (PAUSE and NRI_INJECTOR stand for them)."""


def documents(text: str) -> list[dict[str, Any]]:
    text = text.replace("image: PAUSE", f"image: {PAUSE}").replace(
        "image: NRI_INJECTOR", f"image: {NRI_INJECTOR}"
    )
    return [d for d in YAML(typ="safe").load_all(io.StringIO(text)) if d is not None]


def schema_problems(objects: list[dict[str, Any]], version: str) -> list[str]:
    problems = []
    for item in objects:
        try:
            kubernetes_validate.validate(item, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.absolute_path)
            problems.append(f"{item['kind']} {item['metadata']['name']} {path}: {error.message}")
    return problems


def kubernetes(cloud: str, groups: list[dict[str, Any]], **scheduler: Any) -> ClusterSpec:
    return spec(cloud, node_groups=groups, scheduler={"kind": "kubernetes", **scheduler})


def keys(objects: list[dict[str, Any]]) -> list[str]:
    return [f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in objects]


AWS_GROUPS = [
    {"name": "train", "machine_type": "p5.48xlarge", "count": 2},
    {"name": "spare", "machine_type": "p5.48xlarge", "count": 1, "fabric": "none"},
]
GCP_GROUPS = [
    {"name": "mega", "machine_type": "a3-megagpu-8g", "count": 2},
    {"name": "high", "machine_type": "a3-highgpu-8g", "count": 2},
    {"name": "ultra", "machine_type": "a3-ultragpu-8g", "count": 2},
    {"name": "b200", "machine_type": "a4-highgpu-8g", "count": 2},
    {"name": "nvl", "machine_type": "a4x-highgpu-4g", "count": 18},
    {"name": "plain", "machine_type": "a3-megagpu-8g", "count": 1, "fabric": "none"},
]

MONITORING = """
apiVersion: v1
kind: Namespace
metadata:
  name: clusterfab-monitoring
  labels: {app.kubernetes.io/managed-by: clusterfab}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: clusterfab-node-agents
  labels: {app.kubernetes.io/managed-by: clusterfab}
value: 1000000
globalDefault: false
preemptionPolicy: Never
description: "clusterfab's per-node agents (GPU metrics): kept when the kubelet evicts workloads."
"""

EKS_DEVICE_PLUGINS = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nvidia-device-plugin-daemonset
  namespace: kube-system
  labels: {app.kubernetes.io/managed-by: clusterfab}
spec:
  selector:
    matchLabels:
      name: nvidia-device-plugin-ds
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
        name: nvidia-device-plugin-ds
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: clusterfab.dev/node-group, operator: In, values: [train, spare]}
      tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
      priorityClassName: "system-node-critical"
      containers:
      - image: nvcr.io/nvidia/k8s-device-plugin:v0.20.0
        name: nvidia-device-plugin-ctr
        securityContext:
          allowPrivilegeEscalation: false
          capabilities:
            drop: ["ALL"]
        volumeMounts:
        - name: kubelet-device-plugins-dir
          mountPath: /var/lib/kubelet/device-plugins
      volumes:
      - name: kubelet-device-plugins-dir
        hostPath:
          path: /var/lib/kubelet/device-plugins
          type: Directory
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: aws-efa-k8s-device-plugin
  namespace: kube-system
  labels: {app.kubernetes.io/managed-by: clusterfab}
spec:
  selector:
    matchLabels:
      name: aws-efa-k8s-device-plugin
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
        name: aws-efa-k8s-device-plugin
    spec:
      automountServiceAccountToken: false
      tolerations:
        - key: CriticalAddonsOnly
          operator: Exists
        - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      priorityClassName: "system-node-critical"
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: clusterfab.dev/node-group, operator: In, values: [train]}
      hostNetwork: true
      containers:
        - image: 602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20
          name: aws-efa-k8s-device-plugin
          securityContext:
            allowPrivilegeEscalation: true
            privileged: true
            runAsNonRoot: false
            runAsUser: 0
          resources:
            requests:
              cpu: 10m
              memory: 20Mi
          volumeMounts:
            - name: device-plugin
              mountPath: /var/lib/kubelet/device-plugins
            - name: infiniband-volume
              mountPath: /dev/infiniband/
            - name: neuron-tools
              mountPath: /opt/aws/neuron/
      volumes:
        - name: device-plugin
          hostPath:
            path: /var/lib/kubelet/device-plugins
        - name: infiniband-volume
          hostPath:
            path: /dev/infiniband/
        - name: neuron-tools
          hostPath:
            path: /opt/aws/neuron/
            type: DirectoryOrCreate
"""

DCGM_EXPORTER = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: "dcgm-exporter"
  namespace: clusterfab-monitoring
  labels:
    app.kubernetes.io/name: "dcgm-exporter"
    app.kubernetes.io/version: "4.5.3-4.8.2"
    app.kubernetes.io/managed-by: clusterfab
spec:
  updateStrategy:
    type: RollingUpdate
  selector:
    matchLabels:
      app.kubernetes.io/name: "dcgm-exporter"
  template:
    metadata:
      labels:
        app.kubernetes.io/name: "dcgm-exporter"
        app.kubernetes.io/version: "4.5.3-4.8.2"
    spec:
      automountServiceAccountToken: false
      priorityClassName: clusterfab-node-agents
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: clusterfab.dev/node-group, operator: In, values: [train, spare]}
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      - {key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule}
      containers:
      - image: "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"
        env:
        - name: "DCGM_EXPORTER_LISTEN"
          value: ":9400"
        - name: "DCGM_EXPORTER_KUBERNETES"
          value: "true"
        - name: "NODE_NAME"
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        name: "dcgm-exporter"
        ports:
        - name: "metrics"
          containerPort: 9400
          hostPort: 9400
        securityContext:
          runAsNonRoot: false
          runAsUser: 0
          capabilities:
            add: ["SYS_ADMIN"]
            drop: ["ALL"]
          allowPrivilegeEscalation: false
        volumeMounts:
        - name: "pod-gpu-resources"
          readOnly: true
          mountPath: "/var/lib/kubelet/pod-resources"
        resources:
          limits:
            cpu: 200m
            memory: 256Mi
          requests:
            cpu: 100m
            memory: 128Mi
      volumes:
      - name: "pod-gpu-resources"
        hostPath:
          path: "/var/lib/kubelet/pod-resources"
---
kind: Service
apiVersion: v1
metadata:
  name: "dcgm-exporter"
  namespace: clusterfab-monitoring
  labels:
    app.kubernetes.io/name: "dcgm-exporter"
    app.kubernetes.io/version: "4.5.3-4.8.2"
    app.kubernetes.io/managed-by: clusterfab
spec:
  selector:
    app.kubernetes.io/name: "dcgm-exporter"
  ports:
  - name: "metrics"
    port: 9400
"""


NODE_EXPORTER = """
# The node exporter's README, in a container: the host's network and PID namespaces and root file system.
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node-exporter
  namespace: clusterfab-monitoring
  labels:
    app.kubernetes.io/name: node-exporter
    app.kubernetes.io/version: 1.7.0
    app.kubernetes.io/managed-by: clusterfab
spec:
  updateStrategy:
    type: RollingUpdate
  selector:
    matchLabels:
      app.kubernetes.io/name: node-exporter
  template:
    metadata:
      labels:
        app.kubernetes.io/name: node-exporter
        app.kubernetes.io/version: 1.7.0
    spec:
      automountServiceAccountToken: false
      priorityClassName: clusterfab-node-agents
      hostNetwork: true
      hostPID: true
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: clusterfab.dev/node-group, operator: In, values: GROUPS}
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      - {key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule}
      containers:
      - name: node-exporter
        image: quay.io/prometheus/node-exporter:v1.7.0
        args: ["--path.rootfs=/host/root", "--web.listen-address=:9100"]
        ports:
        - {name: metrics, containerPort: 9100, hostPort: 9100}
        securityContext: {readOnlyRootFilesystem: true, runAsNonRoot: true, runAsUser: 65534}
        volumeMounts:
        - {name: root, mountPath: /host/root, readOnly: true, mountPropagation: HostToContainer}
        resources:
          limits: {cpu: 200m, memory: 128Mi}
          requests: {cpu: 50m, memory: 64Mi}
      volumes:
      - name: root
        hostPath: {path: /}
"""


def node_exporter(groups: list[str]) -> list[dict[str, Any]]:
    (daemonset,) = documents(NODE_EXPORTER)
    daemonset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = groups
    return [daemonset]


def test_eks_gets_the_nvidia_and_efa_device_plugins_and_the_dcgm_exporter() -> None:
    objects = in_cluster_objects(kubernetes("aws", AWS_GROUPS), "aws")
    assert objects == [
        *documents(MONITORING),
        *documents(EKS_DEVICE_PLUGINS),
        *documents(DCGM_EXPORTER),
        *node_exporter(["train", "spare"]),
    ]


def test_eks_without_efa_groups_has_no_efa_device_plugin() -> None:
    groups = [{"name": "spot", "machine_type": "p5.48xlarge", "count": 2, "fabric": "none"}]
    assert keys(in_cluster_objects(kubernetes("aws", groups), "aws")) == [
        "Namespace//clusterfab-monitoring",
        "PriorityClass//clusterfab-node-agents",
        "DaemonSet/kube-system/nvidia-device-plugin-daemonset",
        "DaemonSet/clusterfab-monitoring/dcgm-exporter",
        "Service/clusterfab-monitoring/dcgm-exporter",
        "DaemonSet/clusterfab-monitoring/node-exporter",
    ]


GKE_FABRICS = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: device-injector
  namespace: kube-system
  labels:
    k8s-app: device-injector
    app.kubernetes.io/managed-by: clusterfab
spec:
  selector:
    matchLabels:
      k8s-app: device-injector
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
        name: device-injector
        k8s-app: device-injector
    spec:
      priorityClassName: system-node-critical
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {key: clusterfab.dev/node-group, operator: In, values: [mega, high]}
      tolerations:
        - operator: "Exists"
      hostNetwork: true
      hostPID: true
      containers:
        - image: NRI_INJECTOR
          name: device-injector
          resources:
            requests:
              cpu: 150m
          securityContext:
            privileged: true
          volumeMounts:
            - name: dev
              mountPath: /dev
            - name: nri
              mountPath: /var/run/nri
      volumes:
        - name: nri
          hostPath:
            path: /var/run/nri
        - name: dev
          hostPath:
            path: /dev
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nccl-tcpxo-installer
  namespace: kube-system
  labels:
    k8s-app: nccl-tcpxo-installer
    app.kubernetes.io/managed-by: clusterfab
spec:
  selector:
    matchLabels:
      k8s-app: nccl-tcpxo-installer
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
        name: nccl-tcpxo-installer
        k8s-app: nccl-tcpxo-installer
    spec:
      priorityClassName: system-node-critical
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {key: clusterfab.dev/node-group, operator: In, values: [mega]}
      tolerations:
        - operator: "Exists"
      hostNetwork: true
      hostPID: true
      volumes:
        - name: var-lib
          hostPath:
            path: /var/lib
        - name: tcpxo
          hostPath:
            path: /var/lib/tcpxo
        - name: library-dir-host
          hostPath:
            path: /home/kubernetes/bin
      initContainers:
        - image: "ubuntu:22.04"
          name: pre-installation
          securityContext:
            privileged: true
          command:
            - nsenter
            - -at
            - '1'
            - --
            - sh
            - -c
            - |
              /sbin/iptables -I INPUT -p tcp -m tcp -j ACCEPT && modprobe import-helper
              sudo mkdir -p /dev/aperture_devices
              while IFS= read -r line; do
                BDF=$( echo "$line" | awk '{print $1}' );
                target_aperture_path="/dev/aperture_devices/$BDF"
                host_aperture_device=$(readlink -f "/sys/bus/pci/devices/$BDF");
                sudo mkdir -p $target_aperture_path;
                sudo umount -R $target_aperture_path;
                sudo mount --bind $host_aperture_device $target_aperture_path;
              done < <(lspci -nn -D | grep '1ae0:0084')
              if [ -d /dev/aperture_devices ]; then
                  chmod -R a+r /dev/aperture_devices/
                  chmod a+rw /dev/aperture_devices/*/resource*
              fi
        - name: nccl-tcpxo-installer
          image: us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15
          resources:
            requests:
              cpu: 150m
          securityContext:
            privileged: true
          volumeMounts:
            - name: var-lib
              mountPath: /var/lib
            - name: library-dir-host
              mountPath: /usr/local
          command: ["/bin/sh", "-c"]
          args:
            - |
              set -ex
              chmod 755 /scripts/container_entry.sh
              /scripts/container_entry.sh install --install-nccl
              mkdir -p /usr/local/nvidia/lib64
              cp -r /var/lib/tcpxo/lib64/. /usr/local/nvidia/lib64
              echo "installation finishes"
      containers:
        - image: PAUSE
          name: pause
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nccl-tcpx-installer
  namespace: kube-system
  labels:
    k8s-app: nccl-tcpx-installer
    app.kubernetes.io/managed-by: clusterfab
spec:
  selector:
    matchLabels:
      k8s-app: nccl-tcpx-installer
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
        name: nccl-tcpx-installer
        k8s-app: nccl-tcpx-installer
    spec:
      priorityClassName: system-node-critical
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {key: clusterfab.dev/node-group, operator: In, values: [high]}
      tolerations:
        - operator: "Exists"
      hostNetwork: true
      hostPID: true
      volumes:
        - name: var-lib
          hostPath:
            path: /var/lib
        - name: tcpx
          hostPath:
            path: /var/lib/tcpx
        - name: library-dir-host
          hostPath:
            path: /home/kubernetes/bin
      initContainers:
        - image: us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9
          name: nccl-tcpx-installer
          resources:
            requests:
              cpu: 150m
          securityContext:
            privileged: true
          volumeMounts:
            - name: var-lib
              mountPath: /var/lib
            - name: library-dir-host
              mountPath: /usr/local
          command: ["/bin/sh", "-c"]
          args:
            - |
              set -ex
              /scripts/container_entry.sh install --install-nccl
              mkdir -p /usr/local/nvidia/lib64
              cp -r /var/lib/tcpx/lib64/. /usr/local/nvidia/lib64
              echo "installation finishes"
      containers:
        - image: PAUSE
          name: pause
"""

RDMA = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {name}
  namespace: kube-system
  labels:
    k8s-app: {name}
    app.kubernetes.io/managed-by: clusterfab
spec:
  selector:
    matchLabels:
      k8s-app: {name}
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
        name: {name}
        k8s-app: {name}
    spec:
      priorityClassName: system-node-critical
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - key: clusterfab.dev/node-group
                    operator: In
                    values: {groups}
      tolerations:
        - operator: "Exists"
      hostNetwork: true
      hostPID: true
      volumes:
        - name: library-dir-host
          hostPath:
            path: /home/kubernetes/bin/nvidia/lib64
            type: DirectoryOrCreate
        - name: gib
          hostPath:
            path: /home/kubernetes/bin/gib
      initContainers:
        - image: {image}
          name: nccl-rdma-installer
          resources:
            requests:
              cpu: 150m
          securityContext:
            privileged: true
          volumeMounts:
            - name: library-dir-host
              mountPath: /usr/local/home/kubernetes/bin/nvidia/lib64
            - name: gib
              mountPath: /usr/local/home/kubernetes/bin/gib
          command: ["/bin/sh", "-c"]
          args:
            - |
              set -ex
              /scripts/container_entry.sh install
              cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64
              cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib
              echo "installation finishes"
      containers:
        - image: PAUSE
          name: pause
"""
RDMA_X86 = RDMA.format(
    name="nccl-rdma-installer",
    groups="[ultra, b200]",
    image="us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1",
)
RDMA_ARM64 = RDMA.format(
    name="nccl-rdma-installer-arm64",
    groups="[nvl]",
    image="us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-arm64:v1.1.0",
)


def gke_dcgm_exporter(groups: list[str]) -> list[dict[str, Any]]:
    """NVIDIA's exporter as on EKS, with what Google's GKE manifest adds: the host's driver directory,
    LD_LIBRARY_PATH to it, GPUs named by device, privileged."""
    daemonset, service = documents(DCGM_EXPORTER)
    pod = daemonset["spec"]["template"]["spec"]
    pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"
    ][0]["values"] = groups
    container = pod["containers"][0]
    container["env"] += [
        {"name": "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "value": "device-name"},
        {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"},
    ]
    container["volumeMounts"].append(
        {"name": "nvidia-install-dir-host", "mountPath": "/usr/local/nvidia", "readOnly": True}
    )
    container["securityContext"] = {"privileged": True, "runAsUser": 0}
    pod["volumes"].append(
        {
            "name": "nvidia-install-dir-host",
            "hostPath": {"path": "/home/kubernetes/bin/nvidia", "type": "Directory"},
        }
    )
    return [daemonset, service]


def test_gke_gets_each_fabrics_plugins_and_the_dcgm_exporter_but_no_device_plugin() -> None:
    objects = in_cluster_objects(kubernetes("gcp", GCP_GROUPS), "gcp")
    assert objects == [
        *documents(MONITORING),
        *documents(GKE_FABRICS),
        *documents(RDMA_X86),
        *documents(RDMA_ARM64),
        *gke_dcgm_exporter(["mega", "high", "ultra", "b200", "nvl", "plain"]),
        *node_exporter(["mega", "high", "ultra", "b200", "nvl", "plain"]),
    ]


def test_gke_a3_mega_alone_gets_the_injector_and_the_tcpxo_installer() -> None:
    groups = [{"name": "trainers", "machine_type": "a3-megagpu-8g", "count": 2}]
    assert keys(in_cluster_objects(kubernetes("gcp", groups), "gcp")) == [
        "Namespace//clusterfab-monitoring",
        "PriorityClass//clusterfab-node-agents",
        "DaemonSet/kube-system/device-injector",
        "DaemonSet/kube-system/nccl-tcpxo-installer",
        "DaemonSet/clusterfab-monitoring/dcgm-exporter",
        "Service/clusterfab-monitoring/dcgm-exporter",
        "DaemonSet/clusterfab-monitoring/node-exporter",
    ]


def test_a_cluster_of_tpu_slices_only_needs_nothing() -> None:
    tpu_only = spec(
        "gcp",
        tpu_slices=[{"name": "s", "generation": "v6e", "topology": "4x4"}],
        scheduler={"kind": "kubernetes"},
    )
    assert in_cluster_objects(tpu_only, "gcp") == []


def test_a_cloud_without_managed_kubernetes_is_refused() -> None:
    with pytest.raises(ValueError, match="no managed Kubernetes in-cluster software for cloud 'azure'"):
        in_cluster_objects(kubernetes("aws", AWS_GROUPS), "azure")


# --- the schema ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.33", "1.34", "1.35"])
@pytest.mark.parametrize(("cloud", "groups"), [("aws", AWS_GROUPS), ("gcp", GCP_GROUPS)], ids=["eks", "gke"])
def test_every_object_is_valid_for_the_clusters_kubernetes_version(
    cloud: str, groups: list[dict[str, Any]], version: str
) -> None:
    cluster = kubernetes(cloud, groups, version=version)
    assert isinstance(cluster.scheduler, Kubernetes)
    assert schema_problems(in_cluster_objects(cluster, cloud), f"{cluster.scheduler.version}.0") == []


def test_the_schema_check_catches_an_unknown_field_and_a_wrong_type() -> None:
    objects = copy.deepcopy(in_cluster_objects(kubernetes("aws", AWS_GROUPS), "aws"))
    objects[2]["spec"]["template"]["spec"]["tolerations"][0]["efect"] = "NoSchedule"
    objects[5]["spec"]["ports"][0]["port"] = "9400"
    assert schema_problems(objects, "1.35.0") == [
        "DaemonSet nvidia-device-plugin-daemonset spec.template.spec.tolerations.0: "
        "Additional properties are not allowed ('efect' was unexpected)",
        "Service dcgm-exporter spec.ports.0.port: '9400' is not of type 'integer'",
    ]


# --- the pins ------------------------------------------------------------------------------------------


def test_the_pins_are_the_ones_their_sources_print() -> None:
    pins = {
        piece.name: (piece.version, {role: image.reference for role, image in piece.images.items()})
        for piece in kubernetes_software().pieces
    }
    commit = "992db81257553607f1477945f1b3219632991829"
    pause = PAUSE
    registry = "us-docker.pkg.dev/gce-ai-infra"
    assert pins == {
        "nvidia-device-plugin": ("v0.20.0", {"plugin": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}),
        "efa-device-plugin": (
            "v0.5.30",
            {"plugin": "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20"},
        ),
        "nri-device-injector": (
            commit,
            {
                "injector": "gcr.io/gke-release/nri-device-injector"
                "@sha256:6e79483d52abdc28454bf186320b10a56b0f117a10e8d65d5c74dbb821a76970"
            },
        ),
        "nccl-tcpxo-installer": (
            commit,
            {
                "installer": f"{registry}/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15",
                "pre-installation": "ubuntu:22.04",
                "rxdm": f"{registry}/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21",
                "pause": pause,
            },
        ),
        "nccl-tcpx-installer": (
            commit,
            {
                "installer": f"{registry}/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9",
                "rxdm": f"{registry}/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12",
                "pause": pause,
            },
        ),
        "nccl-rdma-installer": (
            commit,
            {
                "installer-x86_64": f"{registry}/gpudirect-gib/nccl-plugin-gib:v1.1.1",
                "installer-arm64": f"{registry}/gpudirect-gib/nccl-plugin-gib-arm64:v1.1.0",
                "pause": pause,
            },
        ),
        "node-exporter": ("1.7.0", {"exporter": "quay.io/prometheus/node-exporter:v1.7.0"}),
        "dcgm-exporter": (
            "4.5.3-4.8.2",
            {"exporter": "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"},
        ),
        "kueue": ("v0.19.2", {"manager": "registry.k8s.io/kueue/kueue:v0.19.2"}),
        "jobset": ("v0.12.0", {"controller": "registry.k8s.io/jobset/jobset:v0.12.0"}),
        "queue-agent": ("3.13.9-slim-trixie", {"python": "python:3.13.9-slim-trixie"}),
        "dcgm": ("4.6.0", {"diag": "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"}),
        "pytorch": ("25.12", {"allreduce": "nvcr.io/nvidia/pytorch:25.12-py3"}),
    }


def test_every_pin_names_where_it_was_read_and_when() -> None:
    for piece in kubernetes_software().pieces:
        # An NGC framework container is published by its release notes, not in a repository.
        notes = "https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/rel-25-12.html"
        assert piece.source.startswith("https://github.com/") or (piece.name, piece.source) == (
            "pytorch",
            notes,
        ), piece.name
        assert all(url.startswith("https://") for url in piece.also), piece.name
        assert str(piece.as_of) == "2026-11-29", piece.name


def test_the_fabric_plugin_versions_agree_with_the_catalogs_where_both_pin_one() -> None:
    """TCPX and TCPXO: the catalog's fabric software (what Slurm nodes install) and GKE's installers
    pin the same plugin release."""
    from clusterfab.catalog import load_catalog

    catalog = load_catalog()
    software = kubernetes_software()
    assert catalog.fabric_software["gpudirect-tcpxo"].plugin_version == "v1.0.15"
    assert software.piece("nccl-tcpxo-installer").images["installer"].tag == "v1.0.15"
    assert catalog.fabric_software["gpudirect-tcpx"].plugin_version == "v3.1.9"
    assert software.piece("nccl-tcpx-installer").images["installer"].tag == "v3.1.9"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"repository": "ubuntu"}, "image ubuntu: give its tag or digest"),
        ({"repository": "ubuntu", "digest": "sha256:abc"}, "String should match pattern"),
    ],
)
def test_an_image_without_a_pin_is_refused(fields: dict[str, str], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        Image.model_validate(fields)


def test_no_two_objects_share_a_part_and_each_call_builds_them_anew() -> None:
    """The program may add Pulumi inputs to a manifest: a change to one object reaches no other, nor a
    later call's."""
    cluster = kubernetes("gcp", GCP_GROUPS)
    first = in_cluster_objects(cluster, "gcp")
    for item in first:
        item["spec" if "spec" in item else "metadata"].clear()
    assert in_cluster_objects(cluster, "gcp") == [
        *documents(MONITORING),
        *documents(GKE_FABRICS),
        *documents(RDMA_X86),
        *documents(RDMA_ARM64),
        *gke_dcgm_exporter(["mega", "high", "ultra", "b200", "nvl", "plain"]),
        *node_exporter(["mega", "high", "ultra", "b200", "nvl", "plain"]),
    ]
