"""Which Google API field each pulumi-gcp input becomes: per type token, Pulumi property path -> field
of a discovery document schema (or of the Managed Lustre protobuf).

pulumi-gcp wraps terraform-provider-google, which often renames or flattens the API's fields: an
instance template's `disks[].diskType` is the API's `disks[].initializeParams.diskType`, its
`reservationAffinity.type` is `consumeReservationType`, its `serviceAccount` the API's
`serviceAccounts[]`. Each such entry carries a `note`.
"""

from __future__ import annotations

from tests.apimodels.check import Api, Free, Target

PATH_PARAMETER = Free("a path parameter of the request URL (projects/{project}/...), not a body field")
PULUMI_ONLY = Free("a provider setting: never sent to the API")

_QR_NODE = "QueuedResource.tpu.nodeSpec[].node"


_IT = "InstanceTemplate.properties"
_SCHED = f"{_IT}.scheduling"


_SNAP = "ResourcePolicy.snapshotSchedulePolicy"
_SQL = "DatabaseInstance.settings"


def _labels(api: str, schema: str, field: str = "labels") -> Api:
    return Api(api, f"{schema}.{field}{{}}", key=f"{schema}.{field}{{key}}")


GCP: dict[str, dict[str, Target]] = {
    "pulumi:providers:gcp": {
        "project": Free("the provider's default project for path parameters"),
        "region": Free("the provider's default region for path parameters"),
    },
    "gcp:compute/instanceTemplate:InstanceTemplate": {
        "namePrefix": Free(
            "the provider sends InstanceTemplate.name: the prefix and 9 random characters (a timestamp and a "
            "counter for a prefix of 37 or less)"
        ),
        "description": Api("compute.v1", "InstanceTemplate.description"),
        "disks[].autoDelete": Api("compute.v1", f"{_IT}.disks[].autoDelete"),
        "disks[].boot": Api("compute.v1", f"{_IT}.disks[].boot"),
        "disks[].diskSizeGb": Api(
            "compute.v1",
            f"{_IT}.disks[].initializeParams.diskSizeGb",
            note="the provider flattens initializeParams",
        ),
        "disks[].diskType": Api(
            "compute.v1",
            f"{_IT}.disks[].initializeParams.diskType",
            note="the provider flattens initializeParams",
        ),
        "disks[].diskEncryptionKey.kmsKeySelfLink": Api(
            "compute.v1",
            f"{_IT}.disks[].diskEncryptionKey.kmsKeyName",
            note="the provider's kms_key_self_link is the API's kmsKeyName",
        ),
        "disks[].sourceImage": Api(
            "compute.v1",
            f"{_IT}.disks[].initializeParams.sourceImage",
            note="the provider flattens initializeParams",
        ),
        "disks[].labels.*": Api(
            "compute.v1",
            f"{_IT}.disks[].initializeParams.labels{{}}",
            key=f"{_IT}.disks[].initializeParams.labels{{key}}",
            note="the provider flattens initializeParams",
        ),
        "labels.*": _labels("compute.v1", _IT),
        "machineType": Api("compute.v1", f"{_IT}.machineType"),
        "metadata.*": Api(
            "compute.v1",
            f"{_IT}.metadata.items[].value",
            key=f"{_IT}.metadata.items[].key",
            note="the provider's metadata map is the API's list of key/value items",
        ),
        "networkInterfaces[].nicType": Api("compute.v1", f"{_IT}.networkInterfaces[].nicType"),
        "networkInterfaces[].network": Api("compute.v1", f"{_IT}.networkInterfaces[].network", ref=True),
        "networkInterfaces[].subnetwork": Api(
            "compute.v1", f"{_IT}.networkInterfaces[].subnetwork", ref=True
        ),
        "networkInterfaces[].queueCount": Api("compute.v1", f"{_IT}.networkInterfaces[].queueCount"),
        "networkInterfaces[].stackType": Api("compute.v1", f"{_IT}.networkInterfaces[].stackType"),
        "project": PATH_PARAMETER,
        "reservationAffinity.specificReservation.key": Api(
            "compute.v1",
            f"{_IT}.reservationAffinity.key",
            note="the provider nests key/values in specificReservation",
        ),
        "reservationAffinity.specificReservation.values[]": Api(
            "compute.v1",
            f"{_IT}.reservationAffinity.values[]",
            note="the provider nests key/values in specificReservation",
        ),
        "reservationAffinity.type": Api(
            "compute.v1",
            f"{_IT}.reservationAffinity.consumeReservationType",
            note="the provider's type is the API's consumeReservationType",
        ),
        "scheduling.automaticRestart": Api("compute.v1", f"{_SCHED}.automaticRestart"),
        "scheduling.instanceTerminationAction": Api("compute.v1", f"{_SCHED}.instanceTerminationAction"),
        "scheduling.maxRunDuration.seconds": Api("compute.v1", f"{_SCHED}.maxRunDuration.seconds"),
        "scheduling.maxRunDuration.nanos": Api("compute.v1", f"{_SCHED}.maxRunDuration.nanos"),
        "scheduling.onHostMaintenance": Api("compute.v1", f"{_SCHED}.onHostMaintenance"),
        "scheduling.preemptible": Api("compute.v1", f"{_SCHED}.preemptible"),
        "scheduling.provisioningModel": Api("compute.v1", f"{_SCHED}.provisioningModel"),
        "serviceAccount.email": Api(
            "compute.v1",
            f"{_IT}.serviceAccounts[].email",
            ref=True,
            note="the provider's one account is a list",
        ),
        "serviceAccount.scopes[]": Api(
            "compute.v1", f"{_IT}.serviceAccounts[].scopes[]", note="the provider's one account is a list"
        ),
        "shieldedInstanceConfig.enableIntegrityMonitoring": Api(
            "compute.v1", f"{_IT}.shieldedInstanceConfig.enableIntegrityMonitoring"
        ),
        "shieldedInstanceConfig.enableSecureBoot": Api(
            "compute.v1", f"{_IT}.shieldedInstanceConfig.enableSecureBoot"
        ),
        "shieldedInstanceConfig.enableVtpm": Api("compute.v1", f"{_IT}.shieldedInstanceConfig.enableVtpm"),
    },
    "gcp:compute/instanceGroupManager:InstanceGroupManager": {
        "name": Api("compute.v1", "InstanceGroupManager.name"),
        "baseInstanceName": Api("compute.v1", "InstanceGroupManager.baseInstanceName"),
        "description": Api("compute.v1", "InstanceGroupManager.description"),
        "project": PATH_PARAMETER,
        "resourcePolicies.workloadPolicy": Api(
            "compute.v1", "InstanceGroupManager.resourcePolicies.workloadPolicy", ref=True
        ),
        "targetSize": Api("compute.v1", "InstanceGroupManager.targetSize"),
        "targetSizePolicies[].mode": Api(
            "compute.v1",
            "InstanceGroupManager.targetSizePolicy.mode",
            note="the provider's list of at most one policy is the API's single targetSizePolicy",
        ),
        "updatePolicy.maxSurgeFixed": Api(
            "compute.v1", "InstanceGroupManager.updatePolicy.maxSurge.fixed", note="FixedOrPercent, flattened"
        ),
        "updatePolicy.maxUnavailableFixed": Api(
            "compute.v1",
            "InstanceGroupManager.updatePolicy.maxUnavailable.fixed",
            note="FixedOrPercent, flattened",
        ),
        "updatePolicy.minimalAction": Api("compute.v1", "InstanceGroupManager.updatePolicy.minimalAction"),
        "updatePolicy.replacementMethod": Api(
            "compute.v1", "InstanceGroupManager.updatePolicy.replacementMethod"
        ),
        "updatePolicy.type": Api("compute.v1", "InstanceGroupManager.updatePolicy.type"),
        "versions[].instanceTemplate": Api(
            "compute.v1", "InstanceGroupManager.versions[].instanceTemplate", ref=True
        ),
        "versions[].name": Api("compute.v1", "InstanceGroupManager.versions[].name"),
        "waitForInstances": PULUMI_ONLY,
        "zone": PATH_PARAMETER,
    },
    "gcp:compute/resourcePolicy:ResourcePolicy": {
        "description": Api("compute.v1", "ResourcePolicy.description"),
        "groupPlacementPolicy.collocation": Api(
            "compute.v1", "ResourcePolicy.groupPlacementPolicy.collocation"
        ),
        "groupPlacementPolicy.gpuTopology": Api(
            "compute.v1", "ResourcePolicy.groupPlacementPolicy.gpuTopology"
        ),
        "name": Api("compute.v1", "ResourcePolicy.name"),
        "project": PATH_PARAMETER,
        "region": PATH_PARAMETER,
        "workloadPolicy.acceleratorTopology": Api(
            "compute.v1", "ResourcePolicy.workloadPolicy.acceleratorTopology"
        ),
        "workloadPolicy.maxTopologyDistance": Api(
            "compute.v1", "ResourcePolicy.workloadPolicy.maxTopologyDistance"
        ),
        "workloadPolicy.type": Api("compute.v1", "ResourcePolicy.workloadPolicy.type"),
        "snapshotSchedulePolicy.schedule.dailySchedule.daysInCycle": Api(
            "compute.v1", f"{_SNAP}.schedule.dailySchedule.daysInCycle"
        ),
        "snapshotSchedulePolicy.schedule.dailySchedule.startTime": Api(
            "compute.v1", f"{_SNAP}.schedule.dailySchedule.startTime"
        ),
        "snapshotSchedulePolicy.retentionPolicy.maxRetentionDays": Api(
            "compute.v1", f"{_SNAP}.retentionPolicy.maxRetentionDays"
        ),
        "snapshotSchedulePolicy.retentionPolicy.onSourceDiskDelete": Api(
            "compute.v1", f"{_SNAP}.retentionPolicy.onSourceDiskDelete"
        ),
        "snapshotSchedulePolicy.snapshotProperties.labels.*": _labels(
            "compute.v1", f"{_SNAP}.snapshotProperties"
        ),
        "snapshotSchedulePolicy.snapshotProperties.storageLocations": Api(
            "compute.v1",
            f"{_SNAP}.snapshotProperties.storageLocations[]",
            note="the provider takes the API's one-item list",
        ),
    },
    "gcp:compute/diskResourcePolicyAttachment:DiskResourcePolicyAttachment": {
        "disk": PATH_PARAMETER,
        "name": Api(
            "compute.v1",
            "DisksAddResourcePoliciesRequest.resourcePolicies[]",
            ref=True,
            note="the provider sends the policy's name as the request's one resourcePolicies item",
        ),
        "project": PATH_PARAMETER,
        "zone": PATH_PARAMETER,
    },
    "gcp:compute/address:Address": {
        "address": Api("compute.v1", "Address.address"),
        "addressType": Api("compute.v1", "Address.addressType"),
        "description": Api("compute.v1", "Address.description"),
        "labels.*": _labels("compute.v1", "Address"),
        "project": PATH_PARAMETER,
        "region": PATH_PARAMETER,
        "subnetwork": Api("compute.v1", "Address.subnetwork", ref=True),
    },
    "gcp:compute/disk:Disk": {
        "description": Api("compute.v1", "Disk.description"),
        "diskEncryptionKey.kmsKeySelfLink": Api(
            "compute.v1",
            "Disk.diskEncryptionKey.kmsKeyName",
            note="the provider's kms_key_self_link is the API's kmsKeyName",
        ),
        "labels.*": _labels("compute.v1", "Disk"),
        "project": PATH_PARAMETER,
        "size": Api("compute.v1", "Disk.sizeGb", note="the provider's size is the API's sizeGb"),
        "type": Api("compute.v1", "Disk.type", note="the provider takes the type's name for the API's URL"),
        "zone": PATH_PARAMETER,
    },
    "gcp:compute/instance:Instance": {
        "allowStoppingForUpdate": PULUMI_ONLY,
        "attachedDisks[].deviceName": Api(
            "compute.v1",
            "Instance.disks[].deviceName",
            note="the provider's attachedDisks are non-boot disks[]",
        ),
        "attachedDisks[].source": Api(
            "compute.v1",
            "Instance.disks[].source",
            ref=True,
            note="the provider's attachedDisks are non-boot disks[]",
        ),
        "bootDisk.autoDelete": Api(
            "compute.v1",
            "Instance.disks[].autoDelete",
            note="the provider's bootDisk is the disks[] item with boot",
        ),
        "bootDisk.kmsKeySelfLink": Api(
            "compute.v1",
            "Instance.disks[].diskEncryptionKey.kmsKeyName",
            note="the provider's bootDisk.kms_key_self_link is the boot disk's diskEncryptionKey.kmsKeyName",
        ),
        "bootDisk.initializeParams.image": Api(
            "compute.v1", "Instance.disks[].initializeParams.sourceImage", note="the provider's image"
        ),
        "bootDisk.initializeParams.labels.*": Api(
            "compute.v1",
            "Instance.disks[].initializeParams.labels{}",
            key="Instance.disks[].initializeParams.labels{key}",
        ),
        "bootDisk.initializeParams.size": Api(
            "compute.v1", "Instance.disks[].initializeParams.diskSizeGb", note="the provider's size"
        ),
        "bootDisk.initializeParams.type": Api(
            "compute.v1", "Instance.disks[].initializeParams.diskType", note="the provider's type"
        ),
        "labels.*": _labels("compute.v1", "Instance"),
        "machineType": Api("compute.v1", "Instance.machineType"),
        "metadata.*": Api(
            "compute.v1",
            "Instance.metadata.items[].value",
            key="Instance.metadata.items[].key",
            note="the provider's metadata map is the API's list of key/value items",
        ),
        "name": Api("compute.v1", "Instance.name"),
        "networkInterfaces[].networkIp": Api(
            "compute.v1", "Instance.networkInterfaces[].networkIP", note="the provider's networkIp"
        ),
        "networkInterfaces[].subnetwork": Api(
            "compute.v1", "Instance.networkInterfaces[].subnetwork", ref=True
        ),
        "project": PATH_PARAMETER,
        "serviceAccount.email": Api(
            "compute.v1",
            "Instance.serviceAccounts[].email",
            ref=True,
            note="the provider's one account is a list",
        ),
        "serviceAccount.scopes[]": Api(
            "compute.v1", "Instance.serviceAccounts[].scopes[]", note="the provider's one account is a list"
        ),
        "shieldedInstanceConfig.enableIntegrityMonitoring": Api(
            "compute.v1", "Instance.shieldedInstanceConfig.enableIntegrityMonitoring"
        ),
        "shieldedInstanceConfig.enableSecureBoot": Api(
            "compute.v1", "Instance.shieldedInstanceConfig.enableSecureBoot"
        ),
        "shieldedInstanceConfig.enableVtpm": Api("compute.v1", "Instance.shieldedInstanceConfig.enableVtpm"),
        "zone": PATH_PARAMETER,
    },
    "gcp:compute/network:Network": {
        "autoCreateSubnetworks": Api("compute.v1", "Network.autoCreateSubnetworks"),
        "description": Api("compute.v1", "Network.description"),
        "mtu": Api("compute.v1", "Network.mtu"),
        "networkProfile": Api("compute.v1", "Network.networkProfile"),
        "project": PATH_PARAMETER,
        "routingMode": Api(
            "compute.v1", "Network.routingConfig.routingMode", note="the provider flattens routingConfig"
        ),
    },
    "gcp:compute/subnetwork:Subnetwork": {
        "name": Api("compute.v1", "Subnetwork.name"),
        "ipCidrRange": Api("compute.v1", "Subnetwork.ipCidrRange"),
        "network": Api("compute.v1", "Subnetwork.network", ref=True),
        "privateIpGoogleAccess": Api("compute.v1", "Subnetwork.privateIpGoogleAccess"),
        "logConfig.aggregationInterval": Api("compute.v1", "Subnetwork.logConfig.aggregationInterval"),
        "logConfig.flowSampling": Api("compute.v1", "Subnetwork.logConfig.flowSampling"),
        "logConfig.metadata": Api("compute.v1", "Subnetwork.logConfig.metadata"),
        "project": PATH_PARAMETER,
        "region": PATH_PARAMETER,
    },
    "gcp:compute/firewall:Firewall": {
        "name": Api("compute.v1", "Firewall.name"),
        "targetServiceAccounts[]": Api("compute.v1", "Firewall.targetServiceAccounts[]", ref=True),
        "allows[].ports[]": Api("compute.v1", "Firewall.allowed[].ports[]"),
        "allows[].protocol": Api(
            "compute.v1",
            "Firewall.allowed[].IPProtocol",
            note="the provider's allows[].protocol is IPProtocol",
        ),
        "description": Api("compute.v1", "Firewall.description"),
        "direction": Api("compute.v1", "Firewall.direction"),
        "network": Api("compute.v1", "Firewall.network", ref=True),
        "priority": Api("compute.v1", "Firewall.priority"),
        "project": PATH_PARAMETER,
        "sourceRanges[]": Api("compute.v1", "Firewall.sourceRanges[]"),
    },
    "gcp:compute/globalAddress:GlobalAddress": {
        "address": Api("compute.v1", "Address.address"),
        "addressType": Api("compute.v1", "Address.addressType"),
        "description": Api("compute.v1", "Address.description"),
        "labels.*": _labels("compute.v1", "Address"),
        "network": Api("compute.v1", "Address.network", ref=True),
        "prefixLength": Api("compute.v1", "Address.prefixLength"),
        "project": PATH_PARAMETER,
        "purpose": Api("compute.v1", "Address.purpose"),
    },
    "gcp:compute/router:Router": {
        "network": Api("compute.v1", "Router.network", ref=True),
        "project": PATH_PARAMETER,
        "region": PATH_PARAMETER,
    },
    "gcp:compute/routerNat:RouterNat": {
        "logConfig.enable": Api("compute.v1", "Router.nats[].logConfig.enable"),
        "logConfig.filter": Api("compute.v1", "Router.nats[].logConfig.filter"),
        "natIpAllocateOption": Api(
            "compute.v1",
            "Router.nats[].natIpAllocateOption",
            note="a RouterNat is an entry of its router's nats[]",
        ),
        "project": PATH_PARAMETER,
        "region": PATH_PARAMETER,
        "router": Free("the router whose nats[] the provider patches: a path parameter"),
        "sourceSubnetworkIpRangesToNat": Api("compute.v1", "Router.nats[].sourceSubnetworkIpRangesToNat"),
    },
    # The multislice request our dynamic provider posts to tpu.v2 projects.locations.queuedResources.create.
    "pulumi-python:dynamic/gcp-tpu:QueuedResource": {
        "__provider": PULUMI_ONLY,
        "project": PATH_PARAMETER,
        "zone": PATH_PARAMETER,
        "queued_resource_id": Free("the queuedResourceId query parameter of queuedResources.create"),
        "body.reservationName": Api("tpu.v2", "QueuedResource.reservationName", ref=True),
        "body.tpu.nodeSpec[].parent": Api("tpu.v2", "QueuedResource.tpu.nodeSpec[].parent"),
        "body.tpu.nodeSpec[].multisliceParams.nodeCount": Api(
            "tpu.v2", "QueuedResource.tpu.nodeSpec[].multisliceParams.nodeCount"
        ),
        "body.tpu.nodeSpec[].multisliceParams.nodeIdPrefix": Api(
            "tpu.v2", "QueuedResource.tpu.nodeSpec[].multisliceParams.nodeIdPrefix"
        ),
        "body.tpu.nodeSpec[].node.acceleratorType": Api("tpu.v2", f"{_QR_NODE}.acceleratorType"),
        "body.tpu.nodeSpec[].node.description": Api("tpu.v2", f"{_QR_NODE}.description"),
        "body.tpu.nodeSpec[].node.labels.*": _labels("tpu.v2", "Node"),
        "body.tpu.nodeSpec[].node.metadata.*": Api(
            "tpu.v2", f"{_QR_NODE}.metadata{{}}", key=f"{_QR_NODE}.metadata{{key}}"
        ),
        "body.tpu.nodeSpec[].node.networkConfig.canIpForward": Api(
            "tpu.v2", f"{_QR_NODE}.networkConfig.canIpForward"
        ),
        "body.tpu.nodeSpec[].node.networkConfig.enableExternalIps": Api(
            "tpu.v2", f"{_QR_NODE}.networkConfig.enableExternalIps"
        ),
        "body.tpu.nodeSpec[].node.networkConfig.network": Api(
            "tpu.v2", f"{_QR_NODE}.networkConfig.network", ref=True
        ),
        "body.tpu.nodeSpec[].node.networkConfig.subnetwork": Api(
            "tpu.v2", f"{_QR_NODE}.networkConfig.subnetwork", ref=True
        ),
        "body.tpu.nodeSpec[].node.runtimeVersion": Api("tpu.v2", f"{_QR_NODE}.runtimeVersion"),
        "body.tpu.nodeSpec[].node.serviceAccount.email": Api(
            "tpu.v2", f"{_QR_NODE}.serviceAccount.email", ref=True
        ),
        "body.tpu.nodeSpec[].node.serviceAccount.scope[]": Api(
            "tpu.v2", f"{_QR_NODE}.serviceAccount.scope[]"
        ),
    },
    "gcp:tpu/v2Vm:V2Vm": {
        "name": Free("the nodeId query parameter of projects.locations.nodes.create"),
        "acceleratorType": Api("tpu.v2", "Node.acceleratorType"),
        "acceleratorConfig.type": Api("tpu.v2", "Node.acceleratorConfig.type"),
        "acceleratorConfig.topology": Api("tpu.v2", "Node.acceleratorConfig.topology"),
        "description": Api("tpu.v2", "Node.description"),
        "labels.*": _labels("tpu.v2", "Node"),
        "metadata.*": Api("tpu.v2", "Node.metadata{}", key="Node.metadata{key}"),
        "networkConfig.canIpForward": Api("tpu.v2", "Node.networkConfig.canIpForward"),
        "networkConfig.enableExternalIps": Api("tpu.v2", "Node.networkConfig.enableExternalIps"),
        "networkConfig.network": Api("tpu.v2", "Node.networkConfig.network", ref=True),
        "networkConfig.subnetwork": Api("tpu.v2", "Node.networkConfig.subnetwork", ref=True),
        "project": PATH_PARAMETER,
        "runtimeVersion": Api("tpu.v2", "Node.runtimeVersion"),
        "schedulingConfig.preemptible": Api("tpu.v2", "Node.schedulingConfig.preemptible"),
        "schedulingConfig.reserved": Api("tpu.v2", "Node.schedulingConfig.reserved"),
        "schedulingConfig.spot": Api("tpu.v2", "Node.schedulingConfig.spot"),
        "serviceAccount.email": Api("tpu.v2", "Node.serviceAccount.email", ref=True),
        "serviceAccount.scopes[]": Api(
            "tpu.v2", "Node.serviceAccount.scope[]", note="the provider's scopes is the API's scope"
        ),
        "zone": PATH_PARAMETER,
    },
    "gcp:filestore/instance:Instance": {
        "name": Free("the instanceId query parameter of projects.locations.instances.create"),
        "deletionProtectionEnabled": Api("file.v1", "Instance.deletionProtectionEnabled"),
        "description": Api("file.v1", "Instance.description"),
        "fileShares.capacityGb": Api(
            "file.v1", "Instance.fileShares[].capacityGb", note="the provider's one share is the API's list"
        ),
        "fileShares.name": Api(
            "file.v1", "Instance.fileShares[].name", note="the provider's one share is a list"
        ),
        "fileShares.nfsExportOptions[].accessMode": Api(
            "file.v1", "Instance.fileShares[].nfsExportOptions[].accessMode"
        ),
        "fileShares.nfsExportOptions[].anonGid": Api(
            "file.v1", "Instance.fileShares[].nfsExportOptions[].anonGid"
        ),
        "fileShares.nfsExportOptions[].anonUid": Api(
            "file.v1", "Instance.fileShares[].nfsExportOptions[].anonUid"
        ),
        "fileShares.nfsExportOptions[].ipRanges[]": Api(
            "file.v1", "Instance.fileShares[].nfsExportOptions[].ipRanges[]"
        ),
        "fileShares.nfsExportOptions[].squashMode": Api(
            "file.v1", "Instance.fileShares[].nfsExportOptions[].squashMode"
        ),
        "kmsKeyName": Api("file.v1", "Instance.kmsKeyName"),
        "labels.*": _labels("file.v1", "Instance"),
        "location": PATH_PARAMETER,
        "networks[].connectMode": Api("file.v1", "Instance.networks[].connectMode"),
        "networks[].modes[]": Api("file.v1", "Instance.networks[].modes[]"),
        "networks[].network": Api("file.v1", "Instance.networks[].network", ref=True),
        "networks[].reservedIpRange": Api("file.v1", "Instance.networks[].reservedIpRange", ref=True),
        "project": PATH_PARAMETER,
        "tier": Api("file.v1", "Instance.tier"),
    },
    "gcp:lustre/instance:Instance": {
        "capacityGib": Api("lustre.v1", "Instance.capacityGib"),
        "description": Api("lustre.v1", "Instance.description"),
        "filesystem": Api("lustre.v1", "Instance.filesystem"),
        "gkeSupportEnabled": Api("lustre.v1", "Instance.gkeSupportEnabled"),
        "instanceId": Api("lustre.v1", "CreateInstanceRequest.instanceId"),
        "kmsKey": Free(
            "the API's Instance.kms_key is newer than the model read here (google-cloud-lustre 0.4.1; 0.4.3 "
            "has it, and would bring protobuf 6): gcloud lustre instances create --kms-key, pulumi-gcp's "
            "lustre.Instance kms_key"
        ),
        "labels.*": Api("lustre.v1", "Instance.labels{}", key="Instance.labels{key}"),
        "location": PATH_PARAMETER,
        "network": Api("lustre.v1", "Instance.network", ref=True),
        "perUnitStorageThroughput": Api("lustre.v1", "Instance.perUnitStorageThroughput"),
        "project": PATH_PARAMETER,
    },
    "gcp:storage/bucket:Bucket": {
        "forceDestroy": PULUMI_ONLY,
        "labels.*": _labels("storage.v1", "Bucket"),
        "location": Api("storage.v1", "Bucket.location"),
        "project": Free("a query parameter of buckets.insert"),
        "publicAccessPrevention": Api(
            "storage.v1",
            "Bucket.iamConfiguration.publicAccessPrevention",
            note="flattened from iamConfiguration",
        ),
        "storageClass": Api("storage.v1", "Bucket.storageClass"),
        "encryption.defaultKmsKeyName": Api("storage.v1", "Bucket.encryption.defaultKmsKeyName"),
        "uniformBucketLevelAccess": Api(
            "storage.v1",
            "Bucket.iamConfiguration.uniformBucketLevelAccess.enabled",
            note="flattened from iamConfiguration",
        ),
        "versioning.enabled": Api("storage.v1", "Bucket.versioning.enabled"),
    },
    "gcp:storage/bucketObject:BucketObject": {
        "bucket": Api("storage.v1", "Object.bucket", ref=True),
        "contentType": Api("storage.v1", "Object.contentType"),
        "name": Api("storage.v1", "Object.name"),
        "source": Free("a local asset the provider uploads as the object's media"),
    },
    "gcp:storage/bucketIAMMember:BucketIAMMember": {
        "bucket": Free("the bucket whose IAM policy the provider patches: a path parameter"),
        "member": Api("storage.v1", "Policy.bindings[].members[]", ref=True),
        "role": Api("storage.v1", "Policy.bindings[].role"),
    },
    "gcp:projects/iAMMember:IAMMember": {
        "condition.expression": Api("cloudresourcemanager.v1", "Binding.condition.expression"),
        "condition.title": Api("cloudresourcemanager.v1", "Binding.condition.title"),
        "member": Api("cloudresourcemanager.v1", "Binding.members[]", ref=True),
        "project": PATH_PARAMETER,
        "role": Api("cloudresourcemanager.v1", "Binding.role"),
    },
    "gcp:projects/iAMCustomRole:IAMCustomRole": {
        "description": Api("iam.v1", "CreateRoleRequest.role.description"),
        "permissions[]": Api(
            "iam.v1", "CreateRoleRequest.role.includedPermissions[]", note="the provider's permissions"
        ),
        "project": PATH_PARAMETER,
        "roleId": Api("iam.v1", "CreateRoleRequest.roleId"),
        "title": Api("iam.v1", "CreateRoleRequest.role.title"),
    },
    "gcp:secretmanager/secret:Secret": {
        "labels.*": _labels("secretmanager.v1", "Secret"),
        "project": PATH_PARAMETER,
        "replication.userManaged.replicas[].location": Api(
            "secretmanager.v1", "Secret.replication.userManaged.replicas[].location"
        ),
        "secretId": Free("a query parameter of secrets.create (secretId), not a body field"),
    },
    "gcp:secretmanager/secretIamMember:SecretIamMember": {
        "member": Api("secretmanager.v1", "Policy.bindings[].members[]", ref=True),
        "project": PATH_PARAMETER,
        "role": Api("secretmanager.v1", "Policy.bindings[].role"),
        "secretId": Free("the secret whose IAM policy the provider patches: a path parameter"),
    },
    "gcp:serviceaccount/iAMMember:IAMMember": {
        "member": Api("iam.v1", "Policy.bindings[].members[]", ref=True),
        "role": Api("iam.v1", "Policy.bindings[].role"),
        "serviceAccountId": Free(
            "the service account whose IAM policy the provider patches: a path parameter"
        ),
    },
    "gcp:serviceaccount/account:Account": {
        "accountId": Api("iam.v1", "CreateServiceAccountRequest.accountId"),
        "description": Api("iam.v1", "ServiceAccount.description"),
        "displayName": Api("iam.v1", "ServiceAccount.displayName"),
        "project": PATH_PARAMETER,
    },
    "gcp:servicenetworking/connection:Connection": {
        "network": Api("servicenetworking.v1", "Connection.network", ref=True),
        "reservedPeeringRanges[]": Api(
            "servicenetworking.v1", "Connection.reservedPeeringRanges[]", ref=True
        ),
        "service": Free("the producer service: a path parameter (services/{service}/connections)"),
    },
    "gcp:billing/budget:Budget": {
        "allUpdatesRule.monitoringNotificationChannels[]": Api(
            "billingbudgets.v1",
            "GoogleCloudBillingBudgetsV1Budget.notificationsRule.monitoringNotificationChannels[]",
            ref=True,
            note="the provider's allUpdatesRule is the API's notificationsRule",
        ),
        "allUpdatesRule.disableDefaultIamRecipients": Api(
            "billingbudgets.v1",
            "GoogleCloudBillingBudgetsV1Budget.notificationsRule.disableDefaultIamRecipients",
        ),
        "amount.specifiedAmount.currencyCode": Api(
            "billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget.amount.specifiedAmount.currencyCode"
        ),
        "amount.specifiedAmount.units": Api(
            "billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget.amount.specifiedAmount.units"
        ),
        "billingAccount": PATH_PARAMETER,
        "budgetFilter.calendarPeriod": Api(
            "billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget.budgetFilter.calendarPeriod"
        ),
        "budgetFilter.labels.*": Api(
            "billingbudgets.v1",
            "GoogleCloudBillingBudgetsV1Budget.budgetFilter.labels{}[]",
            key="GoogleCloudBillingBudgetsV1Budget.budgetFilter.labels{key}",
            note="the provider's one value per label is the API's list of values",
        ),
        "budgetFilter.projects[]": Api(
            "billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget.budgetFilter.projects[]", ref=True
        ),
        "displayName": Api("billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget.displayName"),
        "thresholdRules[].spendBasis": Api(
            "billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget.thresholdRules[].spendBasis"
        ),
        "thresholdRules[].thresholdPercent": Api(
            "billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget.thresholdRules[].thresholdPercent"
        ),
    },
    "gcp:monitoring/notificationChannel:NotificationChannel": {
        "displayName": Api("monitoring.v3", "NotificationChannel.displayName"),
        "labels.*": Api(
            "monitoring.v3", "NotificationChannel.labels{}", key="NotificationChannel.labels{key}"
        ),
        "project": PATH_PARAMETER,
        "type": Api("monitoring.v3", "NotificationChannel.type"),
        "userLabels.*": _labels("monitoring.v3", "NotificationChannel", "userLabels"),
    },
    "gcp:sql/database:Database": {
        "deletionPolicy": Free("the provider's: ABANDON leaves the database when the resource goes"),
        "instance": PATH_PARAMETER,
        "name": Api("sqladmin.v1", "Database.name"),
        "project": PATH_PARAMETER,
    },
    "gcp:sql/databaseInstance:DatabaseInstance": {
        "databaseVersion": Api("sqladmin.v1", "DatabaseInstance.databaseVersion"),
        "deletionProtection": Free(
            "the provider's own guard against `pulumi destroy`: never sent to the API"
        ),
        "encryptionKeyName": Api(
            "sqladmin.v1",
            "DatabaseInstance.diskEncryptionConfiguration.kmsKeyName",
            note="the provider's encryption_key_name",
        ),
        "name": Api("sqladmin.v1", "DatabaseInstance.name"),
        "project": PATH_PARAMETER,
        "region": Api("sqladmin.v1", "DatabaseInstance.region"),
        "settings.availabilityType": Api("sqladmin.v1", f"{_SQL}.availabilityType"),
        "settings.backupConfiguration.backupRetentionSettings.retainedBackups": Api(
            "sqladmin.v1", f"{_SQL}.backupConfiguration.backupRetentionSettings.retainedBackups"
        ),
        "settings.backupConfiguration.backupRetentionSettings.retentionUnit": Api(
            "sqladmin.v1", f"{_SQL}.backupConfiguration.backupRetentionSettings.retentionUnit"
        ),
        "settings.backupConfiguration.binaryLogEnabled": Api(
            "sqladmin.v1", f"{_SQL}.backupConfiguration.binaryLogEnabled"
        ),
        "settings.backupConfiguration.enabled": Api("sqladmin.v1", f"{_SQL}.backupConfiguration.enabled"),
        "settings.backupConfiguration.transactionLogRetentionDays": Api(
            "sqladmin.v1", f"{_SQL}.backupConfiguration.transactionLogRetentionDays"
        ),
        "settings.databaseFlags[].name": Api("sqladmin.v1", f"{_SQL}.databaseFlags[].name"),
        "settings.databaseFlags[].value": Api("sqladmin.v1", f"{_SQL}.databaseFlags[].value"),
        "settings.deletionProtectionEnabled": Api("sqladmin.v1", f"{_SQL}.deletionProtectionEnabled"),
        "settings.diskAutoresize": Api(
            "sqladmin.v1", f"{_SQL}.storageAutoResize", note="the provider's disk_autoresize"
        ),
        "settings.diskAutoresizeLimit": Api(
            "sqladmin.v1", f"{_SQL}.storageAutoResizeLimit", note="the provider's disk_autoresize_limit"
        ),
        "settings.diskSize": Api("sqladmin.v1", f"{_SQL}.dataDiskSizeGb", note="the provider's disk_size"),
        "settings.diskType": Api("sqladmin.v1", f"{_SQL}.dataDiskType", note="the provider's disk_type"),
        "settings.edition": Api("sqladmin.v1", f"{_SQL}.edition"),
        "settings.finalBackupConfig.enabled": Api("sqladmin.v1", f"{_SQL}.finalBackupConfig.enabled"),
        "settings.finalBackupConfig.retentionDays": Api(
            "sqladmin.v1", f"{_SQL}.finalBackupConfig.retentionDays"
        ),
        "settings.ipConfiguration.allocatedIpRange": Api(
            "sqladmin.v1", f"{_SQL}.ipConfiguration.allocatedIpRange", ref=True
        ),
        "settings.ipConfiguration.ipv4Enabled": Api("sqladmin.v1", f"{_SQL}.ipConfiguration.ipv4Enabled"),
        "settings.ipConfiguration.privateNetwork": Api(
            "sqladmin.v1", f"{_SQL}.ipConfiguration.privateNetwork", ref=True
        ),
        "settings.ipConfiguration.serverCaMode": Api("sqladmin.v1", f"{_SQL}.ipConfiguration.serverCaMode"),
        "settings.ipConfiguration.sslMode": Api("sqladmin.v1", f"{_SQL}.ipConfiguration.sslMode"),
        "settings.locationPreference.zone": Api("sqladmin.v1", f"{_SQL}.locationPreference.zone"),
        "settings.tier": Api("sqladmin.v1", f"{_SQL}.tier"),
        "settings.userLabels.*": _labels("sqladmin.v1", _SQL, "userLabels"),
    },
}
