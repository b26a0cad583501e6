"""Which GKE API field (container.v1 discovery document) each pulumi-gcp input of a cluster and a node pool
becomes, and why the Kubernetes objects applied in the cluster have none here.

The provider sends a cluster as `CreateClusterRequest.cluster` and a node pool as
`CreateNodePoolRequest.nodePool`; it renames some fields: a node pool's `nodeConfig` is the API's `config`,
its `guestAccelerators` the API's `accelerators`, its `nodeLocations` the API's `locations`, a cluster's
maintenance exclusions a map keyed by the exclusion's name. Each such entry carries a `note`.
"""

from __future__ import annotations

from tests.apimodels.check import Api, Free, Target
from tests.apimodels.mapping_gcp import PATH_PARAMETER, PULUMI_ONLY

_API = "container.v1"
_WINDOW = "Cluster.maintenancePolicy.window"
_EXCLUSION = f"{_WINDOW}.maintenanceExclusions{{}}"
_CONFIG = "NodePool.config"
_NODE_CONFIG_NOTE = "the provider's nodeConfig is the API's config"


def _c(path: str, note: str = "", *, ref: bool = False) -> Api:
    return Api(_API, f"Cluster.{path}", note=note, ref=ref)


def _labels(schema: str) -> Api:
    return Api(_API, f"{schema}{{}}", key=f"{schema}{{key}}")


def _node_config(prefix: str, schema: str) -> dict[str, Target]:
    """The node config fields a cluster's default pool and a node pool share."""
    note = _NODE_CONFIG_NOTE if schema == _CONFIG else ""
    return {
        f"{prefix}.oauthScopes[]": Api(_API, f"{schema}.oauthScopes[]", note=note),
        f"{prefix}.serviceAccount": Api(_API, f"{schema}.serviceAccount", ref=True, note=note),
        f"{prefix}.workloadMetadataConfig.mode": Api(
            _API, f"{schema}.workloadMetadataConfig.mode", note=note
        ),
    }


CLUSTER: dict[str, Target] = {
    "project": PATH_PARAMETER,
    "location": PATH_PARAMETER,
    "deletionProtection": Free("the provider's own guard: it refuses to delete the cluster; never sent"),
    "removeDefaultNodePool": Free("the provider deletes the default node pool once the cluster exists"),
    "name": _c("name"),
    "description": _c("description"),
    "network": _c("network", ref=True),
    "subnetwork": _c("subnetwork", ref=True),
    "initialNodeCount": _c("initialNodeCount"),
    "networkingMode": Free(
        "the provider sends VPC_NATIVE as ipAllocationPolicy.useIpAliases true (no networkingMode in the API)"
    ),
    "ipAllocationPolicy.clusterIpv4CidrBlock": _c("ipAllocationPolicy.clusterIpv4CidrBlock"),
    "ipAllocationPolicy.servicesIpv4CidrBlock": _c("ipAllocationPolicy.servicesIpv4CidrBlock"),
    "privateClusterConfig.enablePrivateNodes": _c("privateClusterConfig.enablePrivateNodes"),
    "privateClusterConfig.enablePrivateEndpoint": _c("privateClusterConfig.enablePrivateEndpoint"),
    "masterAuthorizedNetworksConfig.cidrBlocks[].cidrBlock": _c(
        "masterAuthorizedNetworksConfig.cidrBlocks[].cidrBlock",
        note="the provider sets masterAuthorizedNetworksConfig.enabled when the block is present",
    ),
    "masterAuthorizedNetworksConfig.cidrBlocks[].displayName": _c(
        "masterAuthorizedNetworksConfig.cidrBlocks[].displayName"
    ),
    "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled": _c(
        "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled"
    ),
    "controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic": _c(
        "controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic"
    ),
    "workloadIdentityConfig.workloadPool": _c("workloadIdentityConfig.workloadPool"),
    "datapathProvider": _c("networkConfig.datapathProvider", note="the provider flattens networkConfig"),
    "enableMultiNetworking": _c(
        "networkConfig.enableMultiNetworking", note="the provider flattens networkConfig"
    ),
    "addonsConfig.gcpFilestoreCsiDriverConfig.enabled": _c(
        "addonsConfig.gcpFilestoreCsiDriverConfig.enabled"
    ),
    "addonsConfig.lustreCsiDriverConfig.enabled": _c("addonsConfig.lustreCsiDriverConfig.enabled"),
    "releaseChannel.channel": _c("releaseChannel.channel"),
    "minMasterVersion": _c(
        "initialClusterVersion",
        note="sent as the initial version at creation; later the provider upgrades the master to at least it",
    ),
    "maintenancePolicy.recurringWindow.startTime": Api(
        _API, f"{_WINDOW}.recurringWindow.window.startTime", note="the provider flattens window"
    ),
    "maintenancePolicy.recurringWindow.endTime": Api(
        _API, f"{_WINDOW}.recurringWindow.window.endTime", note="the provider flattens window"
    ),
    "maintenancePolicy.recurringWindow.recurrence": Api(_API, f"{_WINDOW}.recurringWindow.recurrence"),
    "maintenancePolicy.maintenanceExclusions[].exclusionName": Api(
        _API,
        f"{_WINDOW}.maintenanceExclusions{{key}}",
        note="the provider's list of exclusions is the API's map keyed by their names",
    ),
    "maintenancePolicy.maintenanceExclusions[].startTime": Api(_API, f"{_EXCLUSION}.startTime"),
    "maintenancePolicy.maintenanceExclusions[].endTime": Api(_API, f"{_EXCLUSION}.endTime"),
    "maintenancePolicy.maintenanceExclusions[].exclusionOptions.scope": Api(
        _API,
        f"{_EXCLUSION}.maintenanceExclusionOptions.scope",
        note="the provider's exclusionOptions is the API's maintenanceExclusionOptions",
    ),
    "resourceLabels.*": _labels("Cluster.resourceLabels"),
    **_node_config("nodeConfig", "Cluster.nodeConfig"),
}

NODE_POOL: dict[str, Target] = {
    "project": PATH_PARAMETER,
    "location": PATH_PARAMETER,
    "cluster": PATH_PARAMETER,
    "name": Api(_API, "NodePool.name"),
    "nodeCount": Api(
        _API, "NodePool.initialNodeCount", note="sent as the initial count; later changes resize the pool"
    ),
    "nodeLocations[]": Api(
        _API, "NodePool.locations[]", note="the provider's nodeLocations is the API's locations"
    ),
    "autoscaling.totalMinNodeCount": Api(
        _API, "NodePool.autoscaling.totalMinNodeCount", note="the provider sets autoscaling.enabled"
    ),
    "autoscaling.totalMaxNodeCount": Api(_API, "NodePool.autoscaling.totalMaxNodeCount"),
    "autoscaling.locationPolicy": Api(_API, "NodePool.autoscaling.locationPolicy"),
    "management.autoRepair": Api(_API, "NodePool.management.autoRepair"),
    "management.autoUpgrade": Api(_API, "NodePool.management.autoUpgrade"),
    "upgradeSettings.strategy": Api(_API, "NodePool.upgradeSettings.strategy"),
    "upgradeSettings.maxSurge": Api(_API, "NodePool.upgradeSettings.maxSurge"),
    "upgradeSettings.maxUnavailable": Api(_API, "NodePool.upgradeSettings.maxUnavailable"),
    "placementPolicy.type": Api(_API, "NodePool.placementPolicy.type"),
    "placementPolicy.tpuTopology": Api(_API, "NodePool.placementPolicy.tpuTopology"),
    "queuedProvisioning.enabled": Api(_API, "NodePool.queuedProvisioning.enabled"),
    "networkConfig.enablePrivateNodes": Api(_API, "NodePool.networkConfig.enablePrivateNodes"),
    "networkConfig.additionalNodeNetworkConfigs[].network": Api(
        _API, "NodePool.networkConfig.additionalNodeNetworkConfigs[].network", ref=True
    ),
    "networkConfig.additionalNodeNetworkConfigs[].subnetwork": Api(
        _API, "NodePool.networkConfig.additionalNodeNetworkConfigs[].subnetwork", ref=True
    ),
    **_node_config("nodeConfig", _CONFIG),
    **{
        f"nodeConfig.{name}": Api(_API, f"{_CONFIG}.{name}", note=_NODE_CONFIG_NOTE)
        for name in (
            "machineType",
            "imageType",
            "diskSizeGb",
            "diskType",
            "bootDiskKmsKey",
            "spot",
            "flexStart",
            "gvnic.enabled",
            "ephemeralStorageLocalSsdConfig.localSsdCount",
            "shieldedInstanceConfig.enableSecureBoot",
            "shieldedInstanceConfig.enableIntegrityMonitoring",
            "reservationAffinity.consumeReservationType",
            "reservationAffinity.key",
            "reservationAffinity.values[]",
            "taints[].key",
            "taints[].value",
            "taints[].effect",
        )
    },
    "nodeConfig.guestAccelerators[].type": Api(
        _API, f"{_CONFIG}.accelerators[].acceleratorType", note="the provider's guestAccelerators[].type"
    ),
    "nodeConfig.guestAccelerators[].count": Api(
        _API, f"{_CONFIG}.accelerators[].acceleratorCount", note="the provider's guestAccelerators[].count"
    ),
    "nodeConfig.guestAccelerators[].gpuDriverInstallationConfig.gpuDriverVersion": Api(
        _API,
        f"{_CONFIG}.accelerators[].gpuDriverInstallationConfig.gpuDriverVersion",
        note="the provider's guestAccelerators are the API's accelerators",
    ),
    "nodeConfig.metadata.*": _labels(f"{_CONFIG}.metadata"),
    "nodeConfig.resourceLabels.*": _labels(f"{_CONFIG}.resourceLabels"),
    # Kubernetes label keys carry dots (clusterfab.dev/node-group), which a `*` segment does not match.
    "nodeConfig.labels.clusterfab.dev/node-group": _labels(f"{_CONFIG}.labels"),
    "nodeConfig.labels.clusterfab.dev/tpu-slice": _labels(f"{_CONFIG}.labels"),
}

_IN_CLUSTER = Free(
    "a Kubernetes object the cluster's API server takes, not a GKE API field: the objects are checked "
    "against the Kubernetes OpenAPI schema and GKE's documented shapes in tests/components/test_gke.py"
)

_OBJECT_FIELDS: dict[str, tuple[str, ...]] = {
    "kubernetes:core/v1:Namespace": (
        "metadata.labels.app.kubernetes.io/managed-by",
        "metadata.labels.clusterfab.dev/cluster",
        "metadata.labels.clusterfab.dev/priority",
        "metadata.labels.clusterfab.dev/team",
    ),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": (
        "metadata.namespace",
        "metadata.labels.app.kubernetes.io/managed-by",
        "metadata.labels.clusterfab.dev/team",
        "roleRef.apiGroup",
        "roleRef.kind",
        "roleRef.name",
        "subjects[].apiGroup",
        "subjects[].kind",
        "subjects[].name",
    ),
    "kubernetes:networking.gke.io/v1:GKENetworkParamSet": ("spec.vpc", "spec.vpcSubnet", "spec.deviceMode"),
    "kubernetes:networking.gke.io/v1:Network": (
        "spec.type",
        "spec.parametersRef.group",
        "spec.parametersRef.kind",
        "spec.parametersRef.name",
    ),
}
"""The fields of each kind of object the program applies in a GKE cluster (besides apiVersion, kind and
metadata.name)."""

GKE: dict[str, dict[str, Target]] = {
    "gcp:container/cluster:Cluster": CLUSTER,
    "gcp:container/nodePool:NodePool": NODE_POOL,
    "pulumi:providers:kubernetes": {"kubeconfig": PULUMI_ONLY, "enableServerSideApply": PULUMI_ONLY},
    **{
        token: dict.fromkeys(("apiVersion", "kind", "metadata.name", *fields), _IN_CLUSTER)
        for token, fields in _OBJECT_FIELDS.items()
    },
}
